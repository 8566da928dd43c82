"""A motion from a robot trajectory: root pose and joint angles in, every key of
docs/architecture.md §2 out."""

from __future__ import annotations

import mujoco
import numpy as np

from ..robot.kinematics import body_states, qpos_trajectory, qvel_from_qpos
from ..robot.model import RobotIndices
from .format import Motion


def motion_from_trajectory(
    model: mujoco.MjModel,
    indices: RobotIndices,
    joint_names: tuple[str, ...],
    fps: float,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
) -> Motion:
    """A complete docs/architecture.md §2 motion from root pose [T, 3]/[T, 4] and joint angles [T,
    J].

    Joint velocities and body poses/velocities come from MuJoCo, so every
    tool that writes a motion produces mutually consistent keys.
    """
    qpos = qpos_trajectory(model, indices, root_pos, root_quat, joint_pos)
    qvel = qvel_from_qpos(model, qpos, 1.0 / fps)
    bodies = body_states(model, qpos, qvel)
    return Motion(
        fps=float(fps),
        joint_pos=np.asarray(joint_pos, dtype=np.float64),
        joint_vel=qvel[:, indices.dof_adr],
        joint_names=tuple(joint_names),
        body_names=indices.body_names,
        **bodies,
    )
