"""Untrusted and damaged files through the command line: a typed error naming the file and the fix,
nothing run that should not be, bounded memory.

Motions (NaN, Inf, 30 fps, a zip bomb, a single .npy), checkpoints (garbage, another run's, a newer
format), ONNX files with edited metadata, deploy.yaml entries leaving the bundle, motion files
carrying settings a motion may not set or named like a run's files.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import EXIT, REPO, TINY, WAVE, copy_run, primebot

MAX_EXTRA_RSS_MB = 300
"""Memory a refused untrusted file may cost beyond what the same command costs on a good file."""


def motion_with(folder: Path, name: str, change: Callable) -> Path:
    from primebot.pipeline.motion.format import load_motion, save_motion

    path = folder / f"{name}.npz"
    save_motion(change(load_motion(WAVE)), path)
    return path


def _set(key: str, index: tuple, value: float) -> Callable:
    def change(motion):
        getattr(motion, key)[index] = value
        return motion

    return change


def _fps30(motion):
    return dataclasses.replace(motion, fps=30.0)


def _long_quats(motion):
    motion.body_quat_w[10:20, 1] *= 1.3
    return motion


# -- train validates the motion --------------------------------------------------------------------
@pytest.mark.parametrize("name, change, words", [
    ("inf", _set("body_pos_w", (40, 3, 2), np.inf), ("body_pos_w",)),
    ("fps30", _fps30, ("fps is 30",)),
    ("quats", _long_quats, ("quaternion",)),
    ("nan", _set("joint_pos", (50, 4), np.nan), ("joint_pos",)),
], ids=["inf", "fps30", "quaternions", "nan"])
def test_train_refuses_a_bad_motion_before_making_a_run(tmp_path, name, change, words):
    """train refuses a bad motion up front, naming it"""
    path = motion_with(tmp_path, name, change)
    logs = tmp_path / "logs"
    primebot("train", path, "--iterations", "1", "--log-dir", logs, *TINY).assert_typed(
        EXIT["motion"], path.name, *words
    )
    assert not logs.exists()


# -- one checkpoint-loading rule -------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"", b"hello, not a checkpoint\n"], ids=["empty", "text"])
def test_a_damaged_newest_checkpoint_is_stepped_over(tiny_run, tmp_path, content):
    """train --resume / eval past a damaged newest model_<it>.pt fall back to the previous one"""
    run = copy_run(tiny_run, tmp_path / "run")
    (run / "model_99.pt").write_bytes(content)
    primebot("eval", run, "--episodes", "1").assert_typed(0, "model_99.pt", "falling back",
                                                          "iteration 1")
    primebot("train", "--resume", run, "--iterations", "2", "--no-progress").assert_typed(
        0, "model_99.pt"
    )
    assert (run / "model_2.pt").is_file() and (run / "model_99.pt.corrupt").read_bytes() == content


def test_a_checkpoint_from_a_newer_primebot_stops_and_is_never_overwritten(tiny_run, tmp_path):
    """a model_<it>.pt from a newer format stops resume and eval with that reason (no fallback, no
    overwrite)"""
    import torch

    from primebot.pipeline.train.checkpoints import content_digest

    run = copy_run(tiny_run, tmp_path / "run")
    data = torch.load(run / "model_1.pt", weights_only=True)
    data["version"] = 2
    data["digest"] = content_digest(data)
    torch.save(data, run / "model_3.pt")
    before = (run / "model_3.pt").read_bytes()
    primebot("train", "--resume", run, "--iterations", "4", "--no-progress").assert_typed(
        EXIT["checkpoint"], "model_3.pt was written by a newer primebot", "upgrade primebot")
    primebot("eval", run, "--episodes", "1").assert_typed(EXIT["checkpoint"], "newer primebot")
    assert (run / "model_3.pt").read_bytes() == before and not (run / "model_4.pt").exists()


def test_a_checkpoint_copied_in_from_another_run_is_refused(tiny_run, tmp_path):
    """eval and export refuse another run's checkpoint copied in"""
    ours, other = copy_run(tiny_run, tmp_path / "ours"), copy_run(tiny_run, tmp_path / "other")
    args = yaml.safe_load((other / "args.yaml").read_text())
    args["run"]["id"] = "f00d" * 8
    (other / "args.yaml").write_text(yaml.safe_dump(args))
    # its own model_1.pt replaced by the other run's
    shutil.copy(ours / "model_1.pt", other / "model_1.pt")
    for command in ("eval", "export"):
        primebot(command, other).assert_typed(EXIT["checkpoint"], "belongs to another run",
                                              "move it out")
    assert not (other / "eval.json").exists() and not (other / "export").exists()


