"""The full-disk and read-only cases, run inside a private mount namespace on a small tmpfs
(test_disk_full.py).

    unshare -m --propagation private sh -c \
        'mount -t tmpfs -o size=96m tmpfs MOUNT && python disk_chain.py ...'

Copies a finished tiny pipeline run onto the tmpfs, then, each time in the middle of a stage, fills
the file system to the last byte and checks what the process and the run directory make of it; frees
the space and resumes; finally remounts the tmpfs read-only. Writes what it saw, case by case, as
JSON to OUT (outside the tmpfs). Nothing here is mocked: the writes really fail with ENOSPC and
EROFS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness import WAVE, copy_run, intact, pipeline_doc, primebot, stage_status, start, wait_for

SKIP = ("--skip", "smoke", "--skip", "stress")


def fill(mount: Path) -> int:
    """Write zeros to MOUNT/filler until the file system is full; returns the bytes written."""
    written = 0
    with open(mount / "filler", "wb", buffering=0) as fh:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            chunk = b"\0" * size
            try:
                while True:
                    written += fh.write(chunk)
            except OSError:
                continue
    return written


def free(mount: Path) -> None:
    (mount / "filler").unlink(missing_ok=True)


def rows(run_dir: Path) -> int:
    return (run_dir / "train.csv").read_text(encoding="utf-8").count("\n") - 1


def full_during(mount: Path, run_dir: Path, when, *args: object) -> dict:
    """Start ``primebot ARGS``, fill the disk once ``when()`` holds, and report how it ended."""
    proc = start(*args)
    reached = wait_for(when, proc, step=0.02)
    filled = fill(mount) if reached else 0
    try:
        output = proc.communicate(timeout=600)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        output = proc.communicate()[0] + "\n[hung: killed after 600 s]"
    seen = {"reached": reached, "filled_bytes": filled, "rc": proc.returncode,
            "output": output[-3000:],
            "traceback": "Traceback (most recent call last)" in output, "problems": intact(run_dir)}
    free(mount)
    return seen


def main(mount: Path, base_run: Path, out: Path) -> None:
    run_dir = copy_run(base_run, mount / "run")
    cases: dict[str, dict] = {}

    before = rows(run_dir)
    cases["train"] = full_during(
        mount, run_dir,
        lambda: stage_status(run_dir, "train") == "running" and rows(run_dir) > before,
        "pipeline", "run", "--resume", run_dir, "--iterations", "40", *SKIP)
    resumed = primebot("pipeline", "run", "--resume", run_dir, "--only", "train")
    cases["train"]["resume"] = {"rc": resumed.rc, "output": resumed.text[-2000:],
                                "problems": intact(run_dir),
                                "train": stage_status(run_dir, "train")}

    bundle_before = (run_dir / "export" / "policy.onnx").read_bytes()
    cases["export"] = full_during(
        mount, run_dir,
        lambda: stage_status(run_dir, "export") == "running" and any(run_dir.glob(".export.*.tmp")),
        "pipeline", "run", "--resume", run_dir, *SKIP)
    cases["export"]["bundle_kept"] = (
        run_dir / "export" / "policy.onnx"
    ).read_bytes() == bundle_before
    resumed = primebot("pipeline", "run", "--resume", run_dir, *SKIP)
    cases["export"]["resume"] = {"rc": resumed.rc, "output": resumed.text[-2000:],
                                 "problems": intact(run_dir),
                                 "status": pipeline_doc(run_dir)["status"]}

    report_before = (run_dir / "sim2sim.json").read_bytes()
    cases["video"] = full_during(mount, run_dir, lambda: (run_dir / ".primebot.lock").is_file(),
                                 "sim2sim", run_dir, "--video")
    cases["video"]["sim2sim_json_kept"] = (run_dir / "sim2sim.json").read_bytes() == report_before
    cases["video"]["partial_video"] = [p.name for p in (run_dir / "videos").glob("*")] \
        if (run_dir / "videos").is_dir() else []
    resumed = primebot("sim2sim", run_dir, "--video")
    cases["video"]["resume"] = {"rc": resumed.rc, "output": resumed.text[-2000:],
                                "problems": intact(run_dir),
                                "video": (run_dir / "videos" / "sim2sim.mp4").is_file()}

    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    resume = primebot("pipeline", "run", "--resume", run_dir, *SKIP)
    new = primebot("pipeline", "run", WAVE, "--no-video", "--log-dir", mount / "logs")
    cases["read_only"] = {"resume": {"rc": resume.rc, "output": resume.text[-2000:],
                                     "traceback": resume.traceback},
                          "new": {"rc": new.rc, "output": new.text[-2000:],
                                  "traceback": new.traceback},
                          "problems": intact(run_dir)}
    out.write_text(json.dumps(cases, indent=2), encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("MUJOCO_GL", "egl")
    started = time.monotonic()
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    print(f"disk chain done in {time.monotonic() - started:.0f} s")
