"""A reference the robot's body can do: keyframe servo targets played through its servos, recorded.

Some motions cannot be authored pose by pose: a get-up from the back is a
throw of the legs and a landing in a squat, and only the physics knows where
the body ends up. ``primebot motion record`` reads a keyframe source (the
format of ``primebot motion author``) as joint *targets*, plays them open
loop through the robot's PD servos in the default task's simulation (its
``play.open_loop`` settings, as ``primebot motion pd-replay`` does: no policy, no
randomisation, no terminations) and writes what happened as the motion: the
simulated root, body poses from forward kinematics, and as the joints either

- ``simulated`` (the default): the body's own path, consistent in every
  frame; where the joints lag their targets (a fast throw) a policy has to
  learn the lead, as for any authored motion; or
- ``targets``: the servo targets, so that a zero action (the tracking task's
  ``actions.offset: reference``) replays the recording exactly. Where the
  joints lag far behind their targets the reference's limbs are where the
  targets put them, and the end-effector termination must be off to train
  on it (docs/motions.md: the getup).

A reference recorded from a run that ended standing is feasible by
construction.

The source's ``record:`` mapping (ignored by ``primebot motion author``)
says how the targets are played::

    record:
      joints: targets        # or simulated (the default): the motion's joint angles
      max_step_rad: 0.33     # each joint target moves at most this far per frame
      balance:               # from from_s on, these joints lean the body back over the feet:
        from_s: 3.21         #   target += gain * (CoM x - feet x) + damping * CoM velocity x
        joints: [left_ankle_pitch_joint, right_ankle_pitch_joint]
        gain: 0.357          #   (world x is forward: author the motion facing +x)
        damping: 0.0157

Simulated joints are clamped into their ranges and to ``max_step_rad`` per
frame (a hard landing presses a joint past its soft limit), and where a limb
still dips more than ``FLOOR_SLACK_M`` into the floor the root is raised just
enough that ``primebot motion validate`` accepts it. Usage::

    primebot motion record motions/getup.yaml -o motions/getup.npz
    primebot motion pd-replay motions/getup.npz   # zero actions give the recording back (targets)
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

from ..errors import MotionError
from ..registry import DEFAULT_TASK, Registry
from ..robot.kinematics import lowest_point
from ..robot.model import load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from .author import author_motion, load_source
from .format import Motion, load_motion, save_motion
from .trajectory import motion_from_trajectory

FLOOR_SLACK_M = 0.019
"""How far below the floor a recorded limb may reach before the root is raised (validate refuses
0.02 m)."""

AUTHORING = 'docs/motions.md, "Authoring motions from keyframes"'
RECORD_KEYS = {"max_step_rad", "balance", "joints"}
JOINTS = ("simulated", "targets")
BALANCE_KEYS = {"from_s", "joints", "gain", "damping"}


def record_settings(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The source's ``record:`` mapping, checked; a typed error names the key and the fix."""
    settings = source.get("record") or {}
    if not isinstance(settings, Mapping):
        raise MotionError(f"{where}: record must be a mapping, not {type(settings).__name__}",
                          fix=f"see {AUTHORING}")
    settings = dict(settings)
    unknown = set(settings) - RECORD_KEYS
    balance = settings.get("balance")
    if balance is not None and not isinstance(balance, Mapping):
        raise MotionError(f"{where}: record.balance must be a mapping of "
                          f"{', '.join(sorted(BALANCE_KEYS))}", fix=f"see {AUTHORING}")
    if balance is not None:
        unknown |= {f"balance.{key}" for key in set(balance) - BALANCE_KEYS}
        if set(BALANCE_KEYS) - set(balance):
            raise MotionError(f"{where}: record.balance needs {', '.join(sorted(BALANCE_KEYS))}")
    if settings.get("joints", "simulated") not in JOINTS:
        raise MotionError(f"{where}: record.joints must be one of {', '.join(JOINTS)}, "
                          f"not {settings['joints']!r}")
    if unknown:
        raise MotionError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} in record",
                          fix=f"allowed: {', '.join(sorted(RECORD_KEYS))}; "
                              f"balance: {', '.join(sorted(BALANCE_KEYS))}")
    return settings