def test_eval_of_etc_passwd_as_a_checkpoint_is_a_checkpoint_error(tiny_run, tmp_path):
    """eval --checkpoint /etc/passwd is a checkpoint error"""
    primebot("eval", copy_run(tiny_run, tmp_path / "run"), "--checkpoint",
             "/etc/passwd").assert_typed(EXIT["checkpoint"], "/etc/passwd")


# -- resource bounds -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory) -> Path:
    """An .npz of ~1 MB that declares a 1 GiB joint_pos (deflated zeros, written in chunks)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    frames, width = 1 << 22, 64
    with (
        np.load(WAVE) as wave,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
    ):
        for key in wave.files:
            if key == "joint_pos":
                continue
            with archive.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, wave[key], allow_pickle=False)
        with archive.open("joint_pos.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh,
                                                 {"descr": "<f4", "fortran_order": False,
                                                  "shape": (frames, width)})
            chunk = bytes(1 << 24)
            for _ in range(frames * width * 4 // len(chunk)):
                fh.write(chunk)
    return path


COMMANDS = {
    "validate": ("motion", "validate", "{motion}"),
    "train": ("train", "{motion}", "--iterations", "1", "--log-dir", "{tmp}/logs", *TINY),
    "pipeline": ("pipeline", "run", "{motion}", "--preset", "quick", "--log-dir", "{tmp}/logs"),
    "resample": ("motion", "resample", "{motion}", "--fps", "{fps}", "-o", "{tmp}/o.npz"),
}
"""The commands that read a motion file, with placeholders for the file, a frame rate and a
folder."""


def _run(name: str, measure: bool = False, **values: object):
    return primebot(*(part.format(**{"fps": "25", **values}) for part in COMMANDS[name]),
                    measure=measure)


@pytest.mark.parametrize("name", ["validate", "train", "resample"])
def test_an_oversized_motion_is_refused_with_bounded_memory(zip_bomb, tmp_path, name):
    """a zip bomb / a resample to 1e7 fps is refused costing little more memory than a good file"""
    bad = {"motion": WAVE, "fps": "1e7"} if name == "resample" else {"motion": zip_bomb}
    refused = _run(name, measure=True, tmp=tmp_path, **bad)
    # the same command, a good file
    baseline = _run(name, measure=True, motion=WAVE, tmp=tmp_path / "good")
    refused.assert_typed(EXIT["motion"], "limit")
    assert refused.rss_mb - baseline.rss_mb < MAX_EXTRA_RSS_MB, (refused.rss_mb, baseline.rss_mb)


# -- typed errors, not tracebacks ------------------------------------------------------------------
@pytest.fixture(scope="module")
def npy_as_npz(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("npy") / "single.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.zeros((281, 22), np.float32))
    return path


@pytest.mark.parametrize("name", ["validate", "train", "pipeline"])
def test_a_single_npy_renamed_npz_is_named(npy_as_npz, tmp_path, name):
    """a single .npy renamed .npz is named as such"""
    _run(name, motion=npy_as_npz, tmp=tmp_path).assert_typed(EXIT["motion"], "single array")


@pytest.mark.parametrize("args, words", [
    (("motion", "resample", "{wave}", "--fps", "nan", "-o", "{tmp}/o.npz"), ("frame rate",)),
    (("motion", "resample", "{wave}", "--fps", "inf", "-o", "{tmp}/o.npz"), ("frame rate",)),
    (("motion", "convert", "{tmp}/noise.csv", "--input-fps", "30"), ("noise.csv",)),
], ids=["resample-nan", "resample-inf", "convert-binary"])
def test_motion_commands_give_typed_errors(tmp_path, args, words):
    """motion resample/convert of nonsense give typed errors"""
    (tmp_path / "noise.csv").write_bytes(
        np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    )
    primebot(*(part.format(wave=WAVE, tmp=tmp_path) for part in args)).assert_typed(
        EXIT["motion"], *words
    )


def test_replay_of_a_nan_motion_is_refused_and_writes_no_video(tmp_path):
    """motion replay of a NaN motion is refused, no video"""
    nan = motion_with(tmp_path, "nan", _set("joint_pos", (50, 4), np.nan))
    primebot("motion", "replay", nan, "-o", tmp_path / "nan.mp4").assert_typed(EXIT["motion"],
                                                                               "joint_pos",
                                                                               "frame 50")
    assert not (tmp_path / "nan.mp4").exists()


@pytest.mark.parametrize("args, words", [
    (("--iterations", "0"), ("iterations",)),
    (("--iterations", "1", "--set", "ppo.gamma=2"), ("ppo.gamma",)),
], ids=["iterations-0", "gamma-2"])
def test_bad_training_settings_are_refused_before_a_run_is_made(tmp_path, args, words):
    """train --iterations 0 / --set ppo.gamma=2 are refused, no run directory"""
    logs = tmp_path / "logs"
    primebot("train", WAVE, "--log-dir", logs, *TINY, *args).assert_typed(EXIT["config"], *words)
    assert not logs.exists()


# -- a motion file is untrusted --------------------------------------------------------------------
@pytest.mark.parametrize("override",
                         ["num_envs=4096", "iterations=1000000", "task=walk", "device=cuda"])
def test_a_motion_file_may_not_size_the_run_or_switch_its_task(tmp_path, override):
    """a motion whose training_overrides set the run's size, task or device is refused"""
    path = motion_with(tmp_path, "greedy",
                       lambda m: dataclasses.replace(m, training_overrides=(override,)))
    logs = tmp_path / "logs"
    primebot("train", path, "--iterations", "1", "--log-dir", logs, *TINY).assert_typed(
        EXIT["config"], override.partition("=")[0], "may not set")
    assert not logs.exists()


