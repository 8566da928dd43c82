"""A robot's compiled model: its MJCF compiled (``compile_mjcf``), checked against its spec
(``model_checks``), its actuators made the spec's servos (``apply_spec_actuators``) and indexed
(``robot_indices``: where each of the spec's joints, bodies and actuators is in the model)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from ..errors import RobotError
from .actuators import set_position_servos
from .model_checks import check_robot_model, joint_actuators, model_body_names, object_name
from .spec import RobotSpec


@dataclass(frozen=True)
class RobotIndices:
    """Where the spec's joints, actuators and bodies live in a compiled MjModel.

    Every per-joint array is in ``spec.joint_names`` order, so
    ``qpos[qpos_adr]`` is the policy-order joint vector and
    ``ctrl[actuator_ids] = targets`` drives it.
    """

    root_qpos_adr: int
    """First qpos index of the floating base (xyz then wxyz quaternion), or of
    the first of ``spec.extra["root_joints"]`` for a base made of named joints (planar robots)."""
    root_dof_adr: int
    joint_ids: np.ndarray
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    joint_range: np.ndarray
    """[J, 2] rad."""
    root_body_id: int
    anchor_body_id: int
    tracked_body_ids: np.ndarray
    end_effector_body_ids: np.ndarray
    feet_body_ids: np.ndarray
    self_collision_geom_pairs: np.ndarray
    """[P, 2] geom ids of ``spec.self_collision_geoms``."""
    body_names: tuple[str, ...]
    """Every body but the world, in MuJoCo order: the motion file's B axis."""


def compile_mjcf(path: str | Path, robot: str | None = None) -> mujoco.MjModel:
    """Compile an MJCF file; a missing or broken file is a ``RobotError`` naming it (and
    ``robot``)."""
    path = Path(path)
    whose = f"robot {robot!r}: " if robot else ""
    if not path.is_file():
        raise RobotError(
            f"{whose}robot model file {path} does not exist",
            fix="the spec's mjcf names it: check the path; a plugin package must ship the MJCF and "
                "its "
            "meshes as package data (`primebot robots new` writes that pyproject.toml); "
            "--robot-xml FILE overrides it",
        )
    try:
        return mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as exc:
        raise RobotError(
            f"{whose}robot model file {path} does not compile: {exc}",
            fix="fix the MJCF (mesh files are looked up relative to it and its meshdir)",
        ) from exc


def apply_spec_actuators(model: mujoco.MjModel, spec: RobotSpec, indices: RobotIndices) -> None:
    """Make each joint's actuator the spec's position servo (kp, kd, effort limit), in place.

    The spec, not the MJCF, is what deployment metadata reports, so a swapped-in
    model is driven with the same gains the policy is exported with.
    """
    set_position_servos(model, indices.actuator_ids, spec.stiffness, spec.damping,
                        spec.effort_limit)


def load_robot_model(spec: RobotSpec, *, apply_gains: bool = True) -> mujoco.MjModel:
    """Compile ``spec.mjcf``, check it against the spec and return the MjModel.

    With ``apply_gains`` the actuators are set to the spec's PD servos so
    ``ctrl[robot_indices(model, spec).actuator_ids]`` are joint targets.
    """
    model = compile_mjcf(spec.mjcf, spec.name)
    check_robot_model(model, spec)
    if apply_gains:
        apply_spec_actuators(model, spec, robot_indices(model, spec))
    return model


def robot_indices(model: mujoco.MjModel, spec: RobotSpec, *, check: bool = True) -> RobotIndices:
    """Index arrays for ``spec`` in ``model`` (which must pass ``check_robot_model``;
    ``check=False`` when the caller knows its only problems are not about names, e.g. ``robots
    check``)."""
    if check:
        check_robot_model(model, spec)

    def body(name: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)

    def geom(name: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)

    joint_ids = np.array(
        [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in spec.joint_names],
        dtype=np.int64,
    )
    actuators = joint_actuators(model)
    base = spec.extra.get("root_joints")
    if base:
        free = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, base[0])
    else:
        free = next(j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
    root = spec.root_body or object_name(model, mujoco.mjtObj.mjOBJ_BODY,
                                         int(model.jnt_bodyid[free]))
    return RobotIndices(
        root_qpos_adr=int(model.jnt_qposadr[free]),
        root_dof_adr=int(model.jnt_dofadr[free]),
        joint_ids=joint_ids,
        qpos_adr=model.jnt_qposadr[joint_ids].astype(np.int64),
        dof_adr=model.jnt_dofadr[joint_ids].astype(np.int64),
        actuator_ids=np.array([actuators[j][0] for j in joint_ids], dtype=np.int64),
        joint_range=model.jnt_range[joint_ids].copy(),
        root_body_id=body(root),
        anchor_body_id=body(spec.anchor_body),
        tracked_body_ids=np.array([body(b) for b in spec.tracked_bodies], dtype=np.int64),
        end_effector_body_ids=np.array([body(b) for b in spec.end_effector_bodies], dtype=np.int64),
        feet_body_ids=np.array([body(b) for b in spec.feet], dtype=np.int64),
        self_collision_geom_pairs=np.array(
            [(geom(a), geom(b)) for a, b in spec.self_collision_geoms], dtype=np.int64
        ).reshape(-1, 2),
        body_names=model_body_names(model),
    )
