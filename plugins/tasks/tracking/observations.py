"""The tracking task's observation terms: pure functions of its ``TrackingState``, ``[N, size]``
each.

``task.py`` lays them out: which terms the policy and the critic see, in
which order, with which noise (docs/tasks.md, "Observations"). Orientations
are the first two columns of a rotation matrix (r00 r01 r10 r11 r20 r21);
frame changes are matrix products against the robot anchor's rotation
``R_a``: ``v_b = R_aᵀ v`` is the row vector ``v·R_a``, and body rotations come
from MuJoCo's xmat, so no per-body quaternion algebra is needed.
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import (
    ObservationTerm,
    matrix_first_two_columns,
    quat_conjugate,
    quat_mul,
    quat_to_matrix,
)

from .state import TrackingState


def _joints(state: TrackingState) -> int:
    return state.joint_pos.shape[1]


def _bodies(state: TrackingState) -> int:
    return state.body_pos_w.shape[1]


def motion_command(state: TrackingState) -> np.ndarray:
    """The reference's joint positions, then its joint velocities, at the env's step."""
    return np.concatenate([state.ref_joint_pos, state.ref_joint_vel], axis=1)


def motion_anchor_ori_b(state: TrackingState) -> np.ndarray:
    """The reference anchor's orientation in the robot anchor's frame."""
    return matrix_first_two_columns(quat_mul(quat_conjugate(state.anchor_quat_w),
                                             state.ref_anchor_quat_w))


def motion_anchor_pos_b(state: TrackingState) -> np.ndarray:
    """The reference anchor's position in the robot anchor's frame (privileged)."""
    offset = (state.ref_anchor_pos_w - state.anchor_pos_w)[:, None]
    return np.matmul(offset, quat_to_matrix(state.anchor_quat_w))[:, 0]


def body_pos_b(state: TrackingState) -> np.ndarray:
    """Tracked-body positions in the robot anchor's frame, 3 per body (privileged)."""
    offsets = state.body_pos_w - state.anchor_pos_w[:, None]
    return np.matmul(offsets, quat_to_matrix(state.anchor_quat_w)).reshape(state.num_envs, -1)


def body_ori_b(state: TrackingState) -> np.ndarray:
    """Tracked-body orientations in the robot anchor's frame, 6 per body (privileged)."""
    rot_anchor = quat_to_matrix(state.anchor_quat_w)
    body_ori = np.matmul(rot_anchor.transpose(0, 2, 1)[:, None], state.body_mat_w[..., :2])
    return body_ori.reshape(state.num_envs, -1)


def base_lin_vel(state: TrackingState) -> np.ndarray:
    """The root body's linear velocity in its own frame (privileged: no sensor measures it)."""
    return state.base_lin_vel_b


def base_ang_vel(state: TrackingState) -> np.ndarray:
    """The root body's angular velocity in its own frame (the IMU's gyro)."""
    return state.base_ang_vel_b


def joint_pos_rel(state: TrackingState) -> np.ndarray:
    """Joint positions minus the default pose, as they are."""
    return state.joint_pos - state.default_joint_pos


def joint_pos_sensed(state: TrackingState) -> np.ndarray:
    """Joint positions minus the default pose, as the encoders read them (with their bias, if
    any)."""
    joint_pos = state.joint_pos - state.default_joint_pos
    return joint_pos if state.encoder_bias is None else joint_pos + state.encoder_bias


def joint_vel(state: TrackingState) -> np.ndarray:
    """Joint velocities."""
    return state.joint_vel


def last_action(state: TrackingState) -> np.ndarray:
    """The policy's last action."""
    return state.action


OBSERVATION_TERMS = (
    ObservationTerm("motion_command", motion_command, lambda s: 2 * _joints(s),
                    "reference joint positions and velocities (2J)", mirror="joints"),
    ObservationTerm("motion_anchor_ori_b", motion_anchor_ori_b, 6,
                    "reference anchor orientation in the robot anchor frame (6)",
                    mirror="rotation"),
    ObservationTerm("motion_anchor_pos_b", motion_anchor_pos_b, 3,
                    "reference anchor position in the robot anchor frame (3)", mirror="polar"),
    ObservationTerm("body_pos_b", body_pos_b, lambda s: 3 * _bodies(s),
                    "tracked-body positions in the robot anchor frame (3K)"),
    ObservationTerm("body_ori_b", body_ori_b, lambda s: 6 * _bodies(s),
                    "tracked-body orientations in the robot anchor frame (6K)"),
    ObservationTerm("base_lin_vel", base_lin_vel, 3, "root linear velocity, root frame (3)",
                    mirror="polar"),
    ObservationTerm("base_ang_vel", base_ang_vel, 3, "root angular velocity, root frame (3)",
                    mirror="axial"),
    ObservationTerm("joint_pos_rel", joint_pos_rel, _joints,
                    "joint positions minus the default pose (J)", mirror="joints"),
    ObservationTerm("joint_pos_sensed", joint_pos_sensed, _joints,
                    "joint positions minus the default pose, with the encoders' bias (J)",
                    mirror="joints"),
    ObservationTerm("joint_vel", joint_vel, _joints, "joint velocities (J)", mirror="joints"),
    ObservationTerm("last_action", last_action, _joints, "the last action (J)", mirror="joints"),
)
"""The terms the tracking plugin registers (``register_observation_terms``)."""
