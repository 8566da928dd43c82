"""tools/bench_motions.py on one motion with a tiny budget: the table, the rows and the contact sheet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_motions_runs_the_pipeline_and_prints_the_verdict_table(repo_root, tmp_path):
    rows_path = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(repo_root / "tools" / "bench_motions.py"), "wave", "--preset", "quick",
         "--iterations", "2", "--num-envs", "8", "--eval-episodes", "1", "--log-dir", str(tmp_path / "logs"),
         "--json", str(rows_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "statue" in proc.stdout and "verdict" in proc.stdout and "motions tracked" in proc.stdout
    (row,) = json.loads(rows_path.read_text(encoding="utf-8"))
    assert row["motion"] == "wave" and row["exit_code"] in (0, 10, 12)
    assert isinstance(row["tracked"], bool) and isinstance(row["robust"], bool)
    assert row["exit_code"] == ((0 if row["robust"] else 12) if row["tracked"] else 10)
    assert "robust" in proc.stdout and row["push"] == "0.44 m/s" and 0 <= row["push_replay"] <= 1
    assert row["statue_mpkpe_m"] > 0 and row["mpkpe_m"] >= 0 and row["train_s"] > 0
    sheet = tmp_path / "logs" / "bench_motions.png"
    assert sheet.is_file() and sheet.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
