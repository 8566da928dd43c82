"""A full disk during ``pipeline run`` (checkpoints and train.csv, the ONNX bundle, a video,
pipeline.json and pipeline.log with them), and a read-only run directory: typed errors, data intact,
a resume that finishes.

The file system is a real tmpfs of 96 MiB mounted in a private mount namespace (``unshare -m``, root
or an unprivileged user namespace), so nothing outside this test sees it and it vanishes with the
process; disk_chain.py fills it to the last byte in the middle of a stage. Without unshare or mount
the cases are reported as not run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import EXIT, VERDICT_EXITS, environ
from subprocess_env import pythonpath_with

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def chain(base_pipeline, tmp_path_factory) -> dict:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a private tmpfs")
    work = tmp_path_factory.mktemp("disk")
    mount, out = work / "tmpfs", work / "cases.json"
    mount.mkdir()
    flags = ["-m", "--propagation", "private"] + ([] if _root() else ["-r"])
    script = (f'mount -t tmpfs -o size=96m tmpfs "{mount}" && '
              f'exec "{sys.executable}" "{HERE / "disk_chain.py"}" "{mount}" "{base_pipeline}" '
              f'"{out}"')
    probe = subprocess.run(["unshare", *flags, "sh", "-c",
                            f'mount -t tmpfs -o size=1m tmpfs "{mount}"'],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs here: {probe.stderr.strip()[:120]}")
    env = environ()
    env["PYTHONPATH"] = pythonpath_with(HERE, environ=env)
    proc = subprocess.run(["unshare", *flags, "sh", "-c", script], capture_output=True, text=True,
                          env=env,
                          timeout=1800)
    assert proc.returncode == 0 and out.is_file(), (proc.stdout + proc.stderr)[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def _root() -> bool:
    import os

    return os.geteuid() == 0


def _full(case: dict) -> None:
    assert case["reached"], "the stage was never caught running: " + case["output"]
    assert case["filled_bytes"] > 0
    assert case["rc"] == EXIT["disk"], f"exit {case['rc']}: " + case["output"]
    assert "no space left on the device" in case["output"] and not case["traceback"], case["output"]
    assert case["problems"] == [], case["problems"]


def test_disk_full_during_training(chain):
    """disk full during pipeline run: in train (checkpoints, train.csv, pipeline.json,
    pipeline.log)"""
    case = chain["train"]
    _full(case)
    resume = case["resume"]
    assert resume["rc"] in VERDICT_EXITS and resume["train"] == "done", resume["output"]
    assert resume["problems"] == []


def test_disk_full_while_the_bundle_is_built(chain):
    """disk full during pipeline run: in export (the ONNX bundle is built aside; the old one
    stays)"""
    case = chain["export"]
    _full(case)
    assert case["bundle_kept"]
    resume = case["resume"]
    assert resume["rc"] in VERDICT_EXITS and resume["status"] == "done", resume["output"]
    assert resume["problems"] == []


def test_disk_full_while_a_video_is_written(chain):
    """disk full during sim2sim --video (the encoder dies; no partial video, sim2sim.json kept)"""
    case = chain["video"]
    _full(case)
    assert case["sim2sim_json_kept"] and not [n for n in case["partial_video"]
                                              if n.endswith(".tmp")]
    resume = case["resume"]
    # 8: checks failed, not disk
    assert resume["rc"] in (0, EXIT["export"]) and resume["video"], resume["output"]
    assert resume["problems"] == []


def test_a_read_only_run_directory_and_log_directory(chain):
    """a read-only log directory: --resume and a new run stop with a typed error"""
    case = chain["read_only"]
    for what in ("resume", "new"):
        assert case[what]["rc"] == EXIT["config"] and not case[what]["traceback"], case[what][
            "output"
        ]
    assert "cannot write in" in case["resume"]["output"]
    assert (
        "cannot create a run directory" in case["new"]["output"]
        and "--log-dir" in case["new"]["output"]
    )
    assert case["problems"] == []