def test_the_getup_motion_still_trains_with_the_settings_it_carries(tmp_path):
    """motions/getup.npz (its training: list) still trains"""
    logs = tmp_path / "logs"
    primebot(
        "train", REPO / "motions" / "getup.npz", "--iterations", "1", "--log-dir", logs, *TINY
    ).assert_typed(0)
    args = yaml.safe_load(next(logs.rglob("args.yaml")).read_text())
    assert (
        args["config"]["policy"]["init_action_gain"] == pytest.approx(0.01)
        and args["config"]["num_envs"] == 8
    )


@pytest.mark.parametrize("name", ["pipeline.json", "args.yaml", "model_9.pt"])
def test_a_motion_named_like_a_run_file_does_not_collide(tmp_path, name):
    """a motion file named pipeline.json / args.yaml / model_9.pt never overwrites the run's own"""
    motion = tmp_path / name
    shutil.copy(WAVE, motion)
    logs = tmp_path / "logs"
    primebot(
        "pipeline", "run", motion, "--only", "validate", "--no-video", "--log-dir", logs
    ).assert_typed(0)
    run = next(logs.rglob("pipeline.json")).parent
    assert (run / f"{name}.npz").read_bytes() == WAVE.read_bytes()
    assert yaml.safe_load((run / "pipeline.json").read_text())["stages"][0]["status"] == "done"


def test_validate_after_the_source_motion_changed_is_a_typed_error(base_pipeline, tmp_path):
    """--from validate after the source motion changed: a typed error, the run's copy kept"""
    from harness import pipeline_doc

    run = copy_run(base_pipeline, tmp_path / "run")
    source = Path(pipeline_doc(run)["settings"]["motion"])
    moved = tmp_path / source.name
    shutil.copy(REPO / "motions" / "squat.npz", moved)  # the source, regenerated as another motion
    doc = pipeline_doc(run)
    doc["settings"]["motion"] = str(moved)
    (run / "pipeline.json").write_text(json.dumps(doc))
    copy_before = (run / source.name).read_bytes()
    primebot("pipeline", "run", "--resume", run, "--from", "validate").assert_typed(
        EXIT["motion"], "changed since this run trained on it", "start a new run")
    assert (run / source.name).read_bytes() == copy_before


