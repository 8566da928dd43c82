"""tools/bench_motions.py on one motion with a tiny budget (the table and the rows; the wave's first
two seconds, tests/short_motion.py), and its contact sheet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from short_motion import short_wave


@pytest.mark.slow
def test_bench_motions_runs_the_pipeline_and_prints_the_verdict_table(repo_root, tmp_path):
    rows_path = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(repo_root / "tools" / "bench_motions.py"),
         str(short_wave(tmp_path / "motion")), "--preset", "quick",
         "--iterations", "2", "--num-envs", "8", "--eval-episodes", "1", "--log-dir",
         str(tmp_path / "logs"),
         "--json", str(rows_path), "--no-video"],  # videos cost minutes here; the sheet: below
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
    assert row["video"] is None and not (tmp_path / "logs" / "bench_motions.png").exists()


def test_the_contact_sheet_shows_stills_of_each_runs_sim2sim_video(import_tool, tmp_path):
    """write_sheet on a row whose sim2sim video is a real (tiny) mp4, and on one without a video."""
    import imageio.v3 as iio
    import imageio_ffmpeg
    import numpy as np

    write_sheet = import_tool("bench_motions").write_sheet
    video = tmp_path / "sim2sim.mp4"
    writer = imageio_ffmpeg.write_frames(str(video), (64, 48), fps=10, macro_block_size=16)
    writer.send(None)
    for i in range(10):
        writer.send(np.full((48, 64, 3), 25 * i, np.uint8).tobytes())
    writer.close()
    rows = [{"motion": "wave", "exit_code": 12, "tracked": True, "mpkpe_m": 0.008,
             "statue_mpkpe_m": 0.02,
             "success_rate": 1.0, "video": str(video)},
            {"motion": "kick", "exit_code": 2, "video": None}]
    sheet = write_sheet(rows, tmp_path / "sheet.png", title="test")
    image = iio.imread(sheet)
    assert (
        sheet.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.shape[0] > 48 and image.std() > 0
    )
