"""What a model's actuators are and what gains they carry."""

from __future__ import annotations

import mujoco
import numpy as np

GAIN_RTOL = 1e-3
"""Relative tolerance between the spec's gains and an MJCF position actuator's."""


def actuator_kind(model: mujoco.MjModel, act: int) -> str:
    """``position`` (kp·(ctrl − q) − kv·q̇), ``motor`` (ctrl is torque) or ``other``."""
    fixed = model.actuator_gaintype[act] == mujoco.mjtGain.mjGAIN_FIXED
    bias = model.actuator_biastype[act]
    if fixed and bias == mujoco.mjtBias.mjBIAS_NONE:
        return "motor"
    gain, prm = model.actuator_gainprm[act], model.actuator_biasprm[act]
    if (
        fixed
        and bias == mujoco.mjtBias.mjBIAS_AFFINE
        and prm[0] == 0.0
        and np.isclose(prm[1], -gain[0])
    ):
        return "position"
    return "other"


def servo_gains(model: mujoco.MjModel, act: int) -> tuple[float, float]:
    """A position actuator's (kp, kd) at the joint: gain and −biasprm[2], times the gear."""
    gear = float(model.actuator_gear[act, 0])
    return float(model.actuator_gainprm[act, 0]) * gear, float(
        -model.actuator_biasprm[act, 2]
    ) * gear


def gain_problems(
    model: mujoco.MjModel, names, actuator_ids, kp: np.ndarray, kd: np.ndarray, source: str = "spec"
) -> tuple[list[str], int]:
    """The one gains contract, checked: each joint's actuator is a ``motor`` (the gains live only
    in the spec / ONNX metadata) or a ``position`` servo whose kp and kv equal ``kp``/``kd``.

    Returns one line per joint that breaks it, and how many position servos were compared.
    """
    bad, compared = [], 0
    for j, (name, act) in enumerate(zip(names, actuator_ids, strict=True)):
        kind = actuator_kind(model, int(act))
        if kind == "motor":
            continue
        if kind == "other":
            bad.append(f"{name}: actuator is neither a position servo nor a motor")
            continue
        compared += 1
        mkp, mkd = servo_gains(model, int(act))
        if not (np.isclose(mkp, kp[j], rtol=GAIN_RTOL) and np.isclose(mkd, kd[j], rtol=GAIN_RTOL)):
            bad.append(f"{name}: {source} kp={kp[j]:.6g} kd={kd[j]:.6g}, MJCF kp={mkp:.6g} "
                       f"kv={mkd:.6g}")
    return bad, compared


def set_position_servos(model: mujoco.MjModel, actuator_ids: np.ndarray, kp: np.ndarray,
                        kd: np.ndarray, effort: np.ndarray) -> None:
    """Make each actuator a PD position servo, in place: force = kp·(ctrl − q) − kd·q̇, clipped to
    ±effort (unclipped where it is infinite), so ``ctrl`` is the joint target. The robot's model
    gets the spec's gains this way (``robot.model.apply_spec_actuators``), the deploy loops the
    metadata's (``deploy.joint_hal``)."""
    for act, p, d, limit in zip(actuator_ids, kp, kd, effort, strict=True):
        model.actuator_gaintype[act] = mujoco.mjtGain.mjGAIN_FIXED
        model.actuator_biastype[act] = mujoco.mjtBias.mjBIAS_AFFINE
        model.actuator_gainprm[act, :] = 0.0
        model.actuator_gainprm[act, 0] = p
        model.actuator_biasprm[act, :] = 0.0
        model.actuator_biasprm[act, 1:3] = (-p, -d)
        model.actuator_gear[act, :] = 0.0
        model.actuator_gear[act, 0] = 1.0
        model.actuator_ctrllimited[act] = 0
        model.actuator_forcelimited[act] = int(np.isfinite(limit))
        model.actuator_forcerange[act] = (-limit, limit) if np.isfinite(limit) else (0.0, 0.0)
