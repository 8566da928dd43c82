"""Can the robot's body do a motion at all? The reference replayed under PD, no policy.

Plays one episode of the tracking task from the motion's first frame with
every action zero: each joint's PD target is the reference's joint angle
(``actions.offset: reference``), no randomisation, no observation noise, no
terminations. A motion a policy can learn usually stays close under open-loop
PD while the feet carry the robot (balance needs feedback, so it may drift
and fall late); one whose root never follows the reference (a sit-up that
lifts the legs instead of the torso, a jump the motors cannot push) asks the
body for something it cannot do, and no training will fix that. Prints, per
second, the reference's and the robot's root height and the tracked bodies'
mean error; then the episode's MPKPE and statue MPKPE, when the tracked bodies
first drift ``OFF_TRACK_M`` from the reference, and the joints furthest from
their targets before that (``--window``, default the first second): a joint
that sags far under its servo while the robot is still up is where the body
needs the policy's help first (or a stiffer servo: docs/robots.md). With
``--feedforward`` every target is moved by the servo feedforward of the
motion's torques (inverse dynamics: pipeline/motion/inverse_dynamics.py), so no
servo sags: what still falls is balance, which open-loop PD cannot give.
Usage::

    python tools/pd_replay.py motions/getup.npz
    python tools/pd_replay.py motions/squat.npz --robot q1 --json out.json
    python tools/pd_replay.py sub10_largebox_049_g1.npz --robot g1 --feedforward
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from primebot.pipeline.evaluate.metrics import step_errors
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.format import load_motion

OFF_TRACK_M = 0.05
"""Tracked bodies this far from the reference (mean) count as off track."""
WORST_JOINTS = 5
"""Joints listed by their error under PD."""


def pd_replay(motion_path: str | Path, robot: str | None = None,
              feedforward: bool = False) -> dict:
    """Replay ``motion_path`` under PD on ``robot`` (default: the task's); per-step root heights and
    errors. ``feedforward``: each target moved by the servo feedforward of the motion's torques
    (the task's ``actions.offset: servo_target``)."""
    host = load_plugins()
    spec = host.registry.get("tasks", "tracking")
    robot_spec = host.registry.get("robots", robot or spec.default_robot)
    motion = load_motion(motion_path)
    # the task's open-loop replay (play.open_loop, docs/plugin_hooks.md), over the whole motion,
    # however long (the task's time-out would cut a long get-up at 10 s)
    # with the feedforward: the zero action's targets are the task's servo targets
    # (actions.offset: servo_target, docs/tasks.md)
    config = spec.play.config({}, spec.play.open_loop, {"episode_length_s": motion.duration + 1.0},
                              {"actions": {"offset": "servo_target"}} if feedforward else {})
    env = spec.make_env(robot=robot_spec, motion=motion, num_envs=1, seed=0,
                        config=config, registry=host.registry, num_threads=1)
    # the task's own view for evaluation (snapshots, reference steps)
    view = spec.evaluation_view(env)
    heights, reference_heights, errors, statue, joint_offsets = [], [], [], [], []
    try:
        env.reset()
        # the statue: frozen at frame 0
        start_pose = view.snapshot(np.arange(1)).body_pos_w[0].copy()
        zero = np.zeros((1, env.num_actions), dtype=np.float32)
        for _ in range(env.reference.num_steps - 1):
            result = env.step(zero)
            if result.truncated.any() or result.terminated.any():
                # the episode ended at the motion's last frame: what follows is the next episode's
                # start
                break
            snap = view.snapshot(np.arange(1))
            heights.append(float(snap.root_pos_w[0, 2]))
            reference_heights.append(float(snap.ref_root_pos_w[0, 2]))
            errors.append(float(step_errors(snap)["mpkpe_m"][0]))
            joint_offsets.append(snap.joint_pos[0] - snap.ref_joint_pos[0])
            statue.append(
                float(np.linalg.norm(start_pose - snap.ref_body_pos_w[0], axis=-1).mean())
            )
    finally:
        env.close()
    return {"motion": str(motion_path), "robot": robot_spec.name, "step_dt": env.step_dt,
            "feedforward": feedforward,
            "root_height_m": heights, "reference_root_height_m": reference_heights,
            "mpkpe_m": errors,
            "mean_mpkpe_m": float(np.mean(errors)), "statue_mpkpe_m": float(np.mean(statue)),
            "joint_names": list(robot_spec.joint_names),
            "joint_error_rad": np.asarray(joint_offsets).tolist()}


def off_track_s(out: dict) -> float | None:
    """Seconds until the tracked bodies' mean error first reaches ``OFF_TRACK_M`` (None: never)."""
    far = np.flatnonzero(np.asarray(out["mpkpe_m"]) >= OFF_TRACK_M)
    return None if far.size == 0 else float((far[0] + 1) * out["step_dt"])


def joint_errors(out: dict, window_s: float) -> list[tuple[str, float, float]]:
    """``(joint, RMS, max |error|)`` in radians over the first ``window_s`` seconds, the largest RMS
    first."""
    steps = max(1, round(window_s / out["step_dt"]))
    error = np.abs(np.asarray(out["joint_error_rad"])[:steps])
    rms, peak = np.sqrt((error ** 2).mean(axis=0)), error.max(axis=0)
    order = np.argsort(-rms)
    return [(out["joint_names"][j], float(rms[j]), float(peak[j])) for j in order]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("motion", type=Path)
    parser.add_argument("--robot", default=None,
                        help="registered robot (default: the tracking task's)")
    parser.add_argument("--json", type=Path, help="also write the per-step figures as JSON here")
    parser.add_argument("--window", type=float, default=1.0, metavar="S",
                        help="seconds from the start over which joint errors are listed "
                             "(default 1: before a fall makes every joint's error large)")
    parser.add_argument("--feedforward", action="store_true",
                        help="add the servo feedforward to every target: the sag each servo "
                             "would give under the motion's torques, by inverse dynamics "
                             "(docs/motions.md, \"What the servos give\"); what still falls is "
                             "balance, not sag")
    args = parser.parse_args(argv)
    out = pd_replay(args.motion, args.robot, args.feedforward)
    per_second = round(1.0 / out["step_dt"])
    targets = "the reference joints plus the servo feedforward" if args.feedforward else (
        "the reference joints")
    print(f"{out['motion']} on {out['robot']}, PD on {targets}, no policy:")
    print("    t   ref root z   robot root z   tracked-body error")
    for i in range(0, len(out["mpkpe_m"]), per_second):
        print(f"{(i + 1) * out['step_dt']:5.1f} s {out['reference_root_height_m'][i]:9.3f} m "
              f"{out['root_height_m'][i]:12.3f} m {out['mpkpe_m'][i]:14.3f} m")
    print(f"MPKPE {out['mean_mpkpe_m']:.3f} m over the episode (a statue frozen at frame 0: "
          f"{out['statue_mpkpe_m']:.3f} m)")
    off = off_track_s(out)
    print(f"the tracked bodies are {OFF_TRACK_M * 100:.0f} cm off the reference "
          + ("at no step" if off is None else f"from {off:.2f} s"))
    worst = joint_errors(out, args.window)[:WORST_JOINTS]
    print(f"joints furthest from their reference in the first {args.window:g} s (RMS / max, deg): "
          + ", ".join(f"{name} {np.degrees(rms):.1f} / {np.degrees(peak):.1f}"
                      for name, rms, peak in worst))
    if args.json:
        args.json.write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
