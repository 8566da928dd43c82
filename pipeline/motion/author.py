"""Authoring reference motions from keyframes (``primebot motion author SOURCE.yaml``).

A source file lists keyframes: a time, joint angles by name (unnamed joints
keep the robot's default pose), optionally a root pose. Between keyframes
every quantity follows a minimum-jerk profile (10u³ − 15u⁴ + 6u⁵), so
positions, velocities and accelerations are continuous and each keyframe is
reached at rest. Two corrections make the result physically sensible:

* floor contact: on keyframes with ``floor: true`` (the default) the root
  height is chosen so the robot's lowest point touches the ground; between
  two such keyframes this holds at every frame, so a robot that stands or lies
  neither floats nor sinks;
* planted feet: from a keyframe with ``plant_feet: true`` to the next one,
  the root slides horizontally so the feet stay where they were. Naming
  feet instead (``plant_feet: left_ankle_roll_link`` or a list of the
  robot's ``feet`` bodies) plants only those: the support foot of a step,
  a kick or a knee raise stays put while the other one moves, so
  alternating single-foot plants make the robot walk. A planted foot is
  also kept level: its ankle joints are solved so the sole stays as flat as
  in the default pose (``level_feet``).

Bodies and velocities come from MuJoCo forward kinematics (``kinematics``).
The same source and robot always give the same bytes.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np

from ..errors import MotionError
from ..robot.kinematics import (
    geom_vertical_extent,
    posed_frames,
    robot_geoms,
)
from ..robot.model import RobotIndices, load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from ..rotations import quat_from_euler_xyz, quat_slerp
from .format import Motion, malformed_overrides
from .keyframe_ik import IKTarget, parse_ik, solve_keyframe
from .level_feet import FootLeveller
from .trajectory import motion_from_trajectory
from .yaml_file import read_yaml

KEYFRAME_KEYS = {"time", "pose", "joints", "root", "floor", "plant_feet", "ik", "note"}
SOURCE_KEYS = {"robot", "fps", "angles", "description", "poses", "keyframes", "record", "training"}
"""Top-level keys of a keyframe source. ``record`` holds ``primebot motion record``'s settings
(pipeline/motion/recording.py: the keyframes are joint targets played through the servos and the
simulation recorded); authoring ignores it. ``training`` lists ``KEY=VALUE`` training overrides the
motion file carries (``Motion.training_overrides``)."""


@dataclass
class Keyframe:
    """One authored pose. Angles are in radians here, whatever the source used."""

    time: float
    joints: dict[str, float] = field(default_factory=dict)
    root_pos: np.ndarray | None = None
    """[3] m; None keeps the previous keyframe's root (x, y; z is solved on the floor)."""
    root_rpy: np.ndarray | None = None
    """[3] rad roll-pitch-yaw; None keeps the previous keyframe's."""
    floor: bool = True
    plant_feet: tuple[str, ...] = ()
    """Feet bodies held in place from this keyframe to the next (``True`` in the source: all
    feet)."""
    ik: tuple[IKTarget, ...] = ()
    """Bodies (or the centre of mass) pinned to places; the keyframe's pose is solved for them
    (``keyframe_ik``)."""


@dataclass
class MotionSource:
    """A parsed keyframe source file."""

    path: Path
    robot: str
    fps: float
    keyframes: list[Keyframe]
    description: str = ""
    training: tuple[str, ...] = ()
    """``KEY=VALUE`` training overrides the authored motion carries."""


def minimum_jerk(u: np.ndarray) -> np.ndarray:
    """The minimum-jerk blend s(u) = 10u³ − 15u⁴ + 6u⁵: s(0)=0, s(1)=1, zero slope and curvature at
    both ends."""
    u = np.clip(u, 0.0, 1.0)
    return u**3 * (10.0 + u * (-15.0 + 6.0 * u))


def _where(path: Path, key: str) -> str:
    return f"{path}: {key}"


