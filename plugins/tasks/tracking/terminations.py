"""Failure conditions of the tracking task (time-outs are handled by the env as truncations).

Each returns a bool [N] mask; thresholds come from the task config
(``terminations:``). mjlab's values: 0.25 m anchor height, 0.8 gravity-z,
0.25 m end-effector height.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .reference import MotionReference
from .state import TrackingState


def anchor_height(state: TrackingState, threshold: float) -> np.ndarray:
    """The anchor is more than ``threshold`` metres above or below the reference anchor."""
    return np.abs(state.ref_anchor_pos_w[:, 2] - state.anchor_pos_w[:, 2]) > threshold


def anchor_orientation(
    state: TrackingState, reference: MotionReference, threshold: float
) -> np.ndarray:
    """Gravity's z in the anchor frame differs from the reference's by more than ``threshold`` (tilt, not heading)."""
    x, y = state.anchor_quat_w[:, 1], state.anchor_quat_w[:, 2]
    gravity_z = 2.0 * (x * x + y * y) - 1.0  # z of R(q)ᵀ·(0, 0, -1)
    return np.abs(reference.anchor_gravity_z[state.time_steps] - gravity_z) > threshold


def end_effector_height(
    state: TrackingState, end_effectors: np.ndarray, threshold: float
) -> np.ndarray:
    """Some end effector is more than ``threshold`` metres off the re-anchored reference height."""
    ref_z = state.all_ref_body_pos_relative_w[:, end_effectors, 2]
    z = state.all_body_pos_w[:, end_effectors, 2]
    return (np.abs(ref_z - z) > threshold).any(axis=1)


def failures(
    state: TrackingState,
    reference: MotionReference,
    end_effectors: np.ndarray,
    thresholds: Mapping[str, float],
) -> dict[str, np.ndarray]:
    """Every enabled failure mask by name; a threshold of ``null`` disables that check."""
    checks = {
        "anchor_height": lambda t: anchor_height(state, t),
        "anchor_orientation": lambda t: anchor_orientation(state, reference, t),
        "end_effector_height": lambda t: end_effector_height(state, end_effectors, t),
    }
    return {
        name: check(float(thresholds[name]))
        for name, check in checks.items()
        if thresholds.get(name) is not None
    }
