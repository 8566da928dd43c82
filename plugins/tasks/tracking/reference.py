"""The reference motion as the tracking task reads it: per control step, per tracked body."""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import (
    Motion,
    MotionError,
    RobotSpec,
    quat_apply_inverse,
    quat_normalize,
    quat_slerp,
)

from .model import TrackingModel

GRAVITY_W = np.array([0.0, 0.0, -1.0])


def _resample(motion: Motion, rate_hz: float) -> dict[str, np.ndarray]:
    """The motion's arrays at ``rate_hz``: linear interpolation, slerp for quaternions.

    A 50 fps motion at a 50 Hz control rate is returned unchanged.
    """
    arrays = motion.arrays()
    if abs(motion.fps - rate_hz) < 1e-6 * rate_hz:
        return arrays
    frames = int(np.floor(motion.duration * rate_hz + 1e-9)) + 1
    position = np.arange(frames) * (motion.fps / rate_hz)
    lo = np.minimum(np.floor(position).astype(np.int64), motion.num_frames - 1)
    hi = np.minimum(lo + 1, motion.num_frames - 1)
    out = {}
    for key, value in arrays.items():
        frac = (position - lo).reshape(-1, *([1] * (value.ndim - 1)))
        if key == "body_quat_w":
            out[key] = quat_slerp(value[lo], value[hi], frac[..., 0])
        else:
            out[key] = value[lo] * (1 - frac) + value[hi] * frac
    return out


def check_motion_fits(motion: Motion, robot: RobotSpec, tm: TrackingModel) -> None:
    """Raise ``MotionError`` naming the file and key when the motion's shapes or names don't fit the
    robot."""
    where = motion.source or "motion"
    joints, bodies = robot.num_joints, tm.model.nbody - 1
    if motion.joint_pos.shape[1] != joints or motion.joint_vel.shape[1] != joints:
        raise MotionError(
            f"{where}: key 'joint_pos' has {motion.joint_pos.shape[1]} columns, robot "
            f"{robot.name!r} has {joints} joints",
            fix=f"retarget the motion to {robot.name} (joint order: `primebot robots show "
                f"{robot.name}`)",
        )
    if motion.body_pos_w.shape[1] != bodies:
        raise MotionError(
            f"{where}: key 'body_pos_w' has {motion.body_pos_w.shape[1]} bodies, robot "
            f"{robot.name!r} has {bodies}",
            fix="write every body of the MJCF but the world, in MuJoCo order",
        )
    if motion.joint_names is not None and tuple(motion.joint_names) != tuple(robot.joint_names):
        raise MotionError(
            f"{where}: key 'joint_names' does not match robot {robot.name!r}'s joint order",
            fix="reorder the motion's joint columns to the robot's joint_names",
        )
    if motion.body_names is not None and tuple(motion.body_names) != tm.indices.body_names:
        raise MotionError(
            f"{where}: key 'body_names' does not match robot {robot.name!r}'s MuJoCo body order",
            fix="regenerate the motion's body arrays from this robot's MJCF",
        )
    if motion.num_frames < 2:
        raise MotionError(
            f"{where}: the motion has {motion.num_frames} frame(s); tracking needs at least 2"
        )


class MotionReference:
    """Reference quantities per control step ``t`` in [0, num_steps), gathered for N envs at once.

    Body axes hold ``TrackingModel.body_ids`` (tracked bodies first, then any
    end effector that is not tracked); the anchor and root are kept apart.
    Arrays are contiguous float64 so that ``array[time_steps]`` is one gather.
    """

    def __init__(
        self, motion: Motion, robot: RobotSpec, tm: TrackingModel, control_dt: float
    ) -> None:
        check_motion_fits(motion, robot, tm)
        arrays = _resample(motion, 1.0 / control_dt)
        self.num_steps = int(arrays["joint_pos"].shape[0])
        # the motion's body axis is MuJoCo's, less the world body
        bodies = tm.body_ids - 1
        anchor, root = tm.indices.anchor_body_id - 1, tm.indices.root_body_id - 1
        c = np.ascontiguousarray
        self.joint_pos = c(arrays["joint_pos"])
        self.joint_vel = c(arrays["joint_vel"])
        self.body_pos_w = c(arrays["body_pos_w"][:, bodies])
        self.body_quat_w = c(quat_normalize(arrays["body_quat_w"][:, bodies]))
        self.body_lin_vel_w = c(arrays["body_lin_vel_w"][:, bodies])
        self.body_ang_vel_w = c(arrays["body_ang_vel_w"][:, bodies])
        self.anchor_pos_w = c(arrays["body_pos_w"][:, anchor])
        self.anchor_quat_w = c(quat_normalize(arrays["body_quat_w"][:, anchor]))
        self.anchor_gravity_z = quat_apply_inverse(self.anchor_quat_w, GRAVITY_W)[:, 2].copy()
        """z of gravity in the reference anchor frame (the anchor-orientation termination compares
        it)."""
        self.root_pos_w = c(arrays["body_pos_w"][:, root])
        self.root_quat_w = c(quat_normalize(arrays["body_quat_w"][:, root]))
        self.root_lin_vel_w = c(arrays["body_lin_vel_w"][:, root])
        self.root_ang_vel_w = c(arrays["body_ang_vel_w"][:, root])