def _number(path: Path, key: str, value, scale: float = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise MotionError(f"{_where(path, key)} must be a finite number, got {value!r}")
    return float(value) * scale


def _vector(path: Path, key: str, value, scale: float = 1.0) -> np.ndarray:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise MotionError(f"{_where(path, key)} must be a list of 3 numbers, got {value!r}")
    return np.array([_number(path, f"{key}[{i}]", v, scale) for i, v in enumerate(value)])


def _joint_table(path: Path, key: str, table, spec: RobotSpec, scale: float) -> dict[str, float]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise MotionError(f"{_where(path, key)} must map joint names to angles")
    joints = {}
    for name, value in table.items():
        if name not in spec.joint_names:
            close = difflib.get_close_matches(str(name), spec.joint_names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise MotionError(
                f"{_where(path, f'{key}.{name}')}: robot {spec.name!r} has no joint {name!r}{hint}",
                fix=f"use a name from `primebot robots show {spec.name}`",
            )
        joints[name] = _number(path, f"{key}.{name}", value, scale)
    return joints


def _planted_feet(path: Path, key: str, value, spec: RobotSpec) -> tuple[str, ...]:
    """``plant_feet``: true (every foot), false, one foot body's name, or a list of them."""
    if isinstance(value, bool):
        return tuple(spec.feet) if value else ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise MotionError(f"{_where(path, key)} must be true, false, a foot body name or a list of "
                          "them, "
                          f"got {value!r}", fix=f"feet of {spec.name!r}: {', '.join(spec.feet)}")
    for name in names:
        if name not in spec.feet:
            close = difflib.get_close_matches(name, spec.feet, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise MotionError(f"{_where(path, key)}: {name!r} is not one of robot {spec.name!r}'s "
                              f"feet{hint}",
                              fix=f"feet of {spec.name!r}: {', '.join(spec.feet)}")
    return tuple(names)


def load_source(path: str | Path, spec: RobotSpec) -> MotionSource:
    """Parse and check a keyframe source; every problem names the file and key."""
    path = Path(path)
    raw = read_yaml(path, "motion source")
    if not isinstance(raw, dict):
        raise MotionError(f"{path}: expected a mapping with 'keyframes'")
    unknown = set(raw) - SOURCE_KEYS
    if unknown:
        raise MotionError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}",
            fix=f"allowed: {', '.join(sorted(SOURCE_KEYS))}",
        )
    units = raw.get("angles", "rad")
    if units not in ("rad", "deg"):
        raise MotionError(f"{_where(path, 'angles')} must be 'rad' or 'deg', got {units!r}")
    scale = np.pi / 180.0 if units == "deg" else 1.0
    poses = {
        name: _joint_table(path, f"poses.{name}", table, spec, scale)
        for name, table in (raw.get("poses") or {}).items()
    }
    entries = raw.get("keyframes")
    if not isinstance(entries, list) or len(entries) < 2:
        raise MotionError(f"{_where(path, 'keyframes')} must be a list of at least two keyframes")

    keyframes: list[Keyframe] = []
    for i, entry in enumerate(entries):
        key = f"keyframes[{i}]"
        if not isinstance(entry, dict) or "time" not in entry:
            raise MotionError(f"{_where(path, key)} must be a mapping with a 'time'")
        unknown = set(entry) - KEYFRAME_KEYS
        if unknown:
            raise MotionError(f"{_where(path, key)}: unknown key(s) {', '.join(sorted(unknown))}")
        time = _number(path, f"{key}.time", entry["time"])
        if keyframes and time <= keyframes[-1].time:
            raise MotionError(
                f"{_where(path, f'{key}.time')} = {time} must be later than the previous keyframe"
            )
        joints: dict[str, float] = {}
        if "pose" in entry:
            if entry["pose"] not in poses:
                raise MotionError(
                    f"{_where(path, f'{key}.pose')}: no pose named {entry['pose']!r} under 'poses'"
                )
            joints.update(poses[entry["pose"]])
        joints.update(_joint_table(path, f"{key}.joints", entry.get("joints"), spec, scale))
        root = entry.get("root") or {}
        keyframes.append(
            Keyframe(
                time=time,
                joints=joints,
                root_pos=_vector(path, f"{key}.root.pos", root["pos"]) if "pos" in root else None,
                root_rpy=_vector(path, f"{key}.root.rpy", root["rpy"], scale)
                if "rpy" in root
                else None,
                floor=bool(entry.get("floor", True)),
                plant_feet=_planted_feet(path, f"{key}.plant_feet", entry.get("plant_feet", False),
                                         spec),
                ik=parse_ik(_where(path, f"{key}.ik"), entry.get("ik")),
            )
        )
    if keyframes[0].time != 0.0:
        raise MotionError(f"{_where(path, 'keyframes[0].time')} must be 0")
    return MotionSource(
        path=path,
        robot=str(raw.get("robot", spec.name)),
        fps=_number(path, "fps", raw.get("fps", 50)),
        keyframes=keyframes,
        description=str(raw.get("description", "")),
        training=_training_list(path, raw.get("training")),
    )


def _training_list(path: Path, value) -> tuple[str, ...]:
    """``training``: a list of ``KEY=VALUE`` strings, written as for ``--set``."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    malformed = malformed_overrides(items)
    if malformed:
        raise MotionError(f"{_where(path, 'training')} must list KEY=VALUE strings, as for --set; "
                          "got "
                          f"{', '.join(map(repr, malformed))}",
                          fix='e.g. training: ["task.terminations.end_effector_height=null"]')
    return tuple(items)


def _keyframe_arrays(source: MotionSource, spec: RobotSpec, indices: RobotIndices):
    """Per keyframe: joint vector [K, J], root position [K, 3] and quaternion [K, 4] (holding
    omitted roots)."""
    lo, hi = indices.joint_range.T
    joints, positions, quats = [], [], []
    pos, rpy = np.zeros(3), np.zeros(3)
    for i, frame in enumerate(source.keyframes):
        q = spec.default_joint_pos.copy()
        for name, value in frame.joints.items():
            j = spec.joint_names.index(name)
            if not lo[j] <= value <= hi[j]:
                raise MotionError(
                    f"{source.path}: keyframes[{i}].joints.{name} = {value:.3f} rad is outside "
                    f"the joint's range [{lo[j]:.3f}, {hi[j]:.3f}]",
                    fix="choose an angle inside the range `primebot robots show` lists",
                )
            q[j] = value
        pos = pos if frame.root_pos is None else frame.root_pos
        rpy = rpy if frame.root_rpy is None else frame.root_rpy
        joints.append(q)
        positions.append(pos)
        quats.append(quat_from_euler_xyz(*rpy))
    return np.array(joints), np.array(positions), np.array(quats)


def _segments(times: np.ndarray, key_times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per time: the keyframe segment it falls in, and its minimum-jerk blend (0 → 1) across it."""
    seg = np.clip(np.searchsorted(key_times, times, side="right") - 1, 0, len(key_times) - 2)
    return seg, minimum_jerk((times - key_times[seg]) / (key_times[seg + 1] - key_times[seg]))


def _interpolate(seg: np.ndarray, s: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Keyframe ``values`` [K, ...] blended at each time's segment ``seg`` by ``s`` (from
    ``_segments``)."""
    s = s.reshape(-1, *([1] * (values.ndim - 1)))
    return values[seg] + s * (values[seg + 1] - values[seg])


def _level_planted_feet(model, indices: RobotIndices, spec: RobotSpec, source: MotionSource,
                        key_joints: np.ndarray, key_quat: np.ndarray, seg: np.ndarray,
                        s: np.ndarray):
    """Interpolated joints and root orientation, each planted foot's sole level at the keyframes
    around its plant (``level_feet``); between them the minimum-jerk blend keeps the joints
    smooth."""
    leveller = FootLeveller(model, indices, spec.default_joint_pos)
    feet = list(spec.feet)
    planted = [[feet.index(name) for name in k.plant_feet] for k in source.keyframes]
    key_joints = key_joints.copy()
    for k in range(len(key_joints)):
        around = sorted(set(planted[k]) | set(planted[k - 1] if k > 0 else ()))
        key_joints[k] = leveller.level(key_quat[k], key_joints[k], around)
    joint_pos = _interpolate(seg, s, key_joints)
    return key_joints, joint_pos, quat_slerp(key_quat[seg], key_quat[seg + 1], s)


def author_motion(
    source: MotionSource, spec: RobotSpec, model: mujoco.MjModel | None = None
) -> Motion:
    """Interpolate, floor-correct and forward-kinematics a keyframe source into a motion."""
    model = load_robot_model(spec) if model is None else model
    indices = robot_indices(model, spec)
    key_joints, key_pos, key_quat = _keyframe_arrays(source, spec, indices)
    for k, frame in enumerate(source.keyframes):
        if frame.ik:
            key_pos[k], key_quat[k], key_joints[k] = solve_keyframe(
                model, indices, spec, _where(source.path, f"keyframes[{k}].ik"), frame.ik,
                key_pos[k], key_quat[k],
                key_joints[k], frame.floor)
    key_times = np.array([k.time for k in source.keyframes])
    frames = int(round(key_times[-1] * source.fps)) + 1
    times = np.arange(frames) / source.fps
    seg, s = _segments(times, key_times)

    key_joints, joint_pos, root_quat = _level_planted_feet(model, indices, spec, source, key_joints,
                                                           key_quat, seg, s)
    root_pos = _interpolate(seg, s, key_pos)

    lowest, feet_xy = _floor_and_feet(model, indices, root_pos, root_quat, joint_pos)
    # Root height: on floor keyframes the lowest point rests on z = 0; between two
    # floor keyframes that holds frame by frame, elsewhere the keyframe heights blend.
    key_frames = np.round(key_times * source.fps).astype(int)
    on_floor = np.array([k.floor for k in source.keyframes])
    key_z = np.where(on_floor, root_pos[key_frames, 2] - lowest[key_frames], key_pos[:, 2])
    z = _interpolate(seg, s, key_z)
    both = on_floor[seg] & on_floor[seg + 1]
    z[both] = (root_pos[:, 2] - lowest)[both]
    root_pos[:, 2] = z

    # Planted feet: hold the planted feet's mean xy by sliding the root; the
    # shift is carried on afterwards so the root never jumps. A new set of
    # planted feet (the next step's support foot) starts a new hold.
    shift = np.zeros(2)
    feet = list(spec.feet)
    planted = [[feet.index(name) for name in k.plant_feet] for k in source.keyframes]
    anchor, holding = None, None
    for t in range(frames):
        columns = planted[seg[t]]
        if columns:
            xy = feet_xy[t, columns].mean(axis=0)
            if anchor is None or columns != holding:
                anchor, holding = xy + shift, columns
            shift = anchor - xy
        else:
            anchor, holding = None, None
        root_pos[t, :2] += shift
    motion = motion_from_trajectory(model, indices, spec.joint_names, source.fps, root_pos,
                                    root_quat, joint_pos)
    return replace(motion, training_overrides=source.training)


def _floor_and_feet(model, indices: RobotIndices, root_pos, root_quat, joint_pos):
    """Per frame: the robot's lowest z, and the xy of each feet body [T, F, 2] (the spec's ``feet``
    order)."""
    mask = robot_geoms(model)
    lowest = np.empty(len(joint_pos))
    feet = np.empty((len(joint_pos), len(indices.feet_body_ids), 2))
    for t, data in posed_frames(model, indices, root_pos, root_quat, joint_pos):
        lowest[t] = geom_vertical_extent(model, data)[0][mask].min()
        feet[t] = data.xpos[indices.feet_body_ids, :2]
    return lowest, feet


def author_file(source_path: str | Path, spec: RobotSpec, output: str | Path) -> Motion:
    """Author ``source_path`` for ``spec`` and write the motion atomically to ``output``."""
    from .format import save_motion

    source = load_source(source_path, spec)
    if source.robot != spec.name:
        raise MotionError(
            f"{source_path}: written for robot {source.robot!r}, not {spec.name!r}",
            fix=f"pass --robot {source.robot}, or change 'robot:' in the source",
        )
    motion = author_motion(source, spec)
    save_motion(motion, output)
    return motion