def record(source_path: str | Path, robot: RobotSpec, registry: Registry,
           output: str | Path | None = None) -> Motion:
    """Play ``source_path``'s keyframe targets through ``robot``'s servos in the default task's
    open-loop replay (``registry``'s); the recorded motion (saved to ``output`` when given)."""
    source_path = Path(source_path)
    try:
        raw = yaml.safe_load(source_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise MotionError(f"{source_path}: cannot read the keyframe source: {exc}",
                          fix=f"pass a keyframe source .yaml ({AUTHORING})") from None
    if not isinstance(raw, Mapping):
        raise MotionError(f"{source_path}: a keyframe source is a YAML mapping",
                          fix=f"see {AUTHORING}")
    settings = record_settings(raw, str(source_path))
    with tempfile.TemporaryDirectory() as tmp:  # the targets as a motion file holds them (float32)
        save_motion(author_motion(load_source(source_path, robot), robot),
                    Path(tmp) / "targets.npz")
        targets = load_motion(Path(tmp) / "targets.npz")
    env = registry.get("tasks", DEFAULT_TASK).open_loop_env(robot, targets, registry,
                                                            where=f"{source_path}: ")
    sim_model = env.sim.model
    indices = robot_indices(sim_model, robot)
    joint_names = list(robot.joint_names)
    lower, upper = indices.joint_range[:, 0], indices.joint_range[:, 1]
    max_step = float(settings["max_step_rad"]) if "max_step_rad" in settings else None
    balance = settings.get("balance")
    unknown = [name for name in (balance or {}).get("joints", []) if name not in joint_names]
    if unknown:
        raise MotionError(f"{source_path}: record.balance.joints: {', '.join(unknown)} "
                          f"not joints of {robot.name!r}",
                          fix=f"joints of {robot.name!r}: {', '.join(joint_names)}")
    lean = [joint_names.index(name) for name in balance["joints"]] if balance else []
    data = mujoco.MjData(sim_model)
    planned = env.reference.joint_pos.copy()
    adr = indices.root_qpos_adr
    states, applied = [], []
    previous_target = previous_com = None
    try:
        env.reset()
        states.append(np.array(env.sim.qpos[0]))
        zero = np.zeros((1, env.num_actions), dtype=np.float32)
        for step in range(env.reference.num_steps - 1):
            target = planned[step].copy()
            if max_step is not None and previous_target is not None:
                target = previous_target + np.clip(target - previous_target, -max_step, max_step)
            previous_target = target.copy()
            if balance:
                data.qpos[:], data.qvel[:] = env.sim.qpos[0], env.sim.qvel[0]
                mujoco.mj_kinematics(sim_model, data)
                mujoco.mj_comPos(sim_model, data)
                com = data.subtree_com[indices.root_body_id].copy()
                velocity = 0.0 if previous_com is None else (com[0] - previous_com[0]) / env.step_dt
                previous_com = com
                if step * env.step_dt >= float(balance["from_s"]):
                    over = com[0] - data.xpos[indices.feet_body_ids, 0].mean()
                    target[lean] += (
                        float(balance["gain"]) * over + float(balance["damping"]) * velocity
                    )
            # the servo target exactly as the env applies it (float32, as the motion file stores it)
            target = np.clip(target, lower, upper).astype(np.float32).astype(np.float64)
            # a zero action's servo target (actions.offset: reference)
            env.reference.joint_pos[step] = target
            applied.append(target)
            env.step(zero)
            states.append(np.array(env.sim.qpos[0]))
    finally:
        env.close()
    # the motion's last step ended the episode and reset the robot: hold the last state
    states[-1] = states[-2]
    states = np.array(states)
    roots = states[:, adr:adr + 7]
    if settings.get("joints") == "targets":
        joint_pos = np.array([*applied, applied[-1]])
    else:
        joint_pos = _within_limits(states[:, indices.qpos_adr], lower, upper, max_step)
    # forward kinematics on the robot's own model, as authoring does
    model = load_robot_model(robot)
    indices = robot_indices(model, robot)
    root_pos = _above_the_floor(model, indices, roots[:, :3].copy(), roots[:, 3:7], joint_pos)
    motion = motion_from_trajectory(model, indices, tuple(joint_names), targets.fps, root_pos,
                                    roots[:, 3:7], joint_pos)
    motion = dataclasses.replace(motion, training_overrides=targets.training_overrides)
    if output is not None:
        save_motion(motion, output)
    return motion


def _within_limits(joint_pos: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   max_step: float | None) -> np.ndarray:
    """The simulated joints clamped into their ranges and, frame to frame, to ``max_step``: a hard
    landing presses a joint ~0.02 rad past its (soft) limit and a throw can outrun the targets' rate
    limit for a frame, both of which ``primebot motion validate`` refuses."""
    out = np.clip(joint_pos, lower, upper)
    if max_step is not None:
        for t in range(1, len(out)):
            out[t] = out[t - 1] + np.clip(out[t] - out[t - 1], -max_step, max_step)
    return out


def _above_the_floor(model, indices, root_pos, root_quat, joint_pos) -> np.ndarray:
    """``root_pos`` raised, frame by frame, so that no robot geom reaches more than FLOOR_SLACK_M
    below z = 0."""
    lowest = lowest_point(model, indices, root_pos, root_quat, joint_pos)
    root_pos[:, 2] += np.maximum(0.0, -FLOOR_SLACK_M - lowest)
    return root_pos
