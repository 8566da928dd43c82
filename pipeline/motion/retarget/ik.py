"""Whole-body inverse kinematics with mink on the robot's own MJCF (docs/motions.md, "From human
motion").

One ``BodyIK`` per robot model: a frame task per pulled body (position and orientation costs), a
posture task that keeps unpulled joints near a reference pose, and the model's joint limits as a
hard constraint. ``solve`` starts from a configuration (the previous frame's, so a clip is tracked
frame by frame in a few iterations) and returns the new one. The retargeter and the keyframe
author's ``ik:`` targets both use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import mink
import mujoco
import numpy as np

from ...robot.kinematics import set_qpos
from ...robot.model import RobotIndices

SOLVER = "daqp"
STEP_DT = 0.02
"""s: mink's integration step; a velocity v moves the configuration by v·STEP_DT per iteration."""
DAMPING = 1e-4
POSTURE_COST = 0.05
"""A light pull towards the reference pose: resolves what the targets leave free (a wrist's
roll)."""
TOLERANCE = 1e-5
"""Stop iterating a frame once no joint moves more than this (rad or m) in one iteration."""


class BodyIK:
    """Inverse kinematics of ``bodies`` (names) of one model; costs per body, settable per solve."""

    def __init__(self, model: mujoco.MjModel, indices: RobotIndices, bodies: Sequence[str],
                 position_cost: Sequence[float], orientation_cost: Sequence[float],
                 posture: np.ndarray, posture_cost: float = POSTURE_COST,
                 com_cost: float | Sequence[float] = 0.0) -> None:
        self.model, self.indices = model, indices
        self.configuration = mink.Configuration(model)
        self.tasks = [mink.FrameTask(body, "body", position_cost=float(p),
                                     orientation_cost=float(o))
                      for body, p, o in zip(bodies, position_cost, orientation_cost, strict=True)]
        self.position_cost = np.asarray(position_cost, dtype=float)
        self.orientation_cost = np.asarray(orientation_cost, dtype=float)
        self.com = mink.ComTask(cost=com_cost) if np.any(np.asarray(com_cost) > 0) else None
        """With ``com_cost`` (one cost, or x, y, z), the centre of mass of the whole model is a
        target too."""
        self.posture = mink.PostureTask(model, cost=posture_cost)
        self.set_posture(posture)
        self.limits = [mink.ConfigurationLimit(model)]

    def set_posture(self, joint_pos: np.ndarray) -> None:
        """The pose unpulled joints drift towards (policy-order joint angles)."""
        q = self.model.qpos0.copy()
        q[self.indices.qpos_adr] = joint_pos
        self.posture.set_target(q)

    def qpos(self, root_pos, root_quat, joint_pos) -> np.ndarray:
        q = self.model.qpos0.copy()
        set_qpos(q, self.indices, root_pos, root_quat, joint_pos)
        return q

    def solve(self, q: np.ndarray, positions: np.ndarray, quats: np.ndarray, *,
              orientation_scale: np.ndarray | None = None, com: np.ndarray | None = None,
              position_scale: np.ndarray | None = None, iterations: int = 8) -> np.ndarray:
        """The configuration reached from ``q`` towards ``positions`` [E, 3] and ``quats`` [E, 4]
        (w x y z) of the bodies (and ``com`` [3] for the centre of mass, with ``com_cost``);
        ``orientation_scale`` and ``position_scale`` [E] multiply each cost for this solve."""
        ones = np.ones(len(self.tasks))
        o_scale = ones if orientation_scale is None else orientation_scale
        p_scale = ones if position_scale is None else position_scale
        for e, (task, pos, quat) in enumerate(zip(self.tasks, positions, quats, strict=True)):
            task.set_target(mink.SE3.from_rotation_and_translation(
                mink.SO3(np.asarray(quat, float)), np.asarray(pos, float)))
            task.set_orientation_cost(self.orientation_cost[e] * o_scale[e])
            task.set_position_cost(self.position_cost[e] * p_scale[e])
        self.configuration.update(q)
        tasks = [*self.tasks, self.posture]
        if self.com is not None and com is not None:
            self.com.set_target(np.asarray(com, dtype=float))
            tasks.append(self.com)
        for _ in range(iterations):
            velocity = mink.solve_ik(self.configuration, tasks, STEP_DT, SOLVER, damping=DAMPING,
                                     limits=self.limits)
            self.configuration.integrate_inplace(velocity, STEP_DT)
            if np.abs(velocity).max() * STEP_DT < TOLERANCE:
                break
        return self.configuration.q.copy()

    def pose(self, q: np.ndarray) -> None:
        """Put the model in configuration ``q`` (forward kinematics), solving nothing."""
        self.configuration.update(q)

    def centre_of_mass(self) -> np.ndarray:
        """The robot's centre of mass (body 1's subtree) in the last solved configuration."""
        data = self.configuration.data
        mujoco.mj_comPos(self.model, data)
        return data.subtree_com[1].copy()  # body 1 is the root: what mink's ComTask targets

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and orientation (w x y z) of a body in the last solved configuration."""
        data = self.configuration.data
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        return data.xpos[body].copy(), data.xquat[body].copy()
