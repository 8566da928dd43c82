"""``primebot export``: onnxruntime parity on recorded observations, metadata round trip,
refusal."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml
from tracking_run import tracking_host, train_tiny_run

import primebot.pipeline.export.export_run as export_module
from primebot.pipeline.cli import main
from primebot.pipeline.deploy.onnx_policy import parse_metadata
from primebot.pipeline.errors import ExportError
from primebot.pipeline.export.export_run import export_run
from primebot.pipeline.export.graph import (
    OUTPUT_NAMES,
    format_value,
    parity_failures,
    read_metadata,
)
from primebot.pipeline.motion.format import load_motion


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    host = tracking_host()
    run_dir = train_tiny_run(tmp_path_factory.mktemp("logs"), host)
    return host, run_dir, export_run(host.registry, run_dir, latency_repeats=20)


def test_onnxruntime_matches_pytorch_at_batch_1_and_64(exported):
    _, _, result = exported
    assert set(result.parity) == {1, 64}
    for diffs in result.parity.values():
        assert set(diffs) == set(OUTPUT_NAMES)
        assert max(diffs.values()) <= 1e-5
    assert result.latency["median_ms"] > 0


def test_graph_has_dynamic_batch_and_carries_the_motion(exported):
    host, run_dir, result = exported
    model = onnx.load(str(result.onnx_path))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["obs", "time_step"]
    assert [o.name for o in model.graph.output] == list(OUTPUT_NAMES)
    session = ort.InferenceSession(str(result.onnx_path), providers=["CPUExecutionProvider"])
    obs = np.zeros((3, 119), np.float32)
    steps = np.array([[0.0], [10.0], [1e6]], np.float32)  # past the end holds the last frame
    out = dict(zip(OUTPUT_NAMES, session.run(None, {"obs": obs, "time_step": steps}), strict=True))
    motion = load_motion(run_dir / "export" / "wave.npz")
    assert out["actions"].shape == (3, 22)
    np.testing.assert_array_equal(out["joint_pos"],
                                  motion.joint_pos[[0, 10, -1]].astype(np.float32))
    np.testing.assert_array_equal(out["body_quat_w"],
                                  motion.body_quat_w[[0, 10, -1]].astype(np.float32))
    assert out["body_pos_w"].shape == (3, motion.body_pos_w.shape[1], 3)


def test_single_self_contained_file_beside_deploy_yaml_and_motion(exported):
    _, run_dir, result = exported
    names = sorted(p.name for p in (run_dir / "export").iterdir())
    assert names == ["README.md", "deploy.yaml", "export.json", "policy.onnx", "robot", "wave.npz"]
    model = onnx.load(str(result.onnx_path), load_external_data=False)
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def test_metadata_round_trips_at_full_precision(exported):
    host, _, result = exported
    spec = host.registry.get("robots", "q1")
    meta = parse_metadata(read_metadata(result.onnx_path))
    assert meta["joint_names"] == list(spec.joint_names)
    for key, want in (("joint_stiffness", spec.stiffness), ("joint_damping", spec.damping),
                      ("default_joint_pos", spec.default_joint_pos),
                      ("action_scale", spec.action_scale)):
        np.testing.assert_array_equal(meta[key], want)  # bit-exact, not rounded to 3 decimals
    assert meta["observation_names"] == ["command", "motion_anchor_ori_b", "base_ang_vel",
                                         "joint_pos",
                                         "joint_vel", "actions"]
    assert meta["observation_sizes"] == [44, 6, 3, 22, 22, 22]
    assert meta["observation_offsets"] == [0, 44, 50, 53, 75, 97]
    assert meta["anchor_body_name"] == "torso_link" and meta["robot"] == "q1"
    assert meta["fps"] == 50.0 and meta["control_dt"] == 0.02
    assert meta["motion_sha256"] == load_motion(result.motion_path).sha256
    assert meta["primebot_version"]


def test_deploy_yaml_lists_joints_layout_and_motion(exported):
    host, _, result = exported
    spec = host.registry.get("robots", "q1")
    deploy = yaml.safe_load(result.deploy_path.read_text())
    assert [j["name"] for j in deploy["joints"]] == list(spec.joint_names)
    assert [j["kp"] for j in deploy["joints"]] == list(spec.stiffness)
    assert deploy["control"]["period_s"] == 0.02
    assert deploy["observation"]["size"] == 119
    assert deploy["observation"]["layout"][1] == {
        "name": "motion_anchor_ori_b", "offset": 44, "size": 6, "scale": 1.0,
        "clip": [-float("inf"), float("inf")],
        "history_length": 0, "flatten_history_dim": True}
    motion = deploy["files"]["motion"]
    assert motion["file"] == "wave.npz" and motion["steps"] == result.metadata["motion_num_steps"]


def test_format_value_writes_floats_that_parse_back_exactly():
    values = [0.1 + 0.2, 1 / 3, 63.16546816697189, -0.0, 1e-300]
    text = format_value(values)
    assert [float(s) for s in text.split(",")] == values
    assert format_value(["a", "b"]) == "a,b" and format_value(7) == "7"


def test_parity_failures_say_by_how_much():
    lines = parity_failures({1: {"actions": 3e-4, "joint_pos": 0.0}, 64: {"actions": float("nan")}})
    assert lines[0] == "batch 1: actions differs by 0.0003 (> 1e-05)"
    assert "batch 64: actions differs by nan" in lines[1]


def test_a_graph_onnxruntime_does_not_reproduce_is_refused_and_nothing_replaced(
    exported, monkeypatch, capsys
):
    host, run_dir, result = exported
    before = result.onnx_path.read_bytes()
    real = export_module.parity

    def off_by_a_bit(*args, **kwargs):
        report = real(*args, **kwargs)
        report[64]["actions"] += 2e-4  # as if onnxruntime computed something else
        return report

    monkeypatch.setattr(export_module, "parity", off_by_a_bit)
    with pytest.raises(ExportError, match=r"batch 64: actions differs by 0\.0002"):
        export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5)
    assert result.onnx_path.read_bytes() == before
    assert (run_dir / "export" / "policy.rejected.onnx").is_file()
    monkeypatch.setattr("primebot.pipeline.hooks.host._HOST", host)
    assert main(["export", str(run_dir)]) == 8
    assert "differs by" in capsys.readouterr().err


def _snapshot(directory) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_failure_after_the_parity_check_leaves_the_previous_bundle_whole(exported, monkeypatch):
    """Export builds in a staging directory and swaps it in at the end: robot/ and policy.onnx are
    not replaced yet when a later step (latency, the motion copy, deploy.yaml) fails."""
    host, run_dir, _ = exported
    # a complete bundle to keep
    export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5)
    before = _snapshot(run_dir / "export")

    def broken(*args, **kwargs):
        raise OSError("the disk went away")

    monkeypatch.setattr(export_module, "onnx_latency", broken)
    with pytest.raises(OSError, match="the disk went away"):
        export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5)
    assert _snapshot(run_dir / "export") == before
    # no staging left behind
    assert not [p.name for p in run_dir.iterdir() if p.name.startswith(".export")]


def test_a_swap_cut_by_a_crash_is_finished_by_the_next_export(exported):
    from primebot.pipeline.atomic import recover_directory

    _, run_dir, _ = exported
    bundle = run_dir / "export"
    before = _snapshot(bundle)
    # killed between the two renames: the old bundle moved aside, the new one not yet in place
    bundle.rename(run_dir / ".export.old")
    (run_dir / ".export.k2j3.tmp").mkdir()
    recover_directory(bundle)
    assert _snapshot(bundle) == before and not (run_dir / ".export.old").exists()
    assert not (run_dir / ".export.k2j3.tmp").exists()


def test_the_bundle_records_the_checkpoint_and_run_it_holds(exported):
    import json

    from primebot.pipeline.rundir import read_run_id
    from primebot.pipeline.train.checkpoints import load_checkpoint

    _, run_dir, result = exported
    digest = load_checkpoint(run_dir / "model_1.pt")["digest"]
    meta = read_metadata(result.onnx_path)
    assert meta["checkpoint_digest"] == digest and meta["run_id"] == read_run_id(run_dir) != ""
    policy = json.loads((run_dir / "export" / "export.json").read_text())["policy"]
    assert policy == {"checkpoint": "model_1.pt", "iteration": 1, "digest": digest,
                      "run_id": read_run_id(run_dir)}


def test_evaluate_and_export_refuse_a_checkpoint_copied_in_from_another_run(tmp_path):
    """Each run has an identity (args.yaml run.id) that its checkpoints carry: another run's
    model_best.pt copied in is not evaluated or exported as this run's."""
    import shutil

    from primebot.pipeline.errors import CheckpointError
    from primebot.pipeline.evaluate.evaluate_run import evaluate_run

    host = tracking_host()
    ours = train_tiny_run(tmp_path / "a", host)
    other = train_tiny_run(tmp_path / "b", host)
    args = yaml.safe_load((other / "args.yaml").read_text())
    args["run"]["id"] = "f00d" * 8  # a run of its own
    (other / "args.yaml").write_text(yaml.safe_dump(args))
    shutil.copy(ours / "model_1.pt", other / "model_1.pt")
    with pytest.raises(CheckpointError, match="model_1.pt belongs to another run"):
        evaluate_run(host.registry, other, episodes=0)
    with pytest.raises(CheckpointError, match="belongs to another run"):
        export_run(host.registry, other)
    assert not (other / "eval.json").exists() and not (other / "export" / "policy.onnx").exists()
