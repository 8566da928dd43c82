"""Seconds per video frame of a registered robot, with and without multisample anti-aliasing.

    python tools/bench_render.py                         # q1
    python tools/bench_render.py --robot q1 --robot g1 --frames 50 --rounds 3

Renders what the evaluation, sim2sim and stress videos render (``render.ghost``: the robot with a
translucent copy of it as the reference, 640×480, encoded to H.264) for the robot standing in its
keyframe, once with the model's multisampling (MuJoCo's 4× unless the model says otherwise) and once
without, in interleaved rounds so that a neighbour's load hits both alike. Prints per robot its mesh
triangles, the median ms per frame of each, their ratio, and which one the videos use
(``motion.replay.MULTISAMPLE``). On software (Mesa) OpenGL multisampling is what a frame costs most.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import mujoco

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.replay import MULTISAMPLE
from primebot.pipeline.render.ghost import render_ghost_video
from primebot.pipeline.robot.model import load_robot_model, robot_indices
from primebot.pipeline.robot.spec import get_robot


def _seconds_per_frame(spec, frames: int, multisample: bool, folder: Path) -> float:
    model = load_robot_model(spec)
    indices = robot_indices(model, spec)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, spec.extra.get("keyframe", "stand"))
    data = mujoco.MjData(model)
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    ghost = data.qpos.copy()
    ghost[0] += 0.05  # beside the robot, as a reference a few centimetres off is drawn
    start = time.perf_counter()
    path = render_ghost_video(model, [data.qpos.copy()] * frames, [ghost] * frames,
                              indices.root_body_id, folder / f"{spec.name}_{multisample}.mp4", 50.0,
                              multisample=multisample)
    if path is None:
        raise SystemExit("no OpenGL here: set MUJOCO_GL=egl or osmesa")
    return (time.perf_counter() - start) / frames


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", action="append", help="a registered robot (repeatable; q1)")
    parser.add_argument("--frames", type=int, default=50, help="frames per video")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    registry = load_plugins().registry
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.robot or ["q1"]:
            spec = get_robot(registry, name)
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.rounds):
                for flag in (True, False):
                    times[flag].append(_seconds_per_frame(spec, args.frames, flag, Path(tmp)))
            on, off = (statistics.median(times[flag]) * 1e3 for flag in (True, False))
            model = load_robot_model(spec)
            used = "with" if MULTISAMPLE else "without"
            print(f"{name}: {int(model.nmeshface):,} mesh triangles; {on:.0f} ms/frame "
                  f"multisampled, {off:.0f} without (x{on / off:.1f}; median of {args.rounds} "
                  f"rounds of {args.frames} frames); videos are drawn {used}")


if __name__ == "__main__":
    main()
