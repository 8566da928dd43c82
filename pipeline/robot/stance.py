"""Standing balance: the support polygon of the feet, and where the centre of mass stands over it.

A robot standing still stays up only while its centre of mass projects inside
the convex hull of its feet's contacts with the floor (the support polygon),
and it stands reliably under its servos alone only when the projection is
well inside it: over the middle half of the polygon (``CENTRE_SHARE``).
``robots check`` (``balance``) asks for that in the standing keyframe and
prints the lean that gives it; ``robots new`` applies that lean to a standing
pose it had to guess (a model without a keyframe stands with every joint at
0, which leaves the Menagerie H1 with its centre of mass 1 cm in front of its
heels: it topples backwards under any gains). motion/balance.py judges a
motion's zero-moment point against the same polygon (docs/robots.md, "Gains").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from .kinematics import geom_vertical_extent, robot_geoms
from .statics import GRAVITY, is_ancestor

CONTACT_TOL = 0.01
"""m: a foot whose lowest point is this close to z = 0 rests on the floor."""
CENTRE_SHARE = 0.5
"""A robot stands under its servos when its centre of mass is over this share of the support polygon
(the polygon shrunk about its centroid by this factor)."""
LATERAL_AXIS_COS = math.cos(math.radians(25))
"""A leg joint whose axis is within 25° of the robot's sideways axis pitches the leg (hip, knee,
ankle pitch)."""
MAX_LEAN = 0.35
"""rad: the largest lean ``balancing_lean`` tries by default (a standing pose)."""
LEAN_STEP = 0.05
"""rad between the leans ``balancing_lean`` tries before it narrows down on the one that centres
the robot."""

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
    """How far ``point`` lies inside the convex polygon ``hull`` (counter-clockwise): the distance
    to its nearest edge, positive inside, negative outside. A hull of one or two points has no
    inside."""
    point = np.asarray(point, dtype=float)
    edges = (
        list(zip(hull, np.roll(hull, -1, axis=0), strict=True))
        if len(hull) > 1
        else [(hull[0], hull[0])]
    )
    outside = min(_distance_to_segment(point, a, b) for a, b in edges)
    if len(hull) < 3:
        return -outside
    inside = all((b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) >= 0
                 for a, b in edges)
    return outside if inside else -outside


def polygon_centroid(hull: np.ndarray) -> np.ndarray:
    """The area centroid of a counter-clockwise polygon (the mean of its points when it has no
    area)."""
    x, y = hull[:, 0], hull[:, 1]
    cross = x * np.roll(y, -1) - np.roll(x, -1) * y
    area = cross.sum() / 2
    if len(hull) < 3 or abs(area) < 1e-12:
        return hull.mean(axis=0)
    return np.array(
        [((x + np.roll(x, -1)) * cross).sum(), ((y + np.roll(y, -1)) * cross).sum()]
    ) / (6 * area)


def sole_points(model: mujoco.MjModel, data: mujoco.MjData, geom: int, low: float) -> np.ndarray:
    """The xy of the corners of ``geom``'s bounding box that lie on the floor with its lowest
    point."""
    centre, half = model.geom_aabb[geom, :3], model.geom_aabb[geom, 3:]
    rot = data.geom_xmat[geom].reshape(3, 3)
    corners = data.geom_xpos[geom] + (centre + _BOX_CORNERS * half) @ rot.T
    # the box around a round or meshed sole is larger than the sole: keep the lowest face only
    return corners[corners[:, 2] <= max(low, corners[:, 2].min()) + CONTACT_TOL, :2]


def support_polygon(model: mujoco.MjModel, data: mujoco.MjData, feet) -> np.ndarray | None:
    """The convex hull (xy) of the collision geoms of the ``feet`` bodies resting on the floor (z =
    0) in the pose of ``data`` (``mj_kinematics`` done); None when no foot touches it."""
    on_foot = robot_geoms(model) & np.isin(model.geom_bodyid, list(feet))
    low = geom_vertical_extent(model, data)[0]
    touching = np.flatnonzero(on_foot & (low <= CONTACT_TOL))
    if not len(touching):
        return None
    return convex_hull(np.concatenate([sole_points(model, data, g, low[g]) for g in touching]))


def centre_of_mass(model: mujoco.MjModel, data: mujoco.MjData, root: int) -> np.ndarray:
    """The world position of the centre of mass of ``root``'s subtree (``mj_kinematics`` done)."""
    bodies = [b for b in range(1, model.nbody) if is_ancestor(model, root, b)]
    mass = model.body_mass[bodies]
    return (data.xipos[bodies] * mass[:, None]).sum(axis=0) / mass.sum()


@dataclass
class Balance:
    """The centre of mass over the support polygon in one pose."""

    hull: np.ndarray
    com: np.ndarray
    """xy of the centre of mass."""
    centroid: np.ndarray
    """xy of the support polygon's centroid."""
    edge_margin: float
    """m from the centre of mass to the polygon's nearest edge, positive inside."""
    margin: float
    """m from the centre of mass to the edge of the polygon's middle share (``CENTRE_SHARE``),
    positive inside."""

    @property
    def stands(self) -> bool:
        return self.margin >= 0


