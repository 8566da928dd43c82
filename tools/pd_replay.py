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
mean error; then the episode's MPKPE and statue MPKPE. Usage::

    python tools/pd_replay.py motions/getup.npz
    python tools/pd_replay.py motions/squat.npz --robot q1 --json out.json
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


def pd_replay(motion_path: str | Path, robot: str | None = None) -> dict:
    """Replay ``motion_path`` under PD on ``robot`` (default: the task's); per-step root heights and
    errors."""
    host = load_plugins()
    spec = host.registry.get("tasks", "tracking")
    robot_spec = host.registry.get("robots", robot or spec.default_robot)
    motion = load_motion(motion_path)
    # the task's open-loop replay (play.open_loop, docs/plugin_hooks.md), over the whole motion,
    # however long (the task's time-out would cut a long get-up at 10 s)
    config = spec.play.config({}, spec.play.open_loop, {"episode_length_s": motion.duration + 1.0})
    env = spec.make_env(robot=robot_spec, motion=motion, num_envs=1, seed=0,
                        config=config, registry=host.registry, num_threads=1)
    # the task's own view for evaluation (snapshots, reference steps)
    view = spec.evaluation_view(env)
    heights, reference_heights, errors, statue = [], [], [], []
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
            statue.append(
                float(np.linalg.norm(start_pose - snap.ref_body_pos_w[0], axis=-1).mean())
            )
    finally:
        env.close()
    return {"motion": str(motion_path), "robot": robot_spec.name, "step_dt": env.step_dt,
            "root_height_m": heights, "reference_root_height_m": reference_heights,
            "mpkpe_m": errors,
            "mean_mpkpe_m": float(np.mean(errors)), "statue_mpkpe_m": float(np.mean(statue))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("motion", type=Path)
    parser.add_argument("--robot", default=None,
                        help="registered robot (default: the tracking task's)")
    parser.add_argument("--json", type=Path, help="also write the per-step figures as JSON here")
    args = parser.parse_args(argv)
    out = pd_replay(args.motion, args.robot)
    per_second = round(1.0 / out["step_dt"])
    print(f"{out['motion']} on {out['robot']}, PD on the reference joints, no policy:")
    print("    t   ref root z   robot root z   tracked-body error")
    for i in range(0, len(out["mpkpe_m"]), per_second):
        print(f"{(i + 1) * out['step_dt']:5.1f} s {out['reference_root_height_m'][i]:9.3f} m "
              f"{out['root_height_m'][i]:12.3f} m {out['mpkpe_m'][i]:14.3f} m")
    print(f"MPKPE {out['mean_mpkpe_m']:.3f} m over the episode (a statue frozen at frame 0: "
          f"{out['statue_mpkpe_m']:.3f} m)")
    if args.json:
        args.json.write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
