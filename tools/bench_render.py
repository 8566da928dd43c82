"""Seconds per video frame of a registered robot: with and without multisample anti-aliasing, and
with the ghost drawn from the visual or the collision geoms.

    python tools/bench_render.py                         # q1
    python tools/bench_render.py --robot q1 --robot g1 --frames 50 --rounds 3

Renders what the evaluation, sim2sim and stress videos render (``render.ghost``: the robot with a
translucent copy of it as the reference, 640×480, encoded to H.264) for the robot standing in its
keyframe, three ways in interleaved rounds so that a neighbour's load hits all alike: the model's
multisampling (MuJoCo's 4× unless the model says otherwise) and the ghost from its visual geoms;
no multisampling and the same ghost; no multisampling and the ghost the videos draw (``render.ghost
.ghost_option``: the collision geoms when the visual meshes are heavy). Prints per robot its mesh
triangles, the median ms per frame of each and their ratios. On software (Mesa) OpenGL a frame
costs its multisampling and its triangles.
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
from primebot.pipeline.render.ghost import ghost_option, render_ghost_video
from primebot.pipeline.robot.model import load_robot_model, robot_indices
from primebot.pipeline.robot.spec import get_robot


def _seconds_per_frame(spec, frames: int, multisample: bool, light_ghost: bool,
                       folder: Path) -> float:
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
                              indices.root_body_id, folder / f"{spec.name}.mp4", 50.0,
                              multisample=multisample, light_ghost=light_ghost)
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
            variants = {"multisampled": (True, False), "without": (False, False),
                        "light ghost": (False, True)}
            times: dict[str, list[float]] = {variant: [] for variant in variants}
            for _ in range(args.rounds):
                for variant, (multisample, light) in variants.items():
                    times[variant].append(_seconds_per_frame(spec, args.frames, multisample, light,
                                                             Path(tmp)))
            ms = {variant: statistics.median(times[variant]) * 1e3 for variant in variants}
            model = load_robot_model(spec)
            option = mujoco.MjvOption()
            light = ghost_option(model, option) is not option
            drawn = "its collision geoms" if light else "its visual geoms"
            print(f"{name}: {int(model.nmeshface):,} mesh triangles; ms/frame (median of "
                  f"{args.rounds} rounds of {args.frames} frames): {ms['multisampled']:.0f} "
                  f"multisampled, {ms['without']:.0f} without "
                  f"(x{ms['multisampled'] / ms['without']:.1f}), {ms['light ghost']:.0f} with the "
                  f"ghost the videos draw, from {drawn} "
                  f"(x{ms['without'] / ms['light ghost']:.1f} faster than without); videos are "
                  f"drawn {'with' if MULTISAMPLE else 'without'} multisampling")


if __name__ == "__main__":
    main()