# -- the exported ONNX and its bundle are untrusted ------------------------------------------------
def _metadata(**changes: Callable[[str], str]) -> Callable[[Path], None]:
    """An edit of policy.onnx: each metadata key in ``changes`` gets ``change(old value)``."""
    def edit(path: Path) -> None:
        from onnx_metadata import with_metadata

        from primebot.pipeline.export.graph import read_metadata

        old = read_metadata(path)
        with_metadata(path, path, **{key: change(str(old[key])) for key, change in changes.items()})

    return edit


def _rename(old: str, new: str) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        from onnx_metadata import with_renamed

        with_renamed(path, path, old, new)

    return edit


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _floats(factor: float = 1.0, offset: float = 0.0) -> Callable[[str], str]:
    return lambda text: ",".join(repr(float(v) * factor + offset) for v in text.split(","))


@pytest.mark.parametrize("edit, words", [
    (_metadata(control_dt=lambda _: "fast"), ("control_dt", "not a number")),
    (_rename("time_step", "step"), ("no input 'time_step'",)),
    (_rename("body_quat_w", "body_quat"), ("no output 'body_quat_w'",)),
    (_truncate, ("not a loadable ONNX",)),
    (_metadata(action_scale=_floats(100)), ("metadata_matches_robot",)),
    (_metadata(default_joint_pos=_floats(offset=0.3)), ("metadata_matches_robot",)),
    (_metadata(robot=lambda _: "biped4"), ("metadata_matches_robot",)),
    (_metadata(num_observations=lambda v: str(int(v) - 1)), ("num_observations",)),
    (_metadata(control_dt=lambda _: "0.03"), ("control_dt",)),
    (_metadata(fps=lambda _: "25.0", control_dt=lambda _: "0.04"),
     ("reference_rate_matches_control_dt",)),
    (_metadata(run_id=lambda _: "f00d" * 8), ("exported from another run",)),
],
ids=["meta-not-a-number", "no-input", "no-output", "truncated", "action-scale-x100",
     "default-pose+0.3",
        "other-robot", "num-observations", "control-dt", "fps", "other-run"])
def test_sim2sim_refuses_an_edited_onnx(base_pipeline, tmp_path, edit, words):
    """sim2sim of a hand-edited or damaged policy.onnx is refused, naming what is wrong"""
    run = copy_run(base_pipeline, tmp_path / "run")
    edit(run / "export" / "policy.onnx")
    primebot("sim2sim", run).assert_typed(EXIT["export"], *words)


@pytest.mark.parametrize("entry, words", [
    ({"file": "/etc/passwd", "sha256": "0" * 64}, "not a path inside the bundle"),
    ({"file": "../../pipeline.json", "sha256": "0" * 64}, "not a path inside the bundle"),
    ({"file": "policy.onnx"}, "has no SHA-256"),
], ids=["absolute", "dotdot", "no-sha256"])
def test_the_bundle_runner_refuses_a_deploy_yaml_pointing_outside(base_pipeline, tmp_path, entry,
                                                                  words):
    """python -m primebot.pipeline.bundle refuses deploy.yaml entries outside the bundle or without
    sha256"""
    import subprocess
    import sys

    from harness import environ

    bundle = copy_run(base_pipeline, tmp_path / "run") / "export"
    document = yaml.safe_load((bundle / "deploy.yaml").read_text())
    document["files"]["policy"] = entry
    (bundle / "deploy.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    proc = subprocess.run([sys.executable, "-m", "primebot.pipeline.bundle", str(bundle)],
                          capture_output=True,
                          text=True, env=environ(), timeout=300)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, (
        proc.stderr[-2000:]
    )
