"""When does a policy step after a kick? The standard push, one direction at a time.

The stress test says how often a policy survives the standard push and from
which side it fails; this says why. From N start frames spread over the
motion, each episode is kicked once (the root's horizontal velocity, as the
stress test kicks it: 0.2·√(g·L) by default, L the reference's highest root
height), ``--kick-after`` seconds in, towards one side of the robot's heading,
and the policy runs in sim2sim's loop (the bundle's MJCF servos, 500 Hz). A
*step* is a foot set down (no higher than it stood at the kick, +1 cm) at
least ``--step-cm`` from where it stood, towards the kick; the feet are the
two end effectors lowest in the reference's first frame. Per direction it
prints the episodes survived, how many stepped and the median time from the
kick to the first step, and the median time to the failure. A push of v moves
the capture point v/√(g/z) (z the centre of mass's height): on q1 the
standard kick puts it 10 cm ahead, past its 7 cm of foot in front of the centre
of mass, so a robot kicked from behind has to step and soon. Usage::

    python tools/bench_push_step.py RUN/export/policy.onnx plugins/robots/q1/q1.xml
    python tools/bench_push_step.py POLICY.onnx ROBOT.xml --direction forward --starts 32
"""

from __future__ import annotations

import argparse
import json
import math
import statistics

import mujoco
import numpy as np

from primebot.pipeline.deploy import loop
from primebot.pipeline.deploy.sim2sim import TrackingEpisode, prepare
from primebot.pipeline.evaluate.metrics import EpisodeMetrics
from primebot.pipeline.evaluate.push_direction import PUSH_DIRECTIONS
from primebot.pipeline.robot.statics import push_speed_unit
from primebot.pipeline.rotations import yaw_angle

STANDARD_PUSH = 0.2
"""The stress test's standard push, in units of √(g·L) (docs/deploy.md)."""
ANGLES = dict(zip(PUSH_DIRECTIONS, (0.0, 0.5 * math.pi, math.pi, -0.5 * math.pi), strict=True))
"""Where each direction's kick points, from the robot's heading (counter-clockwise)."""
DOWN_M = 0.01
"""m: a foot no higher than this above where it stood at the kick is on the floor."""


class KickedEpisode(TrackingEpisode):
    """A tracking episode whose root is kicked once, ``kick_step`` policy steps in, at ``angle``
    from its heading; records each foot's horizontal travel towards the kick and its height."""

    def __init__(self, setup, metrics, feet: list[int], kick_step: int, angle: float,
                 speed: float) -> None:
        super().__init__(setup, metrics)
        self.feet, self.kick_step, self.angle, self.speed = feet, kick_step, angle, speed
        self.steps = 0
        self.direction: np.ndarray | None = None
        self.at_kick: list[np.ndarray] = []
        self.travel: list[list[tuple[float, float]]] = []

    def inputs(self, data: mujoco.MjData, t: int, last_action: np.ndarray) -> dict:
        if self.steps == self.kick_step:
            robot = self.robot
            heading = float(yaw_angle(data.qpos[robot.root_qpos_adr + 3:robot.root_qpos_adr + 7]))
            self.direction = np.array([math.cos(heading + self.angle),
                                       math.sin(heading + self.angle)])
            data.qvel[robot.root_dof_adr:robot.root_dof_adr + 2] += self.speed * self.direction
            self.at_kick = [data.xpos[b].copy() for b in self.feet]
        self.steps += 1
        return super().inputs(data, t, last_action)

    def end(self, data: mujoco.MjData, t: int, length: int, max_steps: int) -> bool:
        done = super().end(data, t, length, max_steps)
        if self.direction is not None:
            self.travel.append([(float((data.xpos[b][:2] - start[:2]) @ self.direction),
                                 float(data.xpos[b][2] - start[2]))
                                for b, start in zip(self.feet, self.at_kick, strict=True)])
        return done

    def first_step(self, step_m: float) -> int | None:
        """Policy steps from the kick to the first foot set down ``step_m`` towards it."""
        return next((k for k, feet in enumerate(self.travel)
                     if any(ahead >= step_m and up <= DOWN_M for ahead, up in feet)), None)


def feet_of(setup) -> list[int]:
    """MJCF body ids of the two end effectors lowest in the reference's first frame."""
    ee = setup.index["ee"]
    if len(ee) < 2:
        raise SystemExit("the policy names fewer than two end effectors: no feet to watch")
    lowest = ee[np.argsort(setup.reference["body_pos_w"][0, ee, 2])[:2]]
    return [int(setup.robot.motion_body_ids[i]) for i in lowest]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("onnx", help="the policy (RUN_DIR/export/policy.onnx)")
    parser.add_argument("mjcf", help="the robot model it runs on")
    parser.add_argument("--direction", nargs="+", choices=PUSH_DIRECTIONS,
                        default=list(PUSH_DIRECTIONS), help="where the kick points (default: all)")
    parser.add_argument("--speed", type=float, help="m/s (default: the standard push)")
    parser.add_argument("--starts", type=int, default=16, help="start frames per direction")
    parser.add_argument("--kick-after", type=float, default=1.0, help="s into each episode")
    parser.add_argument("--window", type=float, default=4.0, help="s per episode")
    parser.add_argument("--step-cm", type=float, default=3.0, help="how far a step goes, cm")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    setup = prepare(args.onnx, args.mjcf)
    ref, dt = setup.reference, setup.control_dt
    height = float(ref["body_pos_w"][:, int(setup.index["root"][0]), 2].max())
    speed = args.speed if args.speed is not None else STANDARD_PUSH * push_speed_unit(height)
    window = max(2, int(round(args.window / dt)))
    kick = min(int(round(args.kick_after / dt)), window - 1)
    last = max(ref["joint_pos"].shape[0] - window, 0)
    starts = np.linspace(0, last, args.starts).astype(int)
    feet = feet_of(setup)
    tracked = ref["body_pos_w"][:, setup.index["tracked"]]
    print(f"kick {speed:.2f} m/s, {args.kick_after:g} s into {args.window:g} s episodes from "
          f"{len(starts)} starts; a step: a foot set down {args.step_cm:g} cm towards the kick")
    rows = {}
    for name in args.direction:
        survived, step_s, fall_s = 0, [], []
        for start in starts:
            metrics = EpisodeMetrics(1, dt, reference_body_pos=tracked, max_episode_steps=window)
            episode = KickedEpisode(setup, metrics, feet, kick, ANGLES[name], speed)
            loop.run_episode(setup.session, episode, setup.substeps, int(start), window)
            survived += episode.failure is None
            first = episode.first_step(args.step_cm / 100.0)
            if first is not None:
                step_s.append((first + 1) * dt)
            if episode.failure is not None:
                fall_s.append(len(episode.travel) * dt)
        rows[name] = {"episodes": len(starts), "survived": survived, "stepped": len(step_s),
                      "first_step_s": statistics.median(step_s) if step_s else None,
                      "failure_s": statistics.median(fall_s) if fall_s else None}
        row = rows[name]
        step = "-" if row["first_step_s"] is None else f"{row['first_step_s']:.2f} s"
        fall = "-" if row["failure_s"] is None else f"{row['failure_s']:.2f} s"
        print(f"  kicked {name:8s}: survived {survived:2d} of {len(starts)}, stepped in "
              f"{len(step_s):2d}, first step {step} after the kick (median), failure {fall}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"speed_m_s": speed, "step_cm": args.step_cm, "directions": rows}, out,
                      indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