def standing_balance(model: mujoco.MjModel, data: mujoco.MjData, root: int, feet) -> Balance | None:
    """Where the centre of mass stands over the feet in the pose of ``data``; None when no foot
    touches the floor."""
    hull = support_polygon(model, data, feet)
    if hull is None:
        return None
    com = centre_of_mass(model, data, root)[:2]
    centroid = polygon_centroid(hull)
    # the middle share of the polygon is the polygon shrunk about its centroid: a point is that far
    # inside it when the point pushed out from the centroid by 1 / share is share × as far inside
    # the whole
    pushed = centroid + (com - centroid) / CENTRE_SHARE
    return Balance(hull, com, centroid, signed_margin(com, hull),
                   CENTRE_SHARE * signed_margin(pushed, hull))


FALLEN_HEIGHT = 0.6
"""A robot whose anchor body ends below this fraction of its starting height has fallen."""
FALLEN_TILT_COS = 0.5
"""... and so has one whose root's vertical axis ends tilted more than 60° (cosine below this)."""


def holds_pose(model: mujoco.MjModel, data: mujoco.MjData, seconds: float, anchor: int,
               root: int) -> tuple[float, float, bool]:
    """Step ``data`` (its state and ``ctrl`` set: the servos' targets) for ``seconds`` with no
    policy: (the anchor body's height before, after, whether the robot fell)."""
    start = float(data.xpos[anchor, 2])
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)
    end = float(data.xpos[anchor, 2])
    upright = float(data.xmat[root].reshape(3, 3)[2, 2])
    return start, end, end < FALLEN_HEIGHT * start or upright < FALLEN_TILT_COS


MAX_SAG = 0.05
"""rad: the most a servo may give under the torque of standing still (``standing_torques``): the
scaffold's servos are at least that torque / MAX_SAG stiff (bent knees need more than their
gravity stiffness asks), and ``robots check`` names the joints that give more on one foot."""


def standing_torques(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], root: int,
                     feet) -> np.ndarray:
    """N·m per joint: the torque about its axis that holds the pose of ``data`` (``mj_kinematics``
    done) standing still on the floor. The floor carries the robot's weight under its feet, shared
    between two feet by where the centre of mass lies between them (each foot's share acts at its
    sole's centre, moved by the centre of mass's offset from the line between the soles); a joint on
    the way to a foot holds what lies below it against that reaction, any other joint holds its limb
    against gravity. A servo of stiffness kp sags by about this / kp: bent knees carry the most."""
    feet = list(feet)
    robot = [b for b in range(1, model.nbody) if is_ancestor(model, root, b)]
    weight = float(model.body_mass[robot].sum()) * GRAVITY
    hulls = [support_polygon(model, data, [foot]) for foot in feet]
    standing = [k for k, hull in enumerate(hulls) if hull is not None]
    com = centre_of_mass(model, data, root)[:2]
    reactions = {}  # foot index → (xy where the floor pushes, N)
    if len(standing) == 1:
        reactions[standing[0]] = (com, weight)
    elif standing:
        a, b = (polygon_centroid(hulls[k]) for k in standing[:2])
        line = b - a
        share = float(np.clip((com - a) @ line / max(line @ line, 1e-12), 0.0, 1.0))
        across = com - (a + share * line)
        reactions[standing[0]] = (a + across, (1 - share) * weight)
        reactions[standing[1]] = (b + across, share * weight)
    out = np.empty(len(joints))
    for k, j in enumerate(joints):
        below = [b for b in robot if is_ancestor(model, int(model.jnt_bodyid[j]), b)]
        anchor = data.xanchor[j]
        torque = sum((np.cross(data.xipos[b] - anchor, [0.0, 0.0, -model.body_mass[b] * GRAVITY])
                      for b in below),
                     np.zeros(3))
        for f, (point, force) in reactions.items():
            if feet[f] in below:
                torque = torque + np.cross(np.array([point[0], point[1], 0.0]) - anchor,
                                           [0.0, 0.0, force])
        out[k] = abs(float(data.xaxis[j] @ torque) / np.linalg.norm(data.xaxis[j]))
    return out


def on_floor(model: mujoco.MjModel, qpos: np.ndarray, free_joint: int) -> np.ndarray:
    """``qpos`` with the free joint's height moved so that the robot's lowest collision point is at
    z = 0."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    low = geom_vertical_extent(model, data)[0][robot_geoms(model)].min()
    data.qpos[model.jnt_qposadr[free_joint] + 2] -= low
    return data.qpos.copy()


@dataclass
class Lean:
    """Joint changes that tilt the robot over its flat feet: hip pitch −δ and ankle pitch +δ per
    leg."""

    angle: float
    """δ, rad, about the robot's sideways axis."""
    changes: dict[int, tuple[float, float]]
    """joint id → (angle before, angle after)."""
    qpos: np.ndarray
    """The leaned pose, standing on the floor."""
    balance: Balance


