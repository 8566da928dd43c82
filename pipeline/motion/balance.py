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
from ..robot.spec import RobotIndices

GRAVITY = 9.81
CONTACT_TOL = 0.01
"""m: a foot whose lowest point is this close to z = 0 rests on the floor."""
OTHER_SUPPORT_TOL = 0.025
"""m: a frame where any other collision geom comes this close to the floor (sitting, kneeling,
lying, a hand reaching down) is not judged: that body may be carrying weight too."""
SMOOTHING_FRAMES = 5
"""Centre-of-mass accelerations are averaged over this many frames (finite differences amplify noise)."""

_BOX_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


def convex_hull(points: np.ndarray) -> np.ndarray:
    """The convex hull of 2-D ``points`` [N, 2], counter-clockwise, without repeated points."""
    pts = np.unique(np.round(np.asarray(points, dtype=float), 9), axis=0)
    if len(pts) <= 2:
        return pts

    def cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))

    def chain(sequence: np.ndarray) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for p in sequence:
            while len(out) >= 2 and cross(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = chain(pts), chain(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _distance_to_segment(point: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ab = b - a
    t = 0.0 if not ab.any() else float(np.clip(np.dot(point - a, ab) / np.dot(ab, ab), 0.0, 1.0))
    return float(np.linalg.norm(point - (a + t * ab)))


def signed_margin(point: np.ndarray, hull: np.ndarray) -> float:
    """How far ``point`` lies inside the convex polygon ``hull`` (counter-clockwise): the distance to
    its nearest edge, positive inside, negative outside. A hull of one or two points has no inside."""
    point = np.asarray(point, dtype=float)
    edges = list(zip(hull, np.roll(hull, -1, axis=0), strict=True)) if len(hull) > 1 else [(hull[0], hull[0])]
    outside = min(_distance_to_segment(point, a, b) for a, b in edges)
    if len(hull) < 3:
        return -outside
    inside = all((b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) >= 0 for a, b in edges)
    return outside if inside else -outside


def _sole_points(model: mujoco.MjModel, data: mujoco.MjData, geom: int, low: float) -> np.ndarray:
    """The xy of the corners of ``geom``'s bounding box that lie on the floor with its lowest point."""
    centre, half = model.geom_aabb[geom, :3], model.geom_aabb[geom, 3:]
    rot = data.geom_xmat[geom].reshape(3, 3)
    corners = data.geom_xpos[geom] + (centre + _BOX_CORNERS * half) @ rot.T
    # the box around a round or meshed sole is larger than the sole: keep the lowest face only
    return corners[corners[:, 2] <= max(low, corners[:, 2].min()) + CONTACT_TOL, :2]


def balance_margins(
    model: mujoco.MjModel,
    indices: RobotIndices,
    foot_body_ids: np.ndarray,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
    fps: float,
) -> np.ndarray:
    """[T] signed distance (m) of each frame's ZMP to the edge of the planted feet's support polygon:
    positive inside, negative outside, NaN where the feet alone do not carry the robot."""
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
        points = np.concatenate([_sole_points(model, data, g, low[g]) for g in np.flatnonzero(touching)])
        hulls.append(convex_hull(points))
    dt = 1.0 / fps
    acc = np.gradient(np.gradient(com[:, :2], dt, axis=0), dt, axis=0) if frames > 2 else np.zeros((frames, 2))
    if frames >= SMOOTHING_FRAMES:
        kernel = np.ones(SMOOTHING_FRAMES) / SMOOTHING_FRAMES
        acc = np.stack([np.convolve(acc[:, k], kernel, mode="same") for k in range(2)], axis=1)
    zmp = com[:, :2] - com[:, 2:3] / GRAVITY * acc
    return np.array([np.nan if hull is None else signed_margin(zmp[t], hull) for t, hull in enumerate(hulls)])
