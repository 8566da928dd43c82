"""The robot spec: what the pipeline needs to know about a robot besides its MJCF."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np

from .errors import RobotError


@dataclass(frozen=True)
class RobotSpec:
    """A robot as the pipeline sees it. Registered through ``register_robots``.

    Per-joint arrays are in ``joint_names`` order, which is the policy's
    action order and the column order of a motion's ``joint_pos``.
    """

    name: str
    """Registry name, e.g. ``q1``."""
    mjcf: Path
    """The MJCF file. May be swapped (e.g. ``Q1_XML``/``--robot-xml``); joints are then checked by name."""
    joint_names: tuple[str, ...]
    """Actuated hinge joints in policy order."""
    default_joint_pos: np.ndarray
    """[J] rad, the standing pose actions are offsets from."""
    stiffness: np.ndarray
    """[J] PD kp, N·m/rad."""
    damping: np.ndarray
    """[J] PD kd, N·m·s/rad."""
    effort_limit: np.ndarray
    """[J] N·m."""
    action_scale: np.ndarray
    """[J] rad per unit action (≈ 0.25·effort/kp)."""
    anchor_body: str
    """Body whose pose anchors tracking (usually the torso)."""
    tracked_bodies: tuple[str, ...]
    """Bodies whose poses and velocities the tracking rewards compare."""
    end_effector_bodies: tuple[str, ...]
    """Bodies checked by the end-effector height termination (hands, feet)."""
    feet: tuple[str, ...]
    self_collision_geoms: tuple[tuple[str, str], ...] = ()
    """Geom pairs (by name) whose contact counts as self-collision; empty means any two robot geoms."""
    root_body: str = ""
    """The floating-base body (first body with a free joint) when different from the anchor."""
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)


def pd_gains(
    armature: np.ndarray, natural_frequency_hz: float = 10.0, damping_ratio: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """PD gains from reflected inertia, as mjlab derives them.

    Treating each joint as a second-order system of inertia ``armature``:
    stiffness = armature·ω², damping = 2·ζ·armature·ω, ω = 2π·f.
    """
    armature = np.asarray(armature, dtype=np.float64)
    omega = 2.0 * np.pi * natural_frequency_hz
    return armature * omega**2, 2.0 * damping_ratio * armature * omega


def with_mjcf(spec: RobotSpec, mjcf: str | Path | None) -> RobotSpec:
    """``spec`` with another model file (``--robot-xml``); unchanged when ``mjcf`` is None."""
    if mjcf is None:
        return spec
    return replace(spec, mjcf=Path(mjcf))


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


def _name(model: mujoco.MjModel, obj: mujoco.mjtObj, index: int) -> str:
    return mujoco.mj_id2name(model, obj, index) or ""


def _joint_actuators(model: mujoco.MjModel) -> dict[int, list[int]]:
    by_joint: dict[int, list[int]] = {}
    for act in range(model.nu):
        if model.actuator_trntype[act] == mujoco.mjtTrn.mjTRN_JOINT:
            by_joint.setdefault(int(model.actuator_trnid[act, 0]), []).append(act)
    return by_joint


def robot_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[str]:
    """Every mismatch between a compiled model and ``spec``, one line each; empty when they agree."""
    problems: list[str] = []
    hinge = mujoco.mjtJoint.mjJNT_HINGE
    base = tuple(spec.extra.get("root_joints", ()))
    model_joints = {
        _name(model, mujoco.mjtObj.mjOBJ_JOINT, j): j
        for j in range(model.njnt)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
        and _name(model, mujoco.mjtObj.mjOBJ_JOINT, j) not in base
    }
    missing = [j for j in spec.joint_names if j not in model_joints]
    if missing:
        problems.append(f"missing joint(s): {', '.join(missing)}")
    unexpected = [j for j in model_joints if j not in spec.joint_names]
    if unexpected:
        problems.append(f"joint(s) not in the spec: {', '.join(unexpected)}")
    not_hinge = [
        j
        for j in spec.joint_names
        if j in model_joints and model.jnt_type[model_joints[j]] != hinge
    ]
    if not_hinge:
        problems.append(f"joint(s) that are not hinges: {', '.join(not_hinge)}")

    actuators = _joint_actuators(model)
    no_actuator = [
        j for j in spec.joint_names if j in model_joints and not actuators.get(model_joints[j])
    ]
    if no_actuator:
        problems.append(f"joint(s) without an actuator: {', '.join(no_actuator)}")
    doubled = [
        j
        for j in spec.joint_names
        if j in model_joints and len(actuators.get(model_joints[j], ())) > 1
    ]
    if doubled:
        problems.append(f"joint(s) driven by more than one actuator: {', '.join(doubled)}")

    bodies = {
        *spec.tracked_bodies,
        *spec.end_effector_bodies,
        *spec.feet,
        spec.anchor_body,
        *([spec.root_body] if spec.root_body else []),
    }
    missing_bodies = sorted(
        b for b in bodies if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) < 0
    )
    if missing_bodies:
        problems.append(f"missing body(ies): {', '.join(missing_bodies)}")
    geoms = sorted({g for pair in spec.self_collision_geoms for g in pair})
    missing_geoms = [g for g in geoms if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, g) < 0]
    if missing_geoms:
        problems.append(f"missing self-collision geom(s): {', '.join(missing_geoms)}")

    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if base:  # a base of named joints (e.g. a planar slide x, slide z, pitch) instead of a free joint
        missing_base = [j for j in base if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) < 0]
        if missing_base:
            problems.append(f"missing base joint(s) (extra['root_joints']): {', '.join(missing_base)}")
        if free:
            problems.append(f"extra['root_joints'] declares the base, but the model also has {len(free)} free joint(s)")
    elif len(free) != 1:
        problems.append(f"expected exactly one free joint (the floating base), found {len(free)}")
    elif (
        spec.root_body
        and _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free[0]])) != spec.root_body
    ):
        problems.append(f"the free joint is not on the root body {spec.root_body!r}")
    return problems


def check_robot_model(model: mujoco.MjModel, spec: RobotSpec) -> None:
    """Raise ``RobotError`` listing every missing/unexpected joint, body and actuator."""
    problems = robot_problems(model, spec)
    if problems:
        raise RobotError(
            f"robot {spec.name!r}: model {spec.mjcf} does not match the spec:\n    "
            + "\n    ".join(problems),
            fix=f"name joints, bodies and actuators as `primebot robots show {spec.name}` lists them, "
            "or register a RobotSpec for this model",
        )


def compile_mjcf(path: str | Path) -> mujoco.MjModel:
    """Compile an MJCF file; a missing or broken file is a ``RobotError`` naming it."""
    path = Path(path)
    if not path.is_file():
        raise RobotError(
            f"robot model file {path} does not exist", fix="check the path (Q1_XML / --robot-xml)"
        )
    try:
        return mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as exc:
        raise RobotError(
            f"robot model file {path} does not compile: {exc}", fix="fix the MJCF"
        ) from exc


def apply_spec_actuators(model: mujoco.MjModel, spec: RobotSpec, indices: RobotIndices) -> None:
    """Make each joint's actuator the spec's position servo (kp, kd, effort limit), in place.

    The spec, not the MJCF, is what deployment metadata reports, so a swapped-in
    model is driven with the same gains the policy is exported with.
    """
    for j, act in enumerate(indices.actuator_ids):
        kp, kd = float(spec.stiffness[j]), float(spec.damping[j])
        model.actuator_gaintype[act] = mujoco.mjtGain.mjGAIN_FIXED
        model.actuator_biastype[act] = mujoco.mjtBias.mjBIAS_AFFINE
        model.actuator_gainprm[act, :] = 0.0
        model.actuator_biasprm[act, :] = 0.0
        model.actuator_gainprm[act, 0] = kp
        model.actuator_biasprm[act, 1:3] = (-kp, -kd)
        model.actuator_gear[act, :] = 0.0
        model.actuator_gear[act, 0] = 1.0
        model.actuator_forcelimited[act] = 1
        model.actuator_forcerange[act] = (-spec.effort_limit[j], spec.effort_limit[j])
        model.actuator_ctrllimited[act] = 0


def load_robot_model(spec: RobotSpec, *, apply_gains: bool = True) -> mujoco.MjModel:
    """Compile ``spec.mjcf``, check it against the spec and return the MjModel.

    With ``apply_gains`` the actuators are set to the spec's PD servos so
    ``ctrl[robot_indices(model, spec).actuator_ids]`` are joint targets.
    """
    model = compile_mjcf(spec.mjcf)
    check_robot_model(model, spec)
    if apply_gains:
        apply_spec_actuators(model, spec, robot_indices(model, spec))
    return model


def robot_indices(model: mujoco.MjModel, spec: RobotSpec) -> RobotIndices:
    """Index arrays for ``spec`` in ``model`` (which must pass ``check_robot_model``)."""
    check_robot_model(model, spec)

    def body(name: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)

    def geom(name: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)

    joint_ids = np.array(
        [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in spec.joint_names],
        dtype=np.int64,
    )
    actuators = _joint_actuators(model)
    base = spec.extra.get("root_joints")
    if base:
        free = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, base[0])
    else:
        free = next(j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
    root = spec.root_body or _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free]))
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


def model_body_names(model: mujoco.MjModel) -> tuple[str, ...]:
    """Names of every body but the world, in MuJoCo order (a motion's ``body_names``)."""
    return tuple(_name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody))


