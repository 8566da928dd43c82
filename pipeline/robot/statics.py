"""Statics of a robot model: how hard gravity pulls on what each joint carries, and the units that
size a push to the robot.

``robots new`` sizes the servos from it (docs/robots.md, "Gains") and
``robots check`` reports the softest servo against it.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

GRAVITY = 9.81


def push_speed_unit(reference_root_height: float) -> float:
    """√(g·L) in m/s: the velocity a push level k multiplies, for a robot whose root stands ``L`` m
    high (the stress test's pushes, training's, and the training step's kicks:
    deploy/perturbations.py)."""
    return math.sqrt(GRAVITY * max(float(reference_root_height), 0.05))


def push_rate_unit(reference_root_height: float) -> float:
    """√(g/L) in rad/s: the angular velocity of the same Froude scaling (training's angular
    pushes)."""
    return math.sqrt(GRAVITY / max(float(reference_root_height), 0.05))


def gravity_stiffness(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], root: int,
                      feet: set[int]) -> np.ndarray:
    """N·m/rad per joint: how fast gravity's torque about the joint's axis on what it carries grows
    as it bends, in the pose of ``data`` (``mj_kinematics`` done). A servo softer than this cannot
    hold its load up without a policy's help.

    A joint on the way to a foot carries the rest of the robot, standing on it: tilting that mass m
    (centre r from the joint, axis a) by a small angle lowers it by m·g·(r_z − (a·r)·a_z) per radian
    squared, so that is the stiffness it needs (a hip pitch: m·g times the height of the mass above
    it; a hip yaw: nothing, gravity does not twist a vertical axis). Any other joint carries its
    subtree, at the worst lever the subtree can take as the limb moves: its distance from the axis,
    |r − (a·r)·a|.
    """
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
        offset = (data.xipos[carried] * mass[:, None]).sum(axis=0) / mass.sum() - data.xanchor[j]
        axis = data.xaxis[j] / np.linalg.norm(data.xaxis[j])
        along = float(axis @ offset)
        if stance:
            lever = max(0.0, float(offset[2] - along * axis[2]))
        else:
            lever = float(np.linalg.norm(offset - along * axis))
        out[k] = float(mass.sum()) * GRAVITY * lever
    return out


def is_ancestor(model: mujoco.MjModel, ancestor: int, body: int) -> bool:
    """Whether ``ancestor`` is ``body`` or above it in the kinematic tree (the world is above
    all)."""
    while body > 0:
        if body == ancestor:
            return True
        body = int(model.body_parentid[body])
    return ancestor == 0


def holds_foot(model: mujoco.MjModel, joint: int, feet: set[int]) -> bool:
    """Whether a foot hangs below ``joint`` (a joint on the way to a foot carries the robot
    standing on it)."""
    body = int(model.jnt_bodyid[joint])
    return any(is_ancestor(model, body, foot) for foot in feet)


def stiffness_ratios(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int],
                     stiffness: np.ndarray,
                     root: int, feet: set[int]) -> np.ndarray:
    """Each servo's stiffness over its gravity stiffness (``inf`` where gravity pulls on
    nothing)."""
    pull = gravity_stiffness(model, data, joints, root, feet)
    return np.divide(stiffness, pull, out=np.full(len(joints), np.inf), where=pull > 0)
