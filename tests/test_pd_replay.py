"""tools/pd_replay.py: the reference under PD, no policy, tells a motion the body cannot start from one that
needs feedback to balance."""

from __future__ import annotations

import subprocess
import sys

import numpy as np


def _replay(repo_root, motion: str, tmp_path) -> dict:
    import json

    out = tmp_path / f"{motion}.json"
    proc = subprocess.run([sys.executable, str(repo_root / "tools" / "pd_replay.py"),
                           str(repo_root / "motions" / f"{motion}.npz"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=repo_root)
    assert proc.returncode == 0, proc.stderr
    assert "PD on the reference joints" in proc.stdout and "statue" in proc.stdout
    return json.loads(out.read_text())


def test_the_getup_never_starts_while_the_squat_follows_until_it_loses_balance(repo_root, tmp_path):
    getup = _replay(repo_root, "getup", tmp_path)
    first = slice(0, round(3.0 / getup["step_dt"]))
    # q1's sit-up lifts the legs, not the torso: the root stays on the floor as the reference rises
    assert max(getup["reference_root_height_m"][first]) > 0.15
    assert max(getup["root_height_m"][first]) < 0.1
    squat = _replay(repo_root, "squat", tmp_path)
    second = slice(0, round(1.0 / squat["step_dt"]))
    # the squat's first second under open-loop PD: the body does what the reference does
    assert np.max(np.abs(np.subtract(squat["root_height_m"][second], squat["reference_root_height_m"][second]))) < 0.02


def test_a_motion_longer_than_the_task_time_out_is_replayed_to_its_end(repo_root, tmp_path):
    turn = _replay(repo_root, "turn", tmp_path)  # 11.8 s; the tracking task's episodes time out at 10 s
    assert len(turn["mpkpe_m"]) * turn["step_dt"] > 11.5