def leg_pitch_joints(model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], root: int,
                     feet) -> list[list[tuple[int, float]]] | None:
    """Per foot, the joints between the root and the foot that pitch the leg (axis within 25° of the
    robot's sideways axis: hip pitch, knee, ankle pitch), root first, each with the sign of its axis
    along the robot's left (a joint angle times it is the leg's pitch about the left axis); None
    when a leg has fewer than two. ``joints`` are in MJCF order, which runs down each limb."""
    forward = _forward(model, data, root)
    left = np.cross([0.0, 0.0, 1.0], forward)
    legs = []
    for foot in feet:
        chain = [j for j in joints if is_ancestor(model, int(model.jnt_bodyid[j]), foot)
                 and is_ancestor(model, root, int(model.jnt_bodyid[j]))]
        pitch = [(int(j), float(np.sign(data.xaxis[j] @ left))) for j in chain
                 if abs(data.xaxis[j] @ left) >= LATERAL_AXIS_COS * np.linalg.norm(data.xaxis[j])]
        if len(pitch) < 2:
            return None
        legs.append(pitch)
    return legs


def _forward(model: mujoco.MjModel, data: mujoco.MjData, root: int) -> np.ndarray:
    """The root's forward (x) axis, horizontal and of unit length."""
    forward = data.xmat[root].reshape(3, 3)[:, 0].copy()
    forward[2] = 0.0
    return forward / np.linalg.norm(forward)


def balancing_lean(model: mujoco.MjModel, qpos: np.ndarray, free_joint: int, joints: list[int],
                   root: int,
                   feet, bend: dict[int, float] | None = None,
                   max_lean: float = MAX_LEAN) -> Lean | None:
    """The lean δ (hip pitch −δ and ankle pitch +δ about the robot's sideways axis, so the feet stay
    flat and the trunk upright) that puts the centre of mass over the middle of the support polygon
    front to back, found by bisection within ±``max_lean``; None when a leg has no two pitch joints
    or no foot touches the floor. ``bend`` (joint id → change, e.g. the knees of a squat) is applied
    too, the ankles turning so that the feet stay flat. When no lean within ``max_lean`` centres it,
    the one that comes nearest: its ``balance`` says how far off it is."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    legs = leg_pitch_joints(model, data, joints, root, list(feet))
    if legs is None:
        return None
    forward = _forward(model, data, root)
    bend = bend or {}

    def leaned(delta: float) -> tuple[np.ndarray, dict[int, tuple[float, float]]]:
        out, changes = qpos.copy(), {}
        for leg in legs:
            (hip, hip_sign), (ankle, ankle_sign) = leg[0], leg[-1]
            # the leg's pitch from the bent joints
            bent = sum(bend.get(j, 0.0) * sign for j, sign in leg)
            moves = {j: bend[j] for j, _ in leg if j in bend}
            moves[hip] = moves.get(hip, 0.0) - delta * hip_sign
            moves[ankle] = moves.get(ankle, 0.0) + (delta - bent) * ankle_sign
            for joint, change in moves.items():
                adr = model.jnt_qposadr[joint]
                after = qpos[adr] + change
                if model.jnt_limited[joint]:
                    after = float(np.clip(after, *model.jnt_range[joint]))
                out[adr] = after
                changes[int(joint)] = (float(qpos[adr]), float(after))
        return on_floor(model, out, free_joint), changes

    def offset(delta: float) -> tuple[float, Balance | None]:
        data.qpos[:] = leaned(delta)[0]
        mujoco.mj_kinematics(model, data)
        balance = standing_balance(model, data, root, feet)
        return (
            (np.nan, None)
            if balance is None
            else (float((balance.com - balance.centroid) @ forward[:2]), balance)
        )

    # leans where the feet carry the robot (a deep lean can lift a sole, or bring a shin down to the
    # floor)
    grid = np.linspace(-max_lean, max_lean, 2 * round(max_lean / LEAN_STEP) + 1)
    found = [(float(d), f) for d in grid if np.isfinite(f := offset(float(d))[0])]
    if not found:
        return None
    brackets = [(a, fa, b) for (a, fa), (b, fb) in zip(found, found[1:], strict=False)
                if np.sign(fa) != np.sign(fb) and b - a < 1.5 * (grid[1] - grid[0])]
    if brackets:  # the centre of mass crosses the middle: the crossing nearest no lean
        lo, f_lo, hi = min(brackets, key=lambda bracket: abs(bracket[0] + bracket[2]))
    else:  # it cannot be centred: lean as far as helps most
        lo = hi = min(found, key=lambda item: abs(item[1]))[0]
        f_lo = offset(lo)[0]
    for _ in range(30):
        if hi - lo < 1e-4:
            break
        mid = (lo + hi) / 2
        f_mid = offset(mid)[0]
        if np.sign(f_mid) == np.sign(f_lo):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    delta = round((lo + hi) / 2, 3)
    pose, changes = leaned(delta)
    balance = offset(delta)[1]
    return None if balance is None else Lean(delta, changes, pose, balance)
