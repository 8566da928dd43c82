"""Heading alignment: the reference motion turned and moved to where the robot stands at the episode
start.

The policy observes the reference anchor orientation relative to its own
(``motion_anchor_ori_b``), heading included, and the metrics compare world
positions: a robot facing another way than the reference's first frame sees
a heading error training never showed it (a policy that acts on it falls)
and is scored against a reference beside it. Aligning the reference once at
the start fixes both (docs/deploy.md, "Heading alignment"): every reference
position, orientation and velocity is rotated about the vertical by the
difference between the robot's root heading and the reference root's at the
start step, and shifted horizontally so that the two roots coincide. Joint
positions and velocities, heights and tilt are unchanged, so the policy then
sees exactly what it would have seen facing the reference's way.

Only the heading enters the observation; the horizontal shift matters for
the metrics alone (a robot without a position estimate may leave it zero).
"""

from __future__ import annotations

import numpy as np

from ..rotations import quat_mul_about_z, rotate_about_z, yaw_angle

TURNED_OUTPUTS = ("body_quat_w", "body_lin_vel_w", "body_ang_vel_w")
"""Reference outputs that turn with the heading (positions also move)."""


def heading_offset(reference: dict[str, np.ndarray], root_index: int, t: int,
                   root_pos_w: np.ndarray,
                   root_quat_w: np.ndarray) -> tuple[float, np.ndarray]:
    """(yaw, shift): the rotation about world z [rad] and the horizontal translation [3] (z = 0)
    that put the reference root of step ``t`` on the robot's root (world position ``root_pos_w``,
    orientation ``root_quat_w``, w x y z), heading and horizontal position."""
    yaw = float(
        yaw_angle(np.asarray(root_quat_w, dtype=np.float64))
        - yaw_angle(reference["body_quat_w"][t, root_index])
    )
    yaw = float(np.arctan2(np.sin(yaw), np.cos(yaw)))
    turned = rotate_about_z(np.float64(yaw), reference["body_pos_w"][t, root_index])
    shift = np.asarray(root_pos_w, dtype=np.float64) - turned
    shift[2] = 0.0
    return yaw, shift


def turn_reference(reference: dict[str, np.ndarray], yaw: float,
                   shift: np.ndarray) -> dict[str, np.ndarray]:
    """A copy of the reference table rotated by ``yaw`` about world z (through the origin), then
    moved by ``shift``; joint positions and velocities are shared, unchanged."""
    out = dict(reference)
    angle = np.float64(yaw)
    out["body_pos_w"] = rotate_about_z(angle, reference["body_pos_w"]) + np.asarray(
        shift, dtype=np.float64
    )
    out["body_quat_w"] = quat_mul_about_z(angle, reference["body_quat_w"])
    for key in TURNED_OUTPUTS[1:]:
        out[key] = rotate_about_z(angle, reference[key])
    return out


def align_reference(reference: dict[str, np.ndarray], root_index: int, t: int,
                    root_pos_w: np.ndarray,
                    root_quat_w: np.ndarray) -> dict[str, np.ndarray]:
    """The reference table aligned to a robot whose root is at ``root_pos_w`` / ``root_quat_w`` at
    step ``t``."""
    return turn_reference(reference,
                          *heading_offset(reference, root_index, t, root_pos_w, root_quat_w))
