"""The tracking task's failure checks: pure functions of its ``TrackingState``, a bool ``[N]`` mask
each.

``task.py`` names the ones it uses under ``terminations:`` with their
thresholds (mjlab's values: 0.25 m anchor height, 0.8 gravity-z, 0.25 m
end-effector height); ``null`` switches one off. Time-outs are not failures:
the env ends those episodes as truncations.
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import TerminationTerm

from .state import TrackingState


def anchor_height(state: TrackingState, threshold: float) -> np.ndarray:
    """The anchor is more than ``threshold`` metres above or below the reference anchor."""
    return np.abs(state.ref_anchor_pos_w[:, 2] - state.anchor_pos_w[:, 2]) > threshold


def anchor_orientation(state: TrackingState, threshold: float) -> np.ndarray:
    """Gravity's z in the anchor frame differs from the reference's by more than ``threshold``
    (tilt, not heading)."""
    x, y = state.anchor_quat_w[:, 1], state.anchor_quat_w[:, 2]
    gravity_z = 2.0 * (x * x + y * y) - 1.0  # z of R(q)ᵀ·(0, 0, -1)
    return np.abs(state.reference.anchor_gravity_z[state.time_steps] - gravity_z) > threshold


def end_effector_height(state: TrackingState, threshold: float) -> np.ndarray:
    """Some end effector is more than ``threshold`` metres off the re-anchored reference height."""
    ref_z = state.all_ref_body_pos_relative_w[:, state.end_effectors, 2]
    z = state.all_body_pos_w[:, state.end_effectors, 2]
    return (np.abs(ref_z - z) > threshold).any(axis=1)


TERMINATION_TERMS = (
    TerminationTerm("anchor_height", anchor_height,
                    "|z_ref - z| of the anchor body above threshold (m)"),
    TerminationTerm("anchor_orientation", anchor_orientation,
                    "|g_z,ref - g_z|, gravity's z in the anchor frame, above threshold"),
    TerminationTerm("end_effector_height", end_effector_height,
                    "any end effector's |z_ref - z| (re-anchored reference) above threshold (m)"),
)
"""The checks the tracking plugin registers (``register_termination_terms``)."""