def get_robot(registry, name: str, robot_xml: str | Path | None = None) -> RobotSpec:
    """The registered spec ``name``, with its MJCF swapped for ``robot_xml`` when given (``--robot-xml``)."""
    return with_mjcf(registry.get("robots", name), robot_xml)


def describe_robot(spec: RobotSpec, model: mujoco.MjModel | None = None) -> dict:
    """Joints (limits, gains, effort, default), bodies (mass), total mass and standing height, as plain data."""
    from .kinematics import standing_height  # kinematics imports this module

    model = load_robot_model(spec) if model is None else model
    ix = robot_indices(model, spec)
    keyframe = spec.extra.get("keyframe", 0)
    joints = [
        {
            "name": name,
            "lower": float(ix.joint_range[j, 0]),
            "upper": float(ix.joint_range[j, 1]),
            "default": float(spec.default_joint_pos[j]),
            "kp": float(spec.stiffness[j]),
            "kd": float(spec.damping[j]),
            "effort": float(spec.effort_limit[j]),
            "action_scale": float(spec.action_scale[j]),
            "armature": float(model.dof_armature[ix.dof_adr[j]]),
        }
        for j, name in enumerate(spec.joint_names)
    ]
    bodies = [
        {"name": name, "mass": float(model.body_mass[b + 1])}
        for b, name in enumerate(ix.body_names)
    ]
    return {
        "name": spec.name,
        "mjcf": str(spec.mjcf),
        "description": spec.description,
        "num_joints": spec.num_joints,
        "num_bodies": len(bodies),
        "mass": float(model.body_subtreemass[ix.root_body_id]),
        "height": standing_height(model, keyframe),
        "timestep": float(model.opt.timestep),
        "anchor_body": spec.anchor_body,
        "root_body": spec.root_body,
        "tracked_bodies": list(spec.tracked_bodies),
        "end_effector_bodies": list(spec.end_effector_bodies),
        "feet": list(spec.feet),
        "self_collision_pairs": [list(pair) for pair in spec.self_collision_geoms],
        "joints": joints,
        "bodies": bodies,
    }
