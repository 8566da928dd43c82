"""The IK targets of a retarget: the person's joints resampled to 50 fps, smoothed, turned to face
+x from the origin, scaled to the robot, the feet held still while they are planted.

The pelvis and the legs' joints move by one affine map from the person's world to the robot's,
``leg_scale · R(−heading₀) · (p − start)``, with z measured from a floor level chosen so that a
resting ankle maps to the height of the robot's foot body when its sole is flat on the floor: the
feet land flat and the pelvis is as high above them as that scale makes it. The rest of the body
keeps its place around the pelvis, scaled by the height ratio (``scale``). ``leg_scale`` is robot
leg length / the person's (``--scale legs``, the default; ``--scale height``: the height ratio
too), for a robot whose legs are a larger share of its height than a person's: the G1's are
0.90 of a 1.65 m person's by length and 0.80 by height, so by height its pelvis comes 7 cm low and
it walks with its knees bent 0.83 rad. Each foot's targets then move up or down by what its own
resting ankle is off that level: a person's two ankles rarely rest at one height (the G1's scale
turned the 1.6 cm of an OMOMO subject into one planted foot 1.1 cm in the air, where the balance
check does not count it as support). Orientation targets come from segment frames of the
positions (``segment_frames``) times the body's orientation in the robot's standing pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ...rotations import quat_mul
from .foot_contacts import detect_contacts, horizontal_speed, lock_contacts
from .human import HumanMotion
from .maps import RetargetMap

LEG_ROLES = ("pelvis", *(f"{side}_{part}" for side in ("left", "right")
                         for part in ("hip", "knee", "ankle", "toe")))
"""The joints that move with the legs' scale (the module's docstring)."""
SMOOTHING_S = 0.03
"""Gaussian smoothing (standard deviation, s) of the joint positions before IK: removes capture
jitter."""
REST_PERCENTILE = 5
"""A foot joint's resting height is this percentile of its height over the clip."""
PITCH_FADE_M = 0.1
"""m (the person's): a swinging foot keeps the person's pitch from this height above its resting
level up, and lands flat (the pitch fades to 0 at the floor)."""


def resample_positions(positions: np.ndarray, fps: float, target_fps: float) -> np.ndarray:
    """[T', J, 3] linearly interpolated at k / target_fps for every k within the clip."""
    frames = len(positions)
    duration = (frames - 1) / fps
    count = int(np.floor(duration * target_fps + 1e-6)) + 1
    where = np.arange(count) / target_fps * fps
    lower = np.minimum(np.floor(where + 1e-9).astype(int), frames - 1)
    upper = np.minimum(lower + 1, frames - 1)
    blend = (where - lower)[:, None, None]
    return positions[lower] + blend * (positions[upper] - positions[lower])


def gaussian_smooth(values: np.ndarray, sigma_frames: float) -> np.ndarray:
    """Smooth along axis 0 with a Gaussian of ``sigma_frames``; the ends are padded by
    reflection."""
    if sigma_frames <= 0 or len(values) < 3:
        return np.array(values, dtype=float)
    radius = int(np.ceil(3 * sigma_frames))
    kernel = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma_frames) ** 2)
    kernel /= kernel.sum()
    flat = np.asarray(values, dtype=float).reshape(len(values), -1)
    padded = np.pad(flat, ((radius, radius), (0, 0)),
                    mode="reflect" if len(values) > radius else "edge")
    out = np.stack([np.convolve(padded[:, k], kernel, mode="valid") for k in range(flat.shape[1])],
                   axis=1)
    return out.reshape(values.shape)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-9)


def frame_from_axes(lateral: np.ndarray, up: np.ndarray) -> np.ndarray:
    """[..., 3, 3] rotation whose y is ``lateral`` (left) and whose z is ``up`` made orthogonal to
    it."""
    y = _unit(lateral)
    z = _unit(up - np.sum(up * y, axis=-1, keepdims=True) * y)
    return np.stack((np.cross(y, z), y, z), axis=-1)


def heading_frame(forward: np.ndarray) -> np.ndarray:
    """[..., 3, 3] upright rotation whose x is ``forward`` projected on the floor."""
    flat = np.array(forward, dtype=float)
    flat[..., 2] = 0.0
    x = _unit(flat)
    z = np.broadcast_to([0.0, 0.0, 1.0], x.shape)
    return np.stack((x, np.cross(z, x), z), axis=-1)


