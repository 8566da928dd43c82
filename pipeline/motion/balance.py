"""Can a motion balance? Its zero-moment point against the support of the planted feet.

A legged robot can only push on the floor inside the convex hull of its
contacts (the support polygon). The zero-moment point (ZMP) is where the
floor's total reaction must act for the motion's centre-of-mass acceleration
to happen; under the linear inverted pendulum approximation (angular momentum
about the centre of mass ignored)

    zmp_xy = com_xy - com_z / g * com_acc_xy.

When it leaves the support polygon the motion cannot be followed with the feet
flat: the robot tips over its foot's edge, and no policy can track it. For a
slow motion the ZMP is the centre of mass's ground projection (static balance).
``primebot motion validate`` warns about it (the ``balance`` rule, docs/motions.md).

Only frames the feet alone carry are judged: a frame where another collision
geom comes near the floor (kneeling, lying, hands down) or no foot touches it
(a jump) gets NaN.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..robot.kinematics import geom_vertical_extent, posed_frames, robot_geoms
from ..robot.model import RobotIndices
from ..robot.stance import CONTACT_TOL, convex_hull, signed_margin, sole_points

GRAVITY = 9.81
OTHER_SUPPORT_TOL = 0.025
"""m: a frame where any other collision geom comes this close to the floor (sitting, kneeling,
lying, a hand reaching down) is not judged: that body may be carrying weight too."""
SMOOTHING_FRAMES = 5
"""Centre-of-mass accelerations are averaged over this many frames (finite differences amplify
noise)."""


def zmp_and_support(
    model: mujoco.MjModel,
    indices: RobotIndices,
    foot_body_ids: np.ndarray,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
    fps: float,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None]]:
    """Per frame: the centre of mass [T, 3], the zero-moment point [T, 2] and the support polygon of
    the planted feet (counter-clockwise xy points; None where the feet alone do not carry the
    robot)."""
    frames = len(joint_pos)
    colliding = robot_geoms(model)
    on_foot = colliding & np.isin(model.geom_bodyid, foot_body_ids)
    com = np.empty((frames, 3))
    hulls: list[np.ndarray | None] = []
    for t, data in posed_frames(model, indices, root_pos, root_quat, joint_pos):
        mujoco.mj_comPos(model, data)
        com[t] = data.subtree_com[indices.root_body_id]
        low = geom_vertical_extent(model, data)[0]
        touching = on_foot & (low <= CONTACT_TOL)
        if not touching.any() or (colliding & ~on_foot & (low <= OTHER_SUPPORT_TOL)).any():
            hulls.append(None)
            continue
        points = np.concatenate([sole_points(model, data, g, low[g])
                                 for g in np.flatnonzero(touching)])
        hulls.append(convex_hull(points))
    dt = 1.0 / fps
    if frames > 2:
        acc = np.gradient(np.gradient(com[:, :2], dt, axis=0), dt, axis=0)
    else:
        acc = np.zeros((frames, 2))
    if frames >= SMOOTHING_FRAMES:
        kernel = np.ones(SMOOTHING_FRAMES) / SMOOTHING_FRAMES
        acc = np.stack([np.convolve(acc[:, k], kernel, mode="same") for k in range(2)], axis=1)
    zmp = com[:, :2] - com[:, 2:3] / GRAVITY * acc
    return com, zmp, hulls


def balance_margins(
    model: mujoco.MjModel,
    indices: RobotIndices,
    foot_body_ids: np.ndarray,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
    fps: float,
) -> np.ndarray:
    """[T] signed distance (m) of each frame's ZMP to the edge of the planted feet's support
    polygon: positive inside, negative outside, NaN where the feet alone do not carry the robot."""
    _, zmp, hulls = zmp_and_support(model, indices, foot_body_ids, root_pos, root_quat, joint_pos,
                                    fps)
    return support_margins(zmp, hulls)


def support_margins(zmp: np.ndarray, hulls: list[np.ndarray | None]) -> np.ndarray:
    """[T] signed distance of each ZMP to its support polygon's edge (NaN where there is none)."""
    return np.array([np.nan if hull is None else signed_margin(zmp[t], hull)
                     for t, hull in enumerate(hulls)])
