"""What a motion asks of its robot's servos: joint torques by inverse dynamics, and the servo
targets that give them.

A position servo pushes ``kp·(target − q) − kd·q̇``. Given the reference's joint angle as its
target (a zero action, or PD replay) it only pushes when the joint has already sagged away from
the reference, by about the torque the motion needs over ``kp``: a robot whose servos are soft
next to its load (the G1 standing on one foot: 38 N·m on a hip roll of kp 126, 0.3 rad) falls
behind the reference at once, and a policy must learn to hold what the servo gives up. The
*feedforward* puts that torque into the target instead: ``target = q_ref + (τ + kd·q̇_ref) / kp``
makes the servo push exactly ``τ`` while the joint follows the reference (docs/motions.md, "What
the servos give").

The torques come from the reference itself, frame by frame (``mj_inverse`` on the floating base,
contacts and joint limits off): the generalised force that produces the reference's
accelerations. The floating base has no motor, so its six components must come from the floor,
through the bodies whose collision geoms rest on it (within ``CONTACT_TOL``); the wrench each of
them takes is the least-squares (smallest) one that supplies those six, and what it carries
through the joints above it comes off their torques. When a foot rests on the floor the feet
alone carry the robot (a hand that comes near the floor reaching for a box does not); otherwise
whatever rests does (kneeling, lying: there the split between the bodies is a guess, and the
feedforward may be wrong: the shipped getup is followed worse with it). Where nothing rests on the
floor (a flight phase) the base's wrench has no source and the joints get what the limbs alone
need. The floor is not asked whether it can push so (the wrench's centre of pressure may lie
outside the feet: ``motion validate``'s balance check says where it does).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ..robot.kinematics import geom_vertical_extent, qpos_trajectory, qvel_from_qpos, robot_geoms
from ..robot.model import RobotIndices
from ..robot.stance import CONTACT_TOL


@dataclass
class MotionTorques:
    """Per frame, in the robot's joint order."""

    torque: np.ndarray
    """[T, J] N·m: each joint's torque for the reference's motion."""
    joint_vel: np.ndarray
    """[T, J] rad/s: the reference's joint velocities (finite differences of its angles)."""
    supported: np.ndarray
    """[T] bool: some collision geom rests on the floor (else the base's wrench had no source)."""


def motion_torques(model: mujoco.MjModel, indices: RobotIndices, root_pos: np.ndarray,
                   root_quat: np.ndarray, joint_pos: np.ndarray, fps: float) -> MotionTorques:
    """The joint torques of a motion given as its root pose [T, 3], [T, 4] (w x y z) and joint
    angles [T, J] at ``fps`` (module docstring)."""
    dt = 1.0 / float(fps)
    qpos = qpos_trajectory(model, indices, root_pos, root_quat, joint_pos)
    qvel = qvel_from_qpos(model, qpos, dt)
    qacc = np.gradient(qvel, dt, axis=0) if len(qvel) > 1 else np.zeros_like(qvel)
    base = slice(indices.root_dof_adr, indices.root_dof_adr + 6)
    colliding = robot_geoms(model)
    data = mujoco.MjData(model)
    torque = np.zeros((len(qpos), len(indices.dof_adr)))
    supported = np.zeros(len(qpos), dtype=bool)
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    disabled = model.opt.disableflags
    off = mujoco.mjtDisableBit
    model.opt.disableflags |= off.mjDSBL_CONTACT | off.mjDSBL_LIMIT
    try:
        for t in range(len(qpos)):
            data.qpos[:], data.qvel[:], data.qacc[:] = qpos[t], qvel[t], qacc[t]
            mujoco.mj_inverse(model, data)
            force = data.qfrc_inverse.copy()
            low = geom_vertical_extent(model, data)[0]
            resting = np.unique(model.geom_bodyid[colliding & (low <= CONTACT_TOL)])
            feet = np.intersect1d(resting, indices.feet_body_ids)
            resting = feet if len(feet) else resting
            if len(resting):
                rows = []
                for body in resting:
                    mujoco.mj_jacBody(model, data, jacp, jacr, int(body))
                    rows += [jacp.copy(), jacr.copy()]
                jac = np.vstack(rows)  # [6·bodies, nv]: wrench at each body → generalised force
                wrench, *_ = np.linalg.lstsq(jac[:, base].T, force[base], rcond=None)
                force -= jac.T @ wrench
                supported[t] = True
            torque[t] = force[indices.dof_adr]
    finally:
        model.opt.disableflags = disabled
    return MotionTorques(torque, qvel[:, indices.dof_adr], supported)


def servo_feedforward(torques: MotionTorques, stiffness, damping, effort_limit) -> np.ndarray:
    """[T, J] rad to add to the reference's joint angles so that each position servo
    (``stiffness`` kp, ``damping`` kd, ``effort_limit``: per joint, a robot spec's), with the joint
    on the reference, pushes the motion's torque: ``(τ + kd·q̇) / kp``, the push clipped to the
    effort limit."""
    kp, kd, effort = (np.asarray(v, dtype=np.float64) for v in (stiffness, damping, effort_limit))
    push = np.clip(torques.torque + kd * torques.joint_vel, -effort, effort)
    return push / kp
