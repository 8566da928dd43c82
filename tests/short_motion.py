"""The shipped wave cut to its first seconds, for the tests that run whole pipelines as plumbing.

Those tests check what a run leaves behind (every stage, resume, artefacts, exit codes), not how
well the robot moves; each second of motion costs them seconds of evaluation, stress episodes and
video (the wave's 5.6 s made the interrupted-and-resumed pipeline test the suite's longest, 128 s
on a slow 2-core machine). What a full-length motion does is measured by the benchmarks
(tools/bench_motions.py) and by the README's pipeline command, not here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

SHORT_FRAMES = 100
"""Frames kept (2 s at 50 fps): the arm rises and begins its first wave (motions/wave.yaml), and a
stress episode of 2 s is long enough for a push at a random mid-episode time."""

WAVE = Path(__file__).resolve().parents[1] / "motions" / "wave.npz"


def short_wave(folder: str | Path, frames: int = SHORT_FRAMES) -> Path:
    """``folder/wave.npz``: the first ``frames`` frames of motions/wave.npz (written when absent),
    a valid motion under the same name, so a run made from it looks like one made from the wave."""
    from primebot.pipeline.motion.format import ARRAY_KEYS, load_motion, save_motion

    path = Path(folder) / "wave.npz"
    if not path.is_file():
        motion = load_motion(WAVE)
        cut = {key: getattr(motion, key)[:frames] for key in ARRAY_KEYS}
        path.parent.mkdir(parents=True, exist_ok=True)
        save_motion(dataclasses.replace(motion, **cut), path)
    return path