def foot_pitch(ankle: np.ndarray, toe: np.ndarray, contact: np.ndarray) -> np.ndarray:
    """[T] how far (rad) the foot points further down than it does planted (heel raised: positive),
    from the ankle → toe direction against its median while in contact; 0 while in contact (held
    flat)."""
    d = toe - ankle
    angle = np.arctan2(-d[:, 2], np.linalg.norm(d[:, :2], axis=-1))
    rest = np.median(angle[contact]) if contact.any() else np.median(angle)
    return np.where(contact, 0.0, angle - rest)


def pitch_about_y(angle: np.ndarray) -> np.ndarray:
    """[T, 3, 3] rotations by ``angle`` about the local y axis (positive: x tips down)."""
    c, s = np.cos(angle), np.sin(angle)
    zero, one = np.zeros_like(angle), np.ones_like(angle)
    return np.stack(
        (np.stack((c, zero, s), -1), np.stack((zero, one, zero), -1), np.stack((-s, zero, c), -1)),
        -2,
    )


def segment_frames(positions: np.ndarray, names: tuple[str, ...],
                   roles: dict[str, str]) -> dict[str, np.ndarray]:
    """role → [T, 3, 3] world rotation, for the roles positions define (an upright person facing +x:
    identity): the pelvis (hips, and pelvis → spine for up), the chest (shoulders, spine → neck) and
    each ankle (flat, heading from the ankle to the toe; ``build_targets`` adds the swing's
    pitch)."""
    def track(role):
        name = roles.get(role)
        return positions[:, names.index(name)] if name in names else None

    frames = {}
    pelvis, spine, chest, neck = track("pelvis"), track("spine"), track("chest"), track("neck")
    lhip, rhip, lsh, rsh = (
        track("left_hip"),
        track("right_hip"),
        track("left_shoulder"),
        track("right_shoulder"),
    )
    if pelvis is not None and lhip is not None and rhip is not None:
        above = spine if spine is not None else (chest if chest is not None else neck)
        up = above - pelvis if above is not None else np.broadcast_to([0.0, 0.0, 1.0], pelvis.shape)
        frames["pelvis"] = frame_from_axes(lhip - rhip, up)
    if lsh is not None and rsh is not None:
        low = spine if spine is not None else pelvis
        high = neck if neck is not None else chest
        if low is not None and high is not None:
            frames["chest"] = frame_from_axes(lsh - rsh, high - low)
    for side in ("left", "right"):
        ankle, toe = track(f"{side}_ankle"), track(f"{side}_toe")
        if ankle is not None and toe is not None:
            frames[f"{side}_ankle"] = heading_frame(toe - ankle)
    return frames


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """[..., 4] w x y z of rotation matrices [..., 3, 3] (MuJoCo's conversion)."""
    flat = np.asarray(m, dtype=float).reshape(-1, 9)
    out = np.empty((len(flat), 4))
    for k, row in enumerate(flat):
        mujoco.mju_mat2Quat(out[k], row)
    return out.reshape(*np.shape(m)[:-2], 4)


@dataclass
class Targets:
    """What the IK follows, at ``fps``: per mapped entry a position and an orientation per frame."""

    fps: float
    scale: float
    """Robot height / the person's: the body around the pelvis."""
    leg_scale: float
    """The pelvis and the legs' scale: the height ratio, or robot leg length / the person's
    (``--scale legs``)."""
    bodies: list[str]
    positions: np.ndarray
    """[T, E, 3] m, robot world."""
    quats: np.ndarray
    """[T, E, 4] w x y z."""
    position_cost: np.ndarray
    """[E]."""
    orientation_cost: np.ndarray
    """[E]."""
    orientation_scale: np.ndarray
    """[T, E]: feet orientations count fully in contact, a quarter while swinging."""
    contact: dict[str, np.ndarray]
    """side → [T] bool, the person's foot planted."""
    foot_entries: dict[str, list[int]]
    """side → the entries that pull the robot's foot on that side."""
    skeleton: np.ndarray
    """[T, J, 3] the person's joints in the robot's world (scaled, aligned), for the side-by-side
    video."""


SWING_ORIENTATION = 0.25


