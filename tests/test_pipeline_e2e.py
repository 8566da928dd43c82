"""The real pipeline: every built-in stage on the shipped wave motion, in a subprocess.

One quick-preset run (shrunk further: a few iterations, few envs, the wave's first two seconds:
tests/short_motion.py) is
interrupted with SIGINT during training, resumed, and must then leave every
artefact of docs/architecture.md §6 behind. Two cheap runs check that an invalid motion
stops at validate and an unavailable device stops at smoke, each with its
exit code and fix.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pipeline_runs import only_run_dir, read_pipeline
from short_motion import short_wave

STAGES = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim", "stress"]


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRIMEBOT_DEVICE", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                        "PRIMEBOT_DISABLE_PLUGINS")}
    env.setdefault("MUJOCO_GL", "egl")
    return env


def _pipeline(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "primebot.pipeline", "pipeline", "run", *args],
                            cwd=cwd,
                            env=_environ(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.mark.slow
def test_quick_pipeline_interrupted_in_training_then_resumed_leaves_every_artefact(
    repo_root, tmp_path
):
    motion = short_wave(tmp_path / "motion")
    logs = tmp_path / "logs"
    proc = _pipeline([str(motion), "--preset", "quick", "--iterations", "6", "--num-envs", "16",
                      "--eval-episodes", "2", "--log-dir", str(logs),
                      # the opt-in curriculum
                      "--set", "task.randomization.curriculum.start=0"], tmp_path)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # wait for the first logged training iteration
        csvs = list(logs.rglob("train.csv"))
        if csvs and len(csvs[0].read_text(encoding="utf-8").splitlines()) >= 2:
            break
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("training never logged an iteration: " + proc.communicate()[0][-3000:])
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 130, output[-3000:]
    run_dir = only_run_dir(logs)
    doc = read_pipeline(run_dir)
    assert doc["status"] == "interrupted"
    statuses = {s["name"]: s["status"] for s in doc["stages"]}
    assert (
        statuses["train"] == "interrupted"
        and statuses["smoke"] == "done"
        and statuses["evaluate"] == "pending"
    )
    assert statuses["replay"] in ("done", "skipped")  # skipped only without OpenGL
    assert "[DONE] smoke on cpu" in output
    # every line of advice is the pipeline's own command, the trainer's too
    assert "primebot train --resume" not in output and (
        "received: stopped after iteration" in output), output[-3000:]
    assert list(run_dir.glob("model_*.pt")), "SIGINT must leave a checkpoint"

    proc = _pipeline(["--resume", str(run_dir)], tmp_path)
    output, _ = proc.communicate(timeout=300)
    doc = read_pipeline(run_dir)
    assert doc["status"] == "done", output[-3000:]
    # every stage finished: the exit status is the verdict (0 tracked and robust, 12 tracked only,
    # 10 not tracked), and so is the last line
    sim2sim = next(s for s in doc["stages"] if s["name"] == "sim2sim")["summary"]
    stress = next(s for s in doc["stages"] if s["name"] == "stress")["summary"]
    assert isinstance(sim2sim["tracked"], bool) and isinstance(stress["robust"],
                                                               bool), (sim2sim, stress)
    expected = (0 if stress["robust"] else 12) if sim2sim["tracked"] else 10
    assert proc.returncode == expected, output[-3000:]
    last = {0: "[DONE] pipeline: TRACKED and ROBUST", 12: "[DONE] pipeline: TRACKED, NOT ROBUST",
            10: "[DONE] pipeline: NOT TRACKED"}[expected]
    assert last in output
    by_name = {s["name"]: s for s in doc["stages"]}
    assert [s["name"] for s in doc["stages"]] == STAGES
    assert all(by_name[n]["status"] == "done" for n in STAGES if n != "replay")
    assert by_name["smoke"]["attempts"] == 1 and by_name["train"]["attempts"] == 2
    assert "resuming training" in output and "done earlier" in output
    # 6 iterations are far too few for the randomisation curriculum: the train stage says so
    assert by_name["train"]["summary"]["curriculum"] == "incomplete"
    assert any("curriculum" in w for w in by_name["train"]["warnings"])
    assert (
        "randomization/strength"
        in (run_dir / "train.csv").read_text(encoding="utf-8").splitlines()[0]
    )
    for name in ("args.yaml", "train.csv", "model_6.pt", "model_best.pt", "eval.json",
                 "sim2sim.json", "stress.json",
                 "pipeline.json", "report.html", "export/policy.onnx", "export/deploy.yaml",
                 "wave.npz"):
        assert (run_dir / name).is_file(), name
    rows = (run_dir / "train.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 6  # header + one row per iteration, none twice after the resume
    if by_name["replay"]["status"] == "done":
        for video in ("replay", "eval", "sim2sim", "stress_push", "stress_push_replay"):
            assert (run_dir / "videos" / f"{video}.mp4").stat().st_size > 1000, video
    sim2sim = json.loads((run_dir / "sim2sim.json").read_text(encoding="utf-8"))
    assert sim2sim["checks_passed"]
    assert by_name["sim2sim"]["summary"]["episodes"] >= 1
    # the quick preset: 4 starts, so 8 for each cell the verdict reads (nominal and the 12
    # standard levels, the only ones it runs)
    assert stress["episodes"] == 3 * 8 * 13
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert (
        'src="report/reward.png"' in page
        and "policy.onnx" in page
        and 'src="report/stress.png"' in page
    )


def test_an_invalid_motion_stops_at_validate_with_its_report(repo_root, tmp_path):
    with np.load(repo_root / "motions" / "wave.npz") as data:
        arrays = {key: data[key] for key in data.files}
    arrays["joint_pos"] = arrays["joint_pos"].copy()
    arrays["joint_pos"][12, 3] = np.nan
    bad = tmp_path / "bad wave.npz"
    np.savez(bad, **arrays)
    proc = _pipeline([str(bad), "--no-video", "--log-dir", str(tmp_path / "logs")], tmp_path)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 5, output  # MotionError
    run_dir = only_run_dir(tmp_path / "logs")
    doc = read_pipeline(run_dir)
    validate = doc["stages"][0]
    assert validate["status"] == "failed" and validate["error"]["type"] == "MotionError"
    assert (
        "frame 12" in validate["error"]["message"] and "joint_pos" in validate["error"]["message"]
    )
    assert all(s["status"] == "pending" for s in doc["stages"][1:])
    assert json.loads((run_dir / "motion_validation.json").read_text())["valid"] is False
    assert "[FAILED] at validate" in output


def test_an_unavailable_device_stops_at_smoke_with_the_fix(repo_root, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the check needs a device that is absent")
    proc = _pipeline([str(repo_root / "motions" / "wave.npz"), "--device", "cuda", "--no-video",
                      "--log-dir", str(tmp_path / "logs")], tmp_path)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 4, output  # DeviceUnavailableError
    doc = read_pipeline(only_run_dir(tmp_path / "logs"))
    statuses = {s["name"]: s["status"] for s in doc["stages"]}
    assert statuses == {"validate": "done", "replay": "skipped", "smoke": "failed",
                        "train": "pending",
                        "evaluate": "pending", "export": "pending", "sim2sim": "pending",
                        "stress": "pending"}
    error = doc["stages"][2]["error"]
    assert error["type"] == "DeviceUnavailableError" and error["fix"]
    assert "fix:" in output


def test_the_run_directory_keeps_working_after_the_source_motion_changes(repo_root, tmp_path):
    motion = tmp_path / "运动" / "挥手.npz"  # non-ASCII path (seed 003's pitfall)
    motion.parent.mkdir()
    shutil.copy(repo_root / "motions" / "wave.npz", motion)
    proc = _pipeline([str(motion), "--only", "validate", "--log-dir", str(tmp_path / "logs")],
                     tmp_path)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    run_dir = only_run_dir(tmp_path / "logs")
    assert run_dir.parent.name == "挥手"
    assert (run_dir / "挥手.npz").read_bytes() == motion.read_bytes()
    assert read_pipeline(run_dir)["stages"][0]["outputs"]["motion"] == "挥手.npz"
