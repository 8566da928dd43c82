"""Motion validation (``primebot motion validate``): every rule of docs/architecture.md §2, each
problem located.

``validate_motion_file`` is built from small checks in the order a user would
fix things: the file's structure, then shapes and names, then values, then
physics against the robot. A problem names its key, frame and column (joint
or body) and says how to fix it. Errors make a file invalid; warnings do not.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from ..errors import MotionError
from ..robot.checks import TRAINING_FPS
from ..robot.kinematics import geom_vertical_extent, posed_frames, robot_geoms
from ..robot.model import RobotIndices, load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from ..rotations import (
    quat_conjugate,
    quat_error_magnitude,
    quat_mul,
    quat_normalize,
    quat_to_rotvec,
)
from .balance import balance_margins
from .format import ARRAY_KEYS, Motion, load_motion
from .frame_runs import runs
from .problems import Problem, ProblemCollector, ValidationReport

QUAT_NORM_TOL = 1e-3
JOINT_LIMIT_MARGIN = 0.02  # rad: retargeting and float32 storage graze the limits
JUMP_JOINT = 0.35  # rad per frame (17.5 rad/s at 50 fps): faster than any actuator
JUMP_BODY = 0.1  # m per frame (5 m/s)
FK_POS_TOL = 0.01  # m
FK_ROT_TOL = 0.02  # rad
FLOOR_ERROR = -0.02  # m: deeper than this is an error, shallower a warning
FLOOR_WARNING = -0.005
BALANCE_TOL = 0.01  # m: a zero-moment point further outside the feet than this cannot be followed
EDGE_MARGIN = 0.01
"""m: a zero-moment point nearer the feet's edge than this (or outside it by less than
``BALANCE_TOL``) is on the edge of the soles."""
EDGE_DWELL_S = 0.5
"""s: held on the edge this long, a pose is a balancing act: the policy leans back from it instead.
The bench's H1 squat held its centre of mass 2 mm past its toes for 2.1 s at a time and tracked
27 mm off (docs/motions.md, "Balance"); no shipped q1 motion stays there 0.1 s."""

RESAMPLE_FIX = "resample it: primebot motion resample {path} --fps 50"


# -- structure -----------------------------------------------------------------


def _check_shapes(motion: Motion, out: ProblemCollector) -> bool:
    """Shapes agree across keys; returns False when later checks cannot run."""
    expected = {
        "joint_pos": 2,
        "joint_vel": 2,
        "body_pos_w": 3,
        "body_quat_w": 3,
        "body_lin_vel_w": 3,
        "body_ang_vel_w": 3,
    }
    last = {"body_pos_w": 3, "body_quat_w": 4, "body_lin_vel_w": 3, "body_ang_vel_w": 3}
    fine = True
    for key, ndim in expected.items():
        shape = getattr(motion, key).shape
        if len(shape) != ndim or (key in last and shape[-1] != last[key]):
            want = "(T, J)" if ndim == 2 else f"(T, B, {last[key]})"
            out.error(
                "shape",
                f"shape {shape}, expected {want}",
                key=key,
                fix="write arrays as docs/architecture.md §2 lists them",
            )
            fine = False
    if not fine:
        return False
    frames = {key: getattr(motion, key).shape[0] for key in ARRAY_KEYS}
    if len(set(frames.values())) > 1:
        out.error(
            "shape",
            f"frame counts differ across keys: {frames}",
            key=",".join(frames),
            fix="every key needs one row per frame",
        )
        return False
    if motion.joint_vel.shape != motion.joint_pos.shape:
        out.error(
            "shape",
            f"shape {motion.joint_vel.shape} differs from joint_pos {motion.joint_pos.shape}",
            key="joint_vel",
        )
        fine = False
    bodies = {key: getattr(motion, key).shape[1] for key in ARRAY_KEYS if key.startswith("body_")}
    if len(set(bodies.values())) > 1:
        out.error("shape", f"body counts differ across keys: {bodies}", key=",".join(bodies))
        fine = False
    if motion.num_frames < 2:
        out.error(
            "shape",
            f"{motion.num_frames} frame(s); a motion needs at least 2",
            key="joint_pos",
        )
        fine = False
    for key, axis_len in (
        ("joint_names", motion.joint_pos.shape[1]),
        ("body_names", motion.body_pos_w.shape[1]),
    ):
        names = getattr(motion, key)
        if names is not None and len(names) != axis_len:
            out.error("names", f"{len(names)} names for {axis_len} columns", key=key)
            fine = False
    return fine


def _check_fps(motion: Motion, path: str, out: ProblemCollector) -> None:
    if not np.isfinite(motion.fps) or motion.fps <= 0:
        out.error(
            "fps",
            f"fps is {motion.fps}",
            key="fps",
            fix="store the frame rate the motion was sampled at",
        )
    elif abs(motion.fps - TRAINING_FPS) > 1e-6:
        out.error(
            "fps",
            f"fps is {motion.fps:g}; the pipeline trains at {TRAINING_FPS:g}",
            key="fps",
            fix=RESAMPLE_FIX.format(path=path),
        )


def _check_finite(motion: Motion, columns: dict[str, list[str]], out: ProblemCollector) -> bool:
    fine = True
    for key in ARRAY_KEYS:
        values = getattr(motion, key)
        bad = ~np.isfinite(values)
        if not bad.any():
            continue
        fine = False
        per_column = bad.reshape(bad.shape[0], bad.shape[1], -1).any(axis=2)
        for col in np.flatnonzero(per_column.any(axis=0)):
            out.frames(
                "error",
                "finite",
                "NaN or infinite values",
                per_column[:, col],
                key=key,
                column=_column(columns, key, col),
                fix="regenerate the file; NaN usually comes from a failed retarget or a 0/0",
            )
    return fine


def _check_quaternions(
    motion: Motion, columns: dict[str, list[str]], out: ProblemCollector
) -> None:
    norm = np.linalg.norm(motion.body_quat_w, axis=-1)
    bad = np.abs(norm - 1.0) > QUAT_NORM_TOL
    for col in np.flatnonzero(bad.any(axis=0)):
        worst = norm[:, col][np.argmax(np.abs(norm[:, col] - 1.0))]
        out.frames(
            "error",
            "quaternion",
            f"quaternion norm {worst:.4f}, expected 1 (w x y z)",
            bad[:, col],
            key="body_quat_w",
            column=_column(columns, "body_quat_w", col),
            fix="normalise the quaternions (q / |q|) when writing",
        )


def _names_in_order(
    stored: tuple[str, ...] | None,
    expected: tuple[str, ...],
    key: str,
    fix: str,
    out: ProblemCollector,
) -> bool:
    """Stored names (same count as ``expected``) are in the robot's order; one error per misplaced
    column.

    Files without stored names are taken to be in the robot's order.
    """
    if stored is None or tuple(stored) == expected:
        return True
    for col, (have, want) in enumerate(zip(stored, expected, strict=True)):
        if have != want:
            out.error(
                key,
                f"column holds {have!r}, robot order expects {want!r}",
                key=key,
                column=str(col),
                fix=fix,
            )
    return False


def _check_names(
    motion: Motion, spec: RobotSpec, indices: RobotIndices, out: ProblemCollector
) -> bool:
    """Joint and body counts and names match the robot; returns False when robot checks cannot
    run."""
    fine = True
    joints = motion.joint_pos.shape[1]
    if joints != spec.num_joints:
        out.error(
            "joint_count",
            f"{joints} joint columns, robot {spec.name!r} has {spec.num_joints}",
            key="joint_pos",
            fix=f"retarget to {spec.name}'s joints (`primebot robots show {spec.name}`), or pass "
                "--robot",
        )
        fine = False
    elif not _names_in_order(
        motion.joint_names,
        spec.joint_names,
        "joint_names",
        "reorder the columns into the robot's joint order",
        out,
    ):
        fine = False
    bodies = motion.body_pos_w.shape[1]
    if bodies != len(indices.body_names):
        out.error(
            "body_count",
            f"{bodies} bodies, robot {spec.name!r} has {len(indices.body_names)} (all bodies but "
            "the world)",
            key="body_pos_w",
            fix="store every robot body in MuJoCo order",
        )
        fine = False
    elif not _names_in_order(
        motion.body_names,
        indices.body_names,
        "body_names",
        "store bodies in the model's (MuJoCo) order",
        out,
    ):
        fine = False
    if motion.joint_names is None or motion.body_names is None:
        out.warning(
            "names",
            "no joint_names/body_names stored; assuming the robot's order",
            key="joint_names,body_names",
        )
    return fine


# -- values against the robot -----------------------------------------------------


def _check_joint_limits(
    motion: Motion, spec: RobotSpec, indices: RobotIndices, out: ProblemCollector
) -> None:
    lo, hi = indices.joint_range.T
    below = motion.joint_pos < lo - JOINT_LIMIT_MARGIN
    above = motion.joint_pos > hi + JOINT_LIMIT_MARGIN
    for col in np.flatnonzero((below | above).any(axis=0)):
        values = motion.joint_pos[:, col]
        worst = values[np.argmax(np.maximum(lo[col] - values, values - hi[col]))]
        out.frames(
            "error",
            "joint_limit",
            f"angle {worst:.3f} rad outside the range [{lo[col]:.3f}, {hi[col]:.3f}]",
            below[:, col] | above[:, col],
            key="joint_pos",
            column=spec.joint_names[col],
            fix="clamp or re-retarget this joint into its range",
        )


def _angular_velocity_fd(quat: np.ndarray, dt: float) -> np.ndarray:
    """World angular velocity by central differences of orientations (one-sided at the ends)."""
    prev = np.concatenate((quat[:1], quat[:-2], quat[-2:-1]))
    nxt = np.concatenate((quat[1:2], quat[2:], quat[-1:]))
    span = np.full(len(quat), 2 * dt)
    span[0] = span[-1] = dt
    return quat_to_rotvec(quat_mul(nxt, quat_conjugate(prev))) / span.reshape(
        -1, *([1] * (quat.ndim - 1))
    )


def _check_continuity(motion: Motion, columns: dict[str, list[str]], out: ProblemCollector) -> None:
    """Jump frames, then velocities against finite differences of positions."""
    dt = 1.0 / motion.fps
    jumps = (
        ("joint_pos", np.abs(np.diff(motion.joint_pos, axis=0)), JUMP_JOINT, "joint jumps", "rad"),
        (
            "body_pos_w",
            np.linalg.norm(np.diff(motion.body_pos_w, axis=0), axis=-1),
            JUMP_BODY,
            "body moves",
            "m",
        ),
    )
    for key, step, limit, what, unit in jumps:
        for col in np.flatnonzero((step > limit).any(axis=0)):
            out.frames(
                "error",
                "jump",
                f"{what} up to {step[:, col].max():.3f} {unit} between frames (discontinuous "
                "frames listed)",
                np.flatnonzero(step[:, col] > limit) + 1,
                key=key,
                column=_column(columns, key, col),
                fix="remove the cut or glitch at these frames and re-interpolate",
            )

    # (stored key, the key it differentiates, finite-difference estimate, absolute and
    # relative tolerance): finite differences of a smooth motion err by O(dt²)
    velocities = (
        ("joint_vel", "joint_pos", np.gradient(motion.joint_pos, dt, axis=0), 1.0, 0.2),
        ("body_lin_vel_w", "body_pos_w", np.gradient(motion.body_pos_w, dt, axis=0), 0.25, 0.2),
        ("body_ang_vel_w", "body_quat_w", _angular_velocity_fd(motion.body_quat_w, dt), 1.0, 0.2),
    )
    for key, source, estimate, absolute, relative in velocities:
        err = np.abs(getattr(motion, key) - estimate)
        bad = err > absolute + relative * np.abs(estimate)
        bad = bad if bad.ndim == 2 else bad.any(axis=-1)
        for col in np.flatnonzero(bad.any(axis=0)):
            out.frames(
                "error",
                "velocity",
                f"differs from the finite difference of {source} by up to {err[:, col].max():.3f}",
                bad[:, col],
                key=key,
                column=_column(columns, key, col),
                fix=f"recompute {key} from {source} (e.g. np.gradient at the file's fps), or fix "
                    "the jump frames",
            )


def _check_kinematics(
    motion: Motion, model: mujoco.MjModel, indices: RobotIndices, out: ProblemCollector
) -> None:
    """Stored body poses equal forward kinematics of root + joints; nothing below the floor."""
    root = indices.root_body_id - 1
    mask = robot_geoms(model)
    frames = motion.num_frames
    pos_err = np.empty((frames, model.nbody - 1))
    rot_err = np.empty((frames, model.nbody - 1))
    lowest = np.empty(frames)
    lowest_geom = np.empty(frames, dtype=int)
    root_quat = quat_normalize(motion.body_quat_w[:, root])
    for t, data in posed_frames(
        model, indices, motion.body_pos_w[:, root], root_quat, motion.joint_pos
    ):
        pos_err[t] = np.linalg.norm(data.xpos[1:] - motion.body_pos_w[t], axis=-1)
        rot_err[t] = quat_error_magnitude(data.xquat[1:], motion.body_quat_w[t])
        low = np.where(mask, geom_vertical_extent(model, data)[0], np.inf)
        lowest_geom[t] = int(np.argmin(low))
        lowest[t] = low[lowest_geom[t]]
    for col in np.flatnonzero((pos_err > FK_POS_TOL).any(axis=0)):
        out.frames(
            "error",
            "forward_kinematics",
            f"stored position is up to {pos_err[:, col].max():.3f} m from forward kinematics of "
            "the root and joint_pos",
            pos_err[:, col] > FK_POS_TOL,
            key="body_pos_w",
            column=indices.body_names[col],
            fix="regenerate body_pos_w/body_quat_w from joint_pos with this robot (primebot motion "
                "convert), or check the robot model",
        )
    for col in np.flatnonzero((rot_err > FK_ROT_TOL).any(axis=0)):
        out.frames(
            "error",
            "forward_kinematics",
            f"stored orientation is up to {rot_err[:, col].max():.3f} rad from forward kinematics",
            rot_err[:, col] > FK_ROT_TOL,
            key="body_quat_w",
            column=indices.body_names[col],
            fix="regenerate body_quat_w from joint_pos with this robot; quaternions are w x y z",
        )
    for severity, threshold in (("error", FLOOR_ERROR), ("warning", FLOOR_WARNING)):
        bad = lowest < threshold
        if severity == "warning":
            bad &= lowest >= FLOOR_ERROR
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            body = mujoco.mj_id2name(
                model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[lowest_geom[first]])
            )
            out.frames(
                severity,
                "floor",
                f"robot reaches {lowest[bad].min():.3f} m below the floor ({body} at frame "
                f"{first})",
                bad,
                key="body_pos_w",
                column=body,
                fix="raise the root so the lowest point rests on z = 0",
            )


def _check_balance(motion: Motion, model: mujoco.MjModel, indices: RobotIndices,
                   out: ProblemCollector) -> None:
    """The zero-moment point stays over the planted feet (motion/balance.py); a warning, not an
    error, because the estimate ignores angular momentum and a policy may still step or lean its way
    through."""
    if motion.fps <= 0 or not len(indices.feet_body_ids):
        return
    root = indices.root_body_id - 1
    margin = balance_margins(model, indices, indices.feet_body_ids, motion.body_pos_w[:, root],
                             quat_normalize(motion.body_quat_w[:, root]), motion.joint_pos,
                             motion.fps)
    bad = np.nan_to_num(margin, nan=0.0) < -BALANCE_TOL
    if bad.any():
        out.frames(
            "warning",
            "balance",
            "the zero-moment point leaves the support of the planted feet by up to "
            f"{-np.nanmin(margin):.3f} m: "
            "a robot with flat feet tips over their edge here, so no policy can follow these "
            "frames",
            bad,
            key="body_pos_w",
            fix="move the centre of mass over the support foot before lifting the other (hip and "
                "ankle roll), "
                "and give weight shifts more time (accelerating the body pushes the zero-moment "
                "point out); "
                "see docs/motions.md, \"Balance\"",
        )
    # frames past the edge are warned about above; this is the frames balanced on it
    near = (np.nan_to_num(margin, nan=np.inf) < EDGE_MARGIN) & ~bad
    held = [(start, end) for start, end in runs(near) if end - start >= EDGE_DWELL_S * motion.fps]
    if held:
        edge = np.zeros_like(near)
        for start, end in held:
            edge[start:end] = True
        longest = max(end - start for start, end in held) / motion.fps
        out.frames(
            "warning",
            "balance",
            f"the zero-moment point stays within {EDGE_MARGIN * 100:.0f} cm of the edge of the "
            f"planted feet for {longest:.1f} s (nearest "
            f"{np.nanmin(margin[edge]) * 1000:+.1f} mm, positive inside): held on the edge of its "
            "soles, a robot leans back from such a pose rather than follow it",
            edge,
            key="body_pos_w",
            fix="lean the pose over the middle of the feet (hip pitch against ankle pitch keeps "
                "them flat; `primebot robots check` prints such a lean for a standing pose); see "
                "docs/motions.md, \"Balance\"",
        )


def _column(columns: dict[str, list[str]], key: str, index: int) -> str:
    names = columns.get("joint" if key.startswith("joint") else "body") or []
    return names[index] if index < len(names) else str(index)


# -- entry points -------------------------------------------------------------------


def validate_motion(
    motion: Motion, spec: RobotSpec, model: mujoco.MjModel | None = None, path: str = ""
) -> ValidationReport:
    """Check a loaded motion against ``spec``; the report lists every problem found."""
    out = ProblemCollector()
    report = ValidationReport(
        path=path or str(motion.source or "<motion>"),
        robot=spec.name,
        num_frames=motion.num_frames,
        fps=motion.fps,
        training_overrides=motion.training_overrides,
    )
    model = load_robot_model(spec) if model is None else model
    indices = robot_indices(model, spec)
    columns = {
        "joint": list(
            motion.joint_names
            or (spec.joint_names if motion.joint_pos.shape[-1:] == (spec.num_joints,) else [])
        ),
        "body": list(
            motion.body_names
            or (
                indices.body_names
                if motion.body_pos_w.shape[1:2] == (len(indices.body_names),)
                else []
            )
        ),
    }
    _check_fps(motion, report.path, out)
    if _check_shapes(motion, out):
        finite = _check_finite(motion, columns, out)
        _check_quaternions(motion, columns, out)
        names_match = _check_names(motion, spec, indices, out)
        if finite:
            if names_match:
                _check_joint_limits(motion, spec, indices, out)
            if motion.fps > 0:
                _check_continuity(motion, columns, out)
            if names_match:
                _check_kinematics(motion, model, indices, out)
                _check_balance(motion, model, indices, out)
    report.problems = out.problems
    return report


def _load_and_validate(
    path: str | Path, spec: RobotSpec, model: mujoco.MjModel | None
) -> tuple[Motion | None, ValidationReport]:
    """The loaded motion (None when it cannot be loaded) and its report; the file is read once."""
    try:
        motion = load_motion(path)
    except MotionError as exc:
        report = ValidationReport(path=str(path), robot=spec.name)
        message = str(exc).split("\n  fix: ")[0]
        report.problems.append(
            Problem("error", "format", message, key=getattr(exc, "key", None), fix=exc.fix)
        )
        return None, report
    return motion, validate_motion(motion, spec, model, path=str(path))


def validate_motion_file(
    path: str | Path, spec: RobotSpec, model: mujoco.MjModel | None = None
) -> ValidationReport:
    """Load and check ``path``; a file that cannot be loaded is a report with one error, not an
    exception."""
    return _load_and_validate(path, spec, model)[1]


def require_valid_motion(
    path: str | Path, spec: RobotSpec, model: mujoco.MjModel | None = None
) -> Motion:
    """Load ``path`` for training; raise ``MotionError`` listing the errors when it is invalid."""
    motion, report = _load_and_validate(path, spec, model)
    if motion is None or not report.ok:
        lines = "\n    ".join(str(p) for p in report.errors)
        raise MotionError(
            f"{report.summary()}\n    {lines}",
            fix=f"run `primebot motion validate {path}` for details",
        )
    return motion
