"""Statics of a robot model: how hard gravity pulls on what each joint carries.

``robots new`` sizes the servos from it (docs/robots.md, "Gains") and
``robots check`` reports the softest servo against it.
"""

from __future__ import annotations

import mujoco
import numpy as np

GRAVITY = 9.81


def gravity_stiffness(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], root: int,
                      feet: set[int]) -> np.ndarray:
    """N·m/rad per joint: how fast gravity's torque on what the joint carries grows as it bends,
    in the pose of ``data`` (``mj_kinematics`` done). A joint on the way to a foot carries the rest of
    the robot, standing on it (lever: the height of that mass's centre above the joint); any other
    joint carries its subtree (lever: the distance to the subtree's centre of mass). A servo softer
    than this cannot hold its load up without a policy's help."""
    robot = [b for b in range(1, model.nbody) if is_ancestor(model, root, b)]
    out = np.empty(len(joints))
    for k, j in enumerate(joints):
        body = int(model.jnt_bodyid[j])
        below = [b for b in robot if is_ancestor(model, body, b)]
        stance = bool(set(below) & feet)
        carried = [b for b in robot if b not in below] if stance else below
        mass = model.body_mass[carried]
        if mass.sum() <= 0:
            out[k] = 0.0
            continue
        com = (data.xipos[carried] * mass[:, None]).sum(axis=0) / mass.sum()
        offset = com - data.xanchor[j]
        lever = abs(offset[2]) if stance else float(np.linalg.norm(offset))
        out[k] = float(mass.sum()) * GRAVITY * lever
    return out


def is_ancestor(model: mujoco.MjModel, ancestor: int, body: int) -> bool:
    """Whether ``ancestor`` is ``body`` or above it in the kinematic tree (the world is above all)."""
    while body > 0:
        if body == ancestor:
            return True
        body = int(model.body_parentid[body])
    return ancestor == 0


def stiffness_ratios(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], stiffness: np.ndarray,
                     root: int, feet: set[int]) -> np.ndarray:
    """Each servo's stiffness over its gravity stiffness (``inf`` where gravity pulls on nothing)."""
    pull = gravity_stiffness(model, data, joints, root, feet)
    return np.divide(stiffness, pull, out=np.full(len(joints), np.inf), where=pull > 0)
