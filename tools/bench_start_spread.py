"""How far does the verdict's baseline move with where the judging episodes start?

A tracking policy is judged against a statue on the same start frames (docs/tasks.md, "What
tracked means"): the statue's MPKPE sets the limit the policy's must stay under. Training's
verdict checks play 16 starts and the first frame, evaluation 32 and the first frame, and the
starts are drawn anew each time. This draws such sets many times with each of the tracking task's
sampling modes that spread starts over a motion (``uniform``: each start alone; ``stratified``: one
in each of as many equal parts) and prints the statue's MPKPE over each set: mean, standard
deviation and 5th–95th percentiles, and how many times narrower the stratified spread is. It needs
no policy and no physics: the statue's error is the reference's own motion away from its start
pose, over the tracked bodies of the motion's robot.

    python tools/bench_start_spread.py                      # every motions/*.npz, 16 starts
    python tools/bench_start_spread.py wave squat --starts 32 --robot q1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from primebot.pipeline.evaluate.metrics import statue_mpkpe
from primebot.pipeline.hooks.host import get_host
from primebot.pipeline.motion.format import load_motion
from primebot.plugins.tasks.tracking.sampler import StartFrameSampler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_motions import motion_paths  # noqa: E402

MODES = ("uniform", "stratified")


def statue_spread(path: Path, robot: str, starts: int, draws: int, seed: int) -> dict[str, dict]:
    """Per sampling mode: the statue MPKPE (mm) of ``draws`` sets of ``starts`` starts plus the
    first frame, summarised."""
    motion = load_motion(path)
    spec = get_host().registry.get("robots", robot)
    names = list(motion.body_names or ())
    tracked = [names.index(body) for body in spec.tracked_bodies]
    reference = motion.body_pos_w[:, tracked]
    per_start = np.array([statue_mpkpe(reference, s) for s in range(motion.num_frames)])
    first = per_start[0]
    out = {}
    for mode in MODES:
        sampler = StartFrameSampler(motion.num_frames, 1.0 / motion.fps, {"mode": mode},
                                    np.random.default_rng(seed))
        values = 1000 * np.array([np.mean([first, *per_start[sampler.sample(starts)]])
                                  for _ in range(draws)])
        out[mode] = {"mean_mm": float(values.mean()), "sd_mm": float(values.std()),
                     "p5_mm": float(np.percentile(values, 5)),
                     "p95_mm": float(np.percentile(values, 95))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("motions", nargs="*", help="motion names (motions/<name>.npz) or paths; "
                                                   "default: all")
    parser.add_argument("--robot", default="q1", help="whose tracked bodies (default: q1)")
    parser.add_argument("--starts", type=int, default=16,
                        help="starts per set besides the first frame (16: training's checks, "
                             "32: evaluation)")
    parser.add_argument("--draws", type=int, default=2000, help="sets drawn per mode")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    paths = motion_paths(args.motions)
    print(f"statue MPKPE of {args.starts} starts + the first frame, {args.draws} draws per mode "
          f"(mm: mean, sd, 5th–95th percentile)")
    print(f"{'motion':<10} {'uniform':<30} {'stratified':<30} sd ratio")
    for path in paths:
        spread = statue_spread(path, args.robot, args.starts, args.draws, args.seed)
        cells = [f"{s['mean_mm']:6.1f} ±{s['sd_mm']:4.1f} ({s['p5_mm']:5.1f}–{s['p95_mm']:5.1f})"
                 for s in spread.values()]
        ratio = spread["uniform"]["sd_mm"] / max(spread["stratified"]["sd_mm"], 1e-9)
        print(f"{path.stem:<10} {cells[0]:<30} {cells[1]:<30} {ratio:5.1f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
