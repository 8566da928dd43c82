"""A robot's left-right mirror image, found from its geometry: which joint is each joint's partner
across the sagittal plane, and whether its angle changes sign there.

Training can learn from every transition twice, as it happened and as its mirror image
(``ppo.symmetry``, docs/training.md). That needs, for each policy joint, the joint that plays its
part on the other side. Names are not trusted for it (a model's names are data, and "l_"/"left"
conventions vary); the model's kinematics say it: with every joint at zero, the root at the origin,
a joint's partner is the one whose axis is the mirror image of its own through the root frame's
x–z plane (the line, and of the lines that fit, the one whose anchor is nearest the mirrored
anchor: a left and a right hip pitch share one line). An axis is a rotation (an axial vector), so
its mirror image is (−x, y, −z): a hinge whose mirrored axis is its partner's turns the same way
on both sides (a pitch joint, sign +1); one whose mirrored axis is opposite turns the other way (a
roll or yaw joint, sign −1; and a pitch joint of a model that defines its right side's axes
opposite to its left's, as the OP3 does). A joint on the plane (a waist) is its own partner.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ..errors import RobotError
from .model import RobotIndices

POSITION_TOLERANCE = 0.02
"""Of the robot's size (the largest joint anchor distance from the root): how far a joint's anchor
may be from its partner's mirror image."""
AXIS_TOLERANCE = 0.99
"""|cos| of the angle between a joint's mirrored axis and its partner's."""
DEFAULT_POSE_TOLERANCE = 0.02
"""rad: the default pose must be its own mirror image this closely (the policy's joint observations
are relative to it)."""

REFLECT = np.array([1.0, -1.0, 1.0])
"""A position (a polar vector) through the x–z plane."""
REFLECT_AXIAL = -REFLECT
"""An axis or angular velocity (an axial vector) through the same plane."""


@dataclass(frozen=True)
class JointMirror:
    """``mirrored[..., j] = sign[j] · x[..., source[j]]`` for policy-order joint vectors."""

    source: np.ndarray
    sign: np.ndarray

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x)[..., self.source] * self.sign

    def describe(self, names: tuple[str, ...] | list[str]) -> list[str]:
        """One line per joint pair (and per joint on the plane), for logs and errors."""
        lines = []
        for j, s in enumerate(self.source):
            if j <= s:
                flip = "" if self.sign[j] > 0 else " (angle negated)"
                partner = "itself" if j == s else names[s]
                lines.append(f"{names[j]} ↔ {partner}{flip}")
        return lines


def joint_mirror(model: mujoco.MjModel, indices: RobotIndices, joint_names: tuple[str, ...],
                 default_joint_pos: np.ndarray) -> JointMirror:
    """The mirror of ``model``'s policy joints; a ``RobotError`` naming the joint that has no
    partner, or the default pose that is not symmetric."""
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[indices.root_qpos_adr:indices.root_qpos_adr + 3] = 0.0
    data.qpos[indices.root_qpos_adr + 3:indices.root_qpos_adr + 7] = (1.0, 0.0, 0.0, 0.0)
    mujoco.mj_kinematics(model, data)
    root = indices.root_body_id
    frame = data.xmat[root].reshape(3, 3)
    anchors = (data.xanchor[indices.joint_ids] - data.xpos[root]) @ frame
    axes = data.xaxis[indices.joint_ids] @ frame
    for j, joint in enumerate(indices.joint_ids):
        if model.jnt_type[joint] != mujoco.mjtJoint.mjJNT_HINGE:
            raise RobotError(f"joint {joint_names[j]!r} is not a hinge: no mirror image is defined",
                             fix="train without ppo.symmetry")
    size = max(float(np.linalg.norm(anchors, axis=1).max()), 1e-6)
    tolerance = POSITION_TOLERANCE * size
    source = np.empty(len(anchors), dtype=np.int64)
    sign = np.empty(len(anchors))
    for j in range(len(anchors)):
        image, axis = anchors[j] * REFLECT, axes[j] * REFLECT_AXIAL
        offset = anchors - image
        distance = np.linalg.norm(offset, axis=1)
        # a hinge is its axis line: an anchor anywhere along it is the same joint
        off_line = np.linalg.norm(offset - np.sum(offset * axes, axis=1)[:, None] * axes, axis=1)
        alignment = axes @ axis
        fits = np.flatnonzero((off_line <= tolerance) & (np.abs(alignment) >= AXIS_TOLERANCE))
        if len(fits) == 0:
            raise RobotError(
                f"joint {joint_names[j]!r} has no mirror partner: no joint's axis is the mirror "
                f"image of its own through the root's x–z plane (within {tolerance * 100:.1f} cm "
                "and 8°)",
                fix="ppo.symmetry needs a left-right symmetric robot; train without it",
            )
        best = fits[np.argmin(distance[fits])]
        source[j], sign[j] = best, np.sign(alignment[best])
    if not np.array_equal(source[source], np.arange(len(source))):
        bad = int(np.flatnonzero(source[source] != np.arange(len(source)))[0])
        raise RobotError(f"joint {joint_names[bad]!r}: its mirror partner's partner is another "
                         "joint", fix="train without ppo.symmetry")
    mirror = JointMirror(source, sign)
    gap = np.abs(mirror.apply(default_joint_pos) - default_joint_pos)
    if gap.max() > DEFAULT_POSE_TOLERANCE:
        j = int(np.argmax(gap))
        raise RobotError(
            f"the default pose is not left-right symmetric: {joint_names[j]} is "
            f"{default_joint_pos[j]:+.3f} rad where its mirror image asks "
            f"{mirror.apply(default_joint_pos)[j]:+.3f}",
            fix="make the robot spec's default pose symmetric, or train without ppo.symmetry",
        )
    return mirror
