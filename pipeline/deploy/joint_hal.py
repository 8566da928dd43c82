"""The joint HAL of the deploy loops: each joint's PD at the physics rate, as a robot's motor
drivers run it (500 Hz–1 kHz; training ran 200 Hz).

Two ways to the same law, τ = kp·(target − q) − kd·q̇ clipped to the effort limit, with the gains
from the ONNX metadata: ``setup_torque_loop`` turns the policy's actuators into plain motors and
``hold_joint_targets`` computes the torque in Python every physics step (sim2sim, one episode at a
time); ``setup_servo_loop`` turns them into MuJoCo position servos with those gains, so a batch of
simulations steps without Python between physics steps (the stress test). ``robot`` arguments are
``onnx_policy.DeployRobot`` or anything with the fields named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from ..robot.actuators import set_position_servos

if TYPE_CHECKING:
    from .onnx_policy import DeployRobot

PHYSICS_HZ = 1000.0
"""Default rate of the deploy loops' physics and PD (a joint HAL runs at 500 Hz–1 kHz; training: 200
Hz)."""


def effort_limit(meta: dict) -> np.ndarray:
    """The metadata's per-joint effort limit (unlimited when the export has none)."""
    return meta.get("joint_effort_limit", np.full(len(meta["joint_names"]), np.inf))


def to_torque_mode(robot: DeployRobot, effort: np.ndarray) -> None:
    """Make every policy joint's actuator a plain motor: ctrl is torque, clipped to ±effort.

    ``robot``: anything with ``model`` and ``actuator_ids`` (also the planar loop's robot).
    """
    m = robot.model
    for act, limit in zip(robot.actuator_ids, effort, strict=True):
        m.actuator_gaintype[act] = mujoco.mjtGain.mjGAIN_FIXED
        m.actuator_biastype[act] = mujoco.mjtBias.mjBIAS_NONE
        m.actuator_gainprm[act, :] = 0.0
        m.actuator_gainprm[act, 0] = 1.0
        m.actuator_biasprm[act, :] = 0.0
        m.actuator_gear[act, :] = 0.0
        m.actuator_gear[act, 0] = 1.0
        m.actuator_ctrllimited[act] = 1
        m.actuator_ctrlrange[act] = (-limit, limit)
        m.actuator_forcelimited[act] = 1
        m.actuator_forcerange[act] = (-limit, limit)


def setup_torque_loop(robot: DeployRobot, meta: dict, control_dt: float, physics_hz: float) -> int:
    """Torque-mode actuators and a physics step that divides ``control_dt`` at about ``physics_hz``.

    Returns the physics substeps per policy step. ``robot``: anything ``to_torque_mode`` takes.
    """
    substeps = max(1, int(round(control_dt * physics_hz)))
    robot.model.opt.timestep = control_dt / substeps
    to_torque_mode(robot, effort_limit(meta))
    return substeps


def setup_servo_loop(robot: DeployRobot, meta: dict, control_dt: float, physics_hz: float) -> int:
    """Like ``setup_torque_loop``, but MuJoCo computes the same PD: every policy joint's actuator
    becomes a position servo with the metadata's kp/kd whose force is clipped to the effort limit,
    so ``ctrl`` is the joint target and a batch of simulations steps without Python between physics
    steps (``deploy.stress``).

    Returns the physics substeps per policy step.
    """
    substeps = max(1, int(round(control_dt * physics_hz)))
    robot.model.opt.timestep = control_dt / substeps
    set_position_servos(robot.model, robot.actuator_ids, meta["joint_stiffness"],
                        meta["joint_damping"], effort_limit(meta))
    return substeps


def hold_joint_targets(robot: DeployRobot, data: mujoco.MjData, meta: dict, target: np.ndarray,
                       substeps: int) -> None:
    """``substeps`` physics steps, each with τ = kp·(target − q) − kd·q̇ from the metadata, clipped
    to effort.

    ``robot``: anything with ``model``, ``qpos_adr``, ``dof_adr`` and ``actuator_ids`` in joint
    order.
    """
    kp, kd, effort = meta["joint_stiffness"], meta["joint_damping"], effort_limit(meta)
    for _ in range(substeps):
        tau = kp * (target - data.qpos[robot.qpos_adr]) - kd * data.qvel[robot.dof_adr]
        data.ctrl[robot.actuator_ids] = np.clip(tau, -effort, effort)
        mujoco.mj_step(robot.model, data)
