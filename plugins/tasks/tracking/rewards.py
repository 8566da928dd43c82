"""The tracking task's reward functions: mjlab's nine (its BeyondMimic port is the reference).
The task weighs ``body_pos_error_exp`` twice, with a coarse and a fine kernel: ten terms.

Each is a pure function of the task's ``TrackingState`` returning one value
per environment; ``task.py`` names them under ``rewards:`` with their
weights and parameters. Tracking terms are ``exp(-err / std²)`` in (0, 1];
penalties are non-negative and take a negative weight.
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import RewardTerm, quat_error_magnitude

from .state import TrackingState


def _squared_norm(delta: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", delta, delta)


def anchor_pos_error_exp(state: TrackingState, std: float = 0.3) -> np.ndarray:
    """Reference vs robot anchor position, world frame: squared distance."""
    err = _squared_norm(state.ref_anchor_pos_w - state.anchor_pos_w)
    return np.exp(-err / std**2)


def anchor_ori_error_exp(state: TrackingState, std: float = 0.4) -> np.ndarray:
    """Reference vs robot anchor orientation, world frame: squared rotation angle."""
    err = quat_error_magnitude(state.ref_anchor_quat_w, state.anchor_quat_w) ** 2
    return np.exp(-err / std**2)


def body_pos_error_exp(state: TrackingState, std: float = 0.3) -> np.ndarray:
    """Tracked-body positions vs the reference re-anchored at the robot (yaw and xy): mean squared
    distance."""
    err = _squared_norm(state.ref_body_pos_relative_w - state.body_pos_w).mean(axis=-1)
    return np.exp(-err / std**2)


def body_ori_error_exp(state: TrackingState, std: float = 0.4) -> np.ndarray:
    """Tracked-body orientations vs the yaw-re-anchored reference: mean squared rotation angle."""
    err = (quat_error_magnitude(state.ref_body_quat_relative_w, state.body_quat_w) ** 2).mean(
        axis=-1
    )
    return np.exp(-err / std**2)


def body_lin_vel_error_exp(state: TrackingState, std: float = 1.0) -> np.ndarray:
    """Tracked-body linear velocities vs the reference, world frame: mean squared error."""
    err = _squared_norm(state.ref_body_lin_vel_w - state.body_lin_vel_w).mean(axis=-1)
    return np.exp(-err / std**2)


def body_ang_vel_error_exp(state: TrackingState, std: float = 3.14) -> np.ndarray:
    """Tracked-body angular velocities vs the reference, world frame: mean squared error."""
    err = _squared_norm(state.ref_body_ang_vel_w - state.body_ang_vel_w).mean(axis=-1)
    return np.exp(-err / std**2)


def action_rate_l2(state: TrackingState) -> np.ndarray:
    """Squared change of the action since the previous step."""
    return _squared_norm(state.action - state.prev_action)


def joint_pos_limits(state: TrackingState) -> np.ndarray:
    """How far joints are outside their soft limits (radians, summed over joints)."""
    lower, upper = state.soft_joint_pos_limits[:, 0], state.soft_joint_pos_limits[:, 1]
    below = np.clip(lower - state.joint_pos, 0.0, None)
    above = np.clip(state.joint_pos - upper, 0.0, None)
    return (below + above).sum(axis=-1)


def self_collision(state: TrackingState) -> np.ndarray:
    """Number of contacts between the robot's own geoms."""
    return state.self_contacts


REWARD_TERMS = (
    RewardTerm(
        "anchor_pos_error_exp",
        anchor_pos_error_exp,
        "exp(-|p_ref - p|^2 / std^2) of the anchor body",
        {"std": 0.3},
    ),
    RewardTerm(
        "anchor_ori_error_exp",
        anchor_ori_error_exp,
        "exp(-angle^2 / std^2) of the anchor body",
        {"std": 0.4},
    ),
    RewardTerm(
        "body_pos_error_exp",
        body_pos_error_exp,
        "exp(-mean |p_ref - p|^2 / std^2) over tracked bodies",
        {"std": 0.3},
    ),
    RewardTerm(
        "body_ori_error_exp",
        body_ori_error_exp,
        "exp(-mean angle^2 / std^2) over tracked bodies",
        {"std": 0.4},
    ),
    RewardTerm(
        "body_lin_vel_error_exp",
        body_lin_vel_error_exp,
        "exp(-mean |v_ref - v|^2 / std^2) over tracked bodies",
        {"std": 1.0},
    ),
    RewardTerm(
        "body_ang_vel_error_exp",
        body_ang_vel_error_exp,
        "exp(-mean |w_ref - w|^2 / std^2) over tracked bodies",
        {"std": 3.14},
    ),
    RewardTerm("action_rate_l2", action_rate_l2, "|a_t - a_(t-1)|^2"),
    RewardTerm(
        "joint_pos_limits", joint_pos_limits, "sum of joint excursions beyond the soft limits (rad)"
    ),
    RewardTerm("self_collision", self_collision, "number of robot-robot contacts"),
)
"""The terms the tracking plugin registers (``register_reward_terms``)."""