def build_targets(human: HumanMotion, roles: dict[str, str], retarget_map: RetargetMap, *,
                  stature: float,
                  robot_height: float, foot_rest_height: dict[str, float],
                  body_rest_quat: dict[str, np.ndarray],
                  leg_scale: float | None = None,
                  fps: float = 50.0, align: bool = True) -> Targets:
    """Targets for every map entry (see the module's docstring); ``leg_scale``: robot leg length /
    the person's (None: the height ratio for the legs too); ``foot_rest_height``: side → the
    robot's foot body height when its sole is flat on the floor; ``body_rest_quat``: body → its
    orientation in the standing pose with the root upright and facing +x."""
    names = human.names
    pos = resample_positions(human.positions, human.fps, fps)
    pos = gaussian_smooth(pos, SMOOTHING_S * fps)
    scale = robot_height / stature
    leg_scale = scale if leg_scale is None else float(leg_scale)
    frames = segment_frames(pos, names, roles)
    pelvis = (
        pos[:, names.index(roles["pelvis"])] if roles.get("pelvis") in names else pos.mean(axis=1)
    )
    start, heading = pelvis[0].copy(), 0.0
    if align and "pelvis" in frames:
        heading = float(np.arctan2(frames["pelvis"][0, 1, 0], frames["pelvis"][0, 0, 0]))
    c, s = np.cos(-heading), np.sin(-heading)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    # the person's feet: contact from the height above each foot's resting level and its speed
    sides = {side: [roles[r] for r in (f"{side}_ankle", f"{side}_toe") if roles.get(r) in names]
             for side in ("left", "right")}
    rest = {j: float(np.percentile(pos[:, names.index(j), 2], REST_PERCENTILE))
            for js in sides.values() for j in js}
    contact, lift = {}, {}
    for side, joints in sides.items():
        lift[side] = np.min([pos[:, names.index(j), 2] - rest[j] for j in joints], axis=0)
        contact[side] = detect_contacts(lift[side],
                                        horizontal_speed(pos[:, names.index(joints[0])], fps), fps)
    # a swinging foot pitches as the person's does (heel up, toes down), less the nearer it is to
    # the floor: pitched at the floor, the robot's longer sole would reach below it
    for side, joints in sides.items():
        if f"{side}_ankle" in frames and len(joints) == 2:
            tilt = foot_pitch(pos[:, names.index(joints[0])], pos[:, names.index(joints[1])],
                              contact[side])
            tilt = tilt * np.clip(lift[side] / PITCH_FADE_M, 0.0, 1.0)
            frames[f"{side}_ankle"] = frames[f"{side}_ankle"] @ pitch_about_y(tilt)
    # the floor level: a resting ankle maps to the robot's foot height with the sole flat
    ankles = [(side, joints[0]) for side, joints in sides.items()]
    floor = float(np.mean([rest[j] - foot_rest_height[side] / leg_scale for side, j in ankles]))
    origin = np.array([start[0], start[1], floor])
    mapped = (pos - origin) @ turn.T * leg_scale
    legs = [names.index(roles[r]) for r in LEG_ROLES if roles.get(r) in names]
    body = [j for j in range(len(names)) if j not in legs]
    mapped[:, body] = ((pelvis - origin) @ turn.T * leg_scale)[:, None] \
        + (pos[:, body] - pelvis[:, None]) @ turn.T * scale
    rotations = {role: turn @ f for role, f in frames.items()}
    role_of = {j: r for r, j in roles.items()}

    entries = retarget_map.entries
    count = len(mapped)
    positions = np.empty((count, len(entries), 3))
    quats = np.empty((count, len(entries), 4))
    orientation_scale = np.ones((count, len(entries)))
    foot_entries: dict[str, list[int]] = {"left": [], "right": []}
    # each foot on its own floor: the shift that puts its resting ankle at the robot's foot height
    foot_shift = {side: foot_rest_height[side] - (rest[ankle] - floor) * leg_scale
                  for side, ankle in ankles}
    for e, entry in enumerate(entries):
        track = mapped[:, names.index(entry.joint)]
        side = next((sd for sd, js in sides.items() if entry.joint in js), None)
        if side is not None:
            foot_entries[side].append(e)
            track = track + [0.0, 0.0, foot_shift[side]]
            rest_z = (rest[entry.joint] - floor) * leg_scale + foot_shift[side]
            track = lock_contacts(track, contact[side], fps, rest_z=rest_z)
            orientation_scale[:, e] = np.where(contact[side], 1.0, SWING_ORIENTATION)
        positions[:, e] = track
        role = role_of.get(entry.joint)
        if side is not None:
            role = f"{side}_ankle"
        rest_quat = body_rest_quat[entry.body]
        if role in rotations:
            quats[:, e] = quat_mul(matrix_to_quat(rotations[role]),
                                   np.broadcast_to(rest_quat, (count, 4)))
        else:
            quats[:, e] = rest_quat
    return Targets(fps, scale, leg_scale, [e.body for e in entries], positions, quats,
                   np.array([e.position for e in entries]),
                   np.array([e.orientation for e in entries]),
                   orientation_scale, contact, foot_entries, mapped)
