"""Converting and resampling motions: the mjlab/BeyondMimic CSV layout, and other frame rates.

The CSV layout (one row per frame, no header, comma-separated) is:
root x y z (m), root quaternion x y z w, then the joint angles (rad) in the
robot's joint order. Conversion resamples to the training rate (lerp for
positions and joint angles, slerp for the root rotation) and computes bodies
and velocities by forward kinematics, so the result validates.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from ..atomic import atomic_open
from ..errors import MotionError
from ..limits import MAX_MOTION_FRAMES, MAX_TEXT_BYTES, over_budget
from ..robot.model import RobotIndices, load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from ..rotations import quat_normalize, quat_slerp
from .format import Motion
from .trajectory import motion_from_trajectory

ROOT_COLUMNS = 7  # x y z, qx qy qz qw


def read_csv(path: str | Path, num_joints: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Root positions [T, 3], root quaternions [T, 4] (converted to w x y z) and joints [T, J] from
    a CSV."""
    path = Path(path)
    try:
        size = path.stat().st_size
        problem = over_budget(f"{path}: the CSV", size, MAX_TEXT_BYTES)
        if problem:
            raise MotionError(problem, fix="split the motion into shorter clips")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MotionError(f"CSV file {path} does not exist", fix="check the path") from None
    except UnicodeDecodeError as exc:
        raise MotionError(
            f"{path}: not a text CSV (byte {exc.start} is not UTF-8 text)",
            fix="convert reads the mjlab/BeyondMimic CSV layout (docs/motions.md) or a motion .npz",
        ) from None
    if text.count("\n") > MAX_MOTION_FRAMES + 1000:
        raise MotionError(over_budget(f"{path}: the CSV", text.count("\n"), MAX_MOTION_FRAMES,
                                      "rows"),
                          fix="split the motion into shorter clips")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        try:
            values = [float(field) for field in fields]
        except ValueError:
            if not rows:  # a header line
                continue
            raise MotionError(
                f"{path}: line {number} has a value that is not a number",
                fix="the CSV must hold numbers only",
            ) from None
        if len(values) != ROOT_COLUMNS + num_joints:
            raise MotionError(
                f"{path}: line {number} has {len(values)} columns, expected "
                f"{ROOT_COLUMNS + num_joints} "
                f"(root x y z, quaternion x y z w, {num_joints} joint angles)",
                fix="retarget to the robot's joints in its order (`primebot robots show`), or pass "
                    "--robot",
            )
        if not np.all(np.isfinite(values)):
            column = int(np.flatnonzero(~np.isfinite(values))[0])
            raise MotionError(f"{path}: line {number} column {column + 1} is not finite")
        rows.append(values)
    if len(rows) < 2:
        raise MotionError(f"{path}: {len(rows)} frame(s); a motion needs at least 2")
    data = np.array(rows)
    quat_xyzw = data[:, 3:7]
    norms = np.linalg.norm(quat_xyzw, axis=1)
    if np.any(norms < 1e-6):
        line = int(np.argmax(norms < 1e-6))
        raise MotionError(f"{path}: frame {line} has a zero root quaternion (columns 4-7)")
    return data[:, :3], quat_normalize(quat_xyzw[:, [3, 0, 1, 2]]), data[:, ROOT_COLUMNS:]


def resample(
    input_fps: float,
    output_fps: float,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Resample a trajectory to ``output_fps``: lerp positions and joints, slerp the root rotation.

    Output frames sit at k / output_fps for every k that stays within the
    input's duration (the last input frame is kept when it falls on the grid).
    """
    for name, rate in (("input", input_fps), ("output", output_fps)):
        if not (np.isfinite(rate) and rate > 0):
            raise MotionError(
                f"the {name} frame rate must be a positive number, got {rate}",
                fix="pass a frame rate such as --fps 50" if name == "output"
                else "pass --input-fps (e.g. 30)",
            )
    frames = len(joint_pos)
    duration = (frames - 1) / input_fps
    wanted = np.floor(duration * output_fps + 1e-6) + 1
    problem = over_budget(f"resampling {frames} frames from {input_fps:g} to {output_fps:g} fps",
                          wanted,
                          MAX_MOTION_FRAMES, "frames")
    if problem:
        raise MotionError(problem, fix="check the frame rates; the pipeline trains at 50 fps")
    count = int(wanted)
    position = np.arange(count) / output_fps * input_fps  # fractional input frame index
    lower = np.minimum(np.floor(position + 1e-9).astype(int), frames - 1)
    upper = np.minimum(lower + 1, frames - 1)
    blend = np.clip(position - lower, 0.0, 1.0)
    lerp = lambda a: a[lower] + blend[:, None] * (a[upper] - a[lower])  # noqa: E731
    return lerp(root_pos), quat_slerp(root_quat[lower], root_quat[upper], blend), lerp(joint_pos)


def convert_csv(
    path: str | Path,
    spec: RobotSpec,
    input_fps: float,
    output_fps: float = 50.0,
    model: mujoco.MjModel | None = None,
) -> Motion:
    """A complete motion from a mjlab/BeyondMimic CSV recorded at ``input_fps``."""
    model = load_robot_model(spec) if model is None else model
    root_pos, root_quat, joints = read_csv(path, spec.num_joints)
    root_pos, root_quat, joints = resample(input_fps, output_fps, root_pos, root_quat, joints)
    return motion_from_trajectory(
        model, robot_indices(model, spec), spec.joint_names, output_fps, root_pos, root_quat, joints
    )


def root_trajectory(motion: Motion, indices: RobotIndices) -> tuple[np.ndarray, np.ndarray]:
    """The root body's positions [T, 3] and w-x-y-z quaternions [T, 4] stored in a motion."""
    root = indices.root_body_id - 1
    return motion.body_pos_w[:, root], quat_normalize(motion.body_quat_w[:, root])


def resample_motion(
    motion: Motion, spec: RobotSpec, fps: float, model: mujoco.MjModel | None = None
) -> Motion:
    """``motion`` at another frame rate, bodies and velocities recomputed by forward kinematics."""
    model = load_robot_model(spec) if model is None else model
    if motion.joint_pos.shape[1] != spec.num_joints:
        raise MotionError(
            f"{motion.source}: {motion.joint_pos.shape[1]} joints, robot {spec.name!r} has "
            f"{spec.num_joints}",
            fix="pass the robot the motion was made for (--robot)",
        )
    indices = robot_indices(model, spec)
    root_pos, root_quat = root_trajectory(motion, indices)
    root_pos, root_quat, joints = resample(motion.fps, fps, root_pos, root_quat, motion.joint_pos)
    return motion_from_trajectory(
        model, indices, spec.joint_names, fps, root_pos, root_quat, joints
    )


def write_csv(
    motion: Motion, spec: RobotSpec, path: str | Path, model: mujoco.MjModel | None = None
) -> None:
    """Write ``motion`` in the CSV layout (root xyz, quaternion x y z w, joints), atomically."""
    model = load_robot_model(spec) if model is None else model
    root_pos, root_quat = root_trajectory(motion, robot_indices(model, spec))
    table = np.concatenate((root_pos, root_quat[:, [1, 2, 3, 0]], motion.joint_pos), axis=1)
    with atomic_open(path, "w") as fh:
        # repr-exact floats, so CSV → npz → CSV loses nothing but the npz's float32 rounding
        for row in table:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")
