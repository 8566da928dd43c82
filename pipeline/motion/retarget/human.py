"""A human motion as the retargeter reads it: global joint positions T × J × 3, in metres, z up.

Every reader (``sources``) returns one, and ``check_human`` refuses what cannot be retargeted,
each time naming the file and the fix: no frames, a frame rate that is not a positive number,
NaN or infinite positions, centimetres where metres were expected (a person taller than 3 m),
and a skeleton without feet.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ...errors import MotionError
from .skeletons import FOOT_ROLES, Skeleton

HEAD_JOINT_HEIGHT = 0.888
"""The head joint of SMPL-style and BVH skeletons sits at about this fraction of the person's
stature (OMOMO's two demo subjects, whose statures are known: 0.889 and 0.887)."""
TALLEST_PERSON_M = 3.0
SHORTEST_PERSON_M = 0.5
UNIT_SCALES = {"m": 1.0, "cm": 0.01, "mm": 0.001, "in": 0.0254}


class RetargetError(MotionError):
    """A human motion, a joint map or a retarget option that cannot be used (exit code 5, like every
    motion problem); the message names the file and the fix."""


@dataclass
class HumanMotion:
    """Global joint positions of a person. Metres, z up, the floor near z = 0 (not required)."""

    names: tuple[str, ...]
    positions: np.ndarray
    """[T, J, 3] m."""
    fps: float
    source: Path
    skeleton: Skeleton | None = None
    height: float | None = None
    """The person's stature in m when the file says it (the .npz's ``height``)."""
    notes: list[str] = field(default_factory=list)
    """What the reader assumed (units, up axis, frame rate), for the command to print."""

    @property
    def num_frames(self) -> int:
        return int(self.positions.shape[0])

    def index(self, name: str) -> int:
        return self.names.index(name)

    def track(self, name: str) -> np.ndarray:
        """[T, 3] positions of one joint."""
        return self.positions[:, self.index(name)]


def time_window(human: HumanMotion, start_s: float | None = None,
                end_s: float | None = None) -> HumanMotion:
    """The frames of ``human`` from ``start_s`` to ``end_s`` (seconds from the source's first frame;
    None: its first or last frame), for a clip whose first or last frames a robot cannot do (a
    recording that starts mid-motion, bent over a box)."""
    if start_s is None and end_s is None:
        return human
    duration = (human.num_frames - 1) / human.fps
    start = 0.0 if start_s is None else float(start_s)
    end = duration if end_s is None else float(end_s)
    if not (np.isfinite(start) and np.isfinite(end)) or start < 0 or end <= start:
        raise RetargetError(f"{human.source}: --start {start:g} s / --end {end:g} s is not a "
                            f"window of the clip (0 to {duration:.2f} s)",
                            fix="give 0 <= --start < --end, in seconds from the clip's first frame")
    first = int(np.ceil(start * human.fps - 1e-9))
    last = min(int(np.floor(end * human.fps + 1e-9)), human.num_frames - 1)
    if last - first < 1:
        raise RetargetError(f"{human.source}: --start {start:g} s / --end {end:g} s leaves fewer "
                            f"than 2 frames of the {duration:.2f} s clip",
                            fix="choose a window inside the clip, at least two frames long")
    note = f"frames {first}–{last} of the source ({first / human.fps:.2f}–{last / human.fps:.2f} s)"
    return replace(human, positions=human.positions[first:last + 1].copy(),
                   notes=[*human.notes, note])


def y_up_to_z_up(positions: np.ndarray) -> np.ndarray:
    """BVH's y-up, z-forward world to ours: x stays, y becomes z (up), z becomes −y."""
    return np.stack((positions[..., 0], -positions[..., 2], positions[..., 1]), axis=-1)


def check_fps(fps: float, source: Path | str) -> float:
    if fps is None or not np.isfinite(fps) or fps <= 0:
        raise RetargetError(
            f"{source}: frame rate {fps} is not a positive number",
            fix="pass the rate the motion was captured at, e.g. --fps 30 (OMOMO, AMASS as "
                "prepared) or 120",
        )
    return float(fps)


def feet_joints(human: HumanMotion, roles: dict[str, str]) -> dict[str, list[str]]:
    """side → the skeleton's foot joints (ankle, toe) present in the file."""
    return {side: [roles[r] for r in foot if r in roles and roles[r] in human.names]
            for side, foot in FOOT_ROLES.items()}


def stature_estimate(human: HumanMotion, roles: dict[str, str]) -> float | None:
    """The person's stature from the skeleton: the head joint's height above the feet's lowest
    point in the frames where it is highest (the person standing), divided by
    ``HEAD_JOINT_HEIGHT``."""
    head = roles.get("head")
    feet = [j for joints in feet_joints(human, roles).values() for j in joints]
    if head not in human.names or not feet:
        return None
    floor = np.min([human.track(j)[:, 2] for j in feet], axis=0)
    standing = np.percentile(human.track(head)[:, 2] - floor, 95)
    return float(standing / HEAD_JOINT_HEIGHT)


def leg_length(points: dict[str, np.ndarray]) -> float | None:
    """Hip to knee plus knee to ankle, the mean over the sides that have all three; ``points``:
    role → a [3] point or a [T, 3] track (each segment's median length over the frames). None
    where no side has all three. The person's (tracks) and the robot's (its standing pose) go
    through this one measure, so the legs' scale compares like with like."""
    sides = []
    for side in ("left", "right"):
        chain = [points.get(f"{side}_{part}") for part in ("hip", "knee", "ankle")]
        if any(p is None for p in chain):
            continue
        sides.append(sum(float(np.median(np.linalg.norm(np.asarray(a) - np.asarray(b), axis=-1)))
                         for a, b in zip(chain[:-1], chain[1:], strict=True)))
    return float(np.mean(sides)) if sides else None


def check_human(human: HumanMotion, roles: dict[str, str]) -> None:
    """Refuse a motion that cannot be retargeted, naming the file, frame or joint, and the fix."""
    pos = human.positions
    if pos.ndim != 3 or pos.shape[-1] != 3 or pos.shape[1] != len(human.names):
        raise RetargetError(f"{human.source}: positions have shape {pos.shape}, expected (T, "
                            f"{len(human.names)}, 3)",
                            fix="store global joint positions as frames × joints × xyz")
    if human.num_frames < 2:
        raise RetargetError(f"{human.source}: {human.num_frames} frame(s); a motion needs at least "
                            "2",
                            fix="export the whole clip")
    check_fps(human.fps, human.source)
    bad = ~np.isfinite(pos)
    if bad.any():
        frame, joint = (int(i) for i in np.argwhere(bad.any(axis=2))[0])
        raise RetargetError(
            f"{human.source}: joint {human.names[joint]!r} is NaN or infinite at frame {frame} "
            f"({int(bad.any(axis=2).any(axis=1).sum())} frame(s) in all)",
            fix="fill the gaps in the capture (interpolate the missing markers) or cut those "
                "frames out",
        )
    feet = feet_joints(human, roles)
    missing = [side for side, joints in feet.items() if not joints]
    if missing:
        raise RetargetError(
            f"{human.source}: the skeleton has no {' or '.join(missing)} foot (no ankle or toe "
            "joint"
            f"{' named in the map' if human.skeleton is None else ''}); a robot's feet cannot be "
            "placed without it",
            fix="retarget a full-body capture, or give the map `roles:` naming each side's ankle "
                "(and toe) joint",
        )
    tall = stature_estimate(human, roles)
    if tall is not None and tall > TALLEST_PERSON_M:
        raise RetargetError(
            f"{human.source}: the person would be {tall:.1f} m tall: the positions look like "
            "centimetres "
            "(or millimetres), where metres were expected",
            fix="pass --units cm (or mm), or save the positions in metres",
        )
    if tall is not None and tall < SHORTEST_PERSON_M:
        raise RetargetError(
            f"{human.source}: the person would be {tall:.2f} m tall: the positions are not in "
            "metres",
            fix="pass --units (cm, mm, in) or --height with the person's stature in the file's "
                "units",
        )
