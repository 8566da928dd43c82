"""The robot spec: what the pipeline needs to know about a robot besides its MJCF."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import mujoco
import numpy as np

from ..errors import RobotError
from .actuators import GAIN_RTOL, actuator_kind, gain_problems
from .contacts import can_touch, collision_geoms, floor_geoms
from .statics import is_ancestor

PER_JOINT_FIELDS = ("default_joint_pos", "stiffness", "damping", "effort_limit", "action_scale")
"""RobotSpec fields that hold one value per joint, in ``joint_names`` order."""


@dataclass(frozen=True)
class RobotSpec:
    """A robot as the pipeline sees it. Registered through ``register_robots``.

    Per-joint arrays are in ``joint_names`` order, which is the policy's
    action order and the column order of a motion's ``joint_pos``.
    """

    name: str
    """Registry name, e.g. ``q1``."""
    mjcf: Path = None
    """The MJCF file. May be swapped (e.g. ``--robot-xml``); joints are then checked by name."""
    joint_names: tuple[str, ...] = None
    """Actuated hinge joints in policy order."""
    default_joint_pos: np.ndarray = None
    """[J] rad, the standing pose actions are offsets from."""
    stiffness: np.ndarray = None
    """[J] PD kp, N·m/rad."""
    damping: np.ndarray = None
    """[J] PD kd, N·m·s/rad."""
    effort_limit: np.ndarray = None
    """[J] N·m."""
    action_scale: np.ndarray = None
    """[J] rad per unit action (≈ 0.25·effort/kp)."""
    anchor_body: str = None
    """Body whose pose anchors tracking (usually the torso)."""
    tracked_bodies: tuple[str, ...] = None
    """Bodies whose poses and velocities the tracking rewards compare."""
    end_effector_bodies: tuple[str, ...] = None
    """Bodies checked by the end-effector height termination (hands, feet)."""
    feet: tuple[str, ...] = None
    self_collision_geoms: tuple[tuple[str, str], ...] = ()
    """Geom pairs (by name) whose contact counts as self-collision; empty means any two robot
    geoms."""
    root_body: str = ""
    """The floating-base body (first body with a free joint) when different from the anchor."""
    description: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a spec with a missing field or a per-joint array of the wrong length, naming
        each."""
        missing = [f.name for f in fields(self) if getattr(self, f.name) is None]
        if missing:
            raise RobotError(
                f"robot spec {self.name!r} is missing field(s): {', '.join(missing)}",
                fix="pass every field to RobotSpec(...) (docs/robots.md lists them); "
                "`primebot robots new NAME --mjcf FILE` writes a complete spec",
            )
        object.__setattr__(self, "mjcf", Path(self.mjcf))
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        count, wrong = len(self.joint_names), []
        for name in PER_JOINT_FIELDS:
            values = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            object.__setattr__(self, name, values)
            if len(values) != count:
                wrong.append(f"{name} has {len(values)} value(s)")
            elif not np.all(np.isfinite(values)):
                wrong.append(f"{name} has non-finite values")
        if "armature" in self.extra and np.size(self.extra["armature"]) != count:
            wrong.append(f"extra['armature'] has {np.size(self.extra['armature'])} value(s)")
        if wrong:
            raise RobotError(
                f"robot spec {self.name!r}: {'; '.join(wrong)} for {count} joint(s) in joint_names",
                fix=f"give one finite value per joint, in joint_names order ({count} values)",
            )

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)


def pd_gains(
    armature: np.ndarray, natural_frequency_hz: float | np.ndarray = 10.0,
    damping_ratio: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """PD gains from reflected inertia, as mjlab derives them.

    Treating each joint as a second-order system of inertia ``armature``:
    stiffness = armature·ω², damping = 2·ζ·armature·ω, ω = 2π·f (one f for all joints, or one per
    joint).
    """
    armature = np.asarray(armature, dtype=np.float64)
    omega = 2.0 * np.pi * np.asarray(natural_frequency_hz, dtype=np.float64)
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


class ModelProblem(str):
    """One line of ``robot_problems``: what is wrong, with ``fix`` saying what to change and
    ``check`` the requirement it breaks (``names``, ``actuators``, ``armature``, ``keyframe``,
    ``floor``)."""

    fix: str
    check: str

    def __new__(cls, text: str, fix: str = "", check: str = "names") -> ModelProblem:
        problem = super().__new__(cls, text)
        problem.fix, problem.check = fix, check
        return problem


def _did_you_mean(missing: list[str], candidates) -> str:
    """`` (did you mean a → b?)`` for each missing name with a close candidate, else ``""``."""
    pairs = [
        f"{name!r} → {close[0]!r}"
        for name in missing
        if (close := difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6))
    ]
    return f"did you mean {', '.join(pairs)}? " if pairs else ""


def has_floor(model: mujoco.MjModel) -> bool:
    """Whether the world body holds a colliding plane (the floor: contact bits set, or named by a
    pair)."""
    return bool(collision_geoms(model)[floor_geoms(model)].any())


def _feet_off_the_floor(model: mujoco.MjModel, spec: RobotSpec) -> list[str]:
    """The spec's feet none of whose geoms (the foot body's and its children's) can touch a
    floor."""
    floors = [f for f in floor_geoms(model) if collision_geoms(model)[f]]
    out = []
    for foot in spec.feet:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, foot)
        if body < 0:
            continue  # a missing body is the names check's
        below = [b for b in range(model.nbody) if is_ancestor(model, body, b)]
        geoms = np.flatnonzero(np.isin(model.geom_bodyid, below))
        if not any(can_touch(model, int(g), int(f)) for g in geoms for f in floors):
            out.append(foot)
    return out


def robot_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[ModelProblem]:
    """Every mismatch between a compiled model and ``spec``, one line each (with its ``fix``);
    empty when they agree. These are the model requirements of docs/robots.md."""
    joints = _policy_joints(model, spec)
    actuators = _joint_actuators(model)
    driven = _driven_joints(spec, joints, actuators)
    return [
        *_joint_name_problems(spec, joints),
        *_hinge_problems(model, spec, joints),
        *_actuator_count_problems(spec, joints, actuators),
        *_actuator_gain_problems(model, spec, driven),
        *_force_limit_problems(model, spec, driven),
        *_armature_problems(model, spec, joints),
        *_keyframe_problems(model, spec),
        *_floor_problems(model, spec),
        *_body_problems(model, spec),
        *_self_collision_geom_problems(model, spec),
        *_floating_base_problems(model, spec, joints),
    ]


def _policy_joints(model: mujoco.MjModel, spec: RobotSpec) -> dict[str, int]:
    """The model's joints by name, in model order, that ``joint_names`` must list: all but free
    joints and the base joints of ``extra['root_joints']``."""
    base = tuple(spec.extra.get("root_joints", ()))
    return {
        _name(model, mujoco.mjtObj.mjOBJ_JOINT, j): j
        for j in range(model.njnt)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
        and _name(model, mujoco.mjtObj.mjOBJ_JOINT, j) not in base
    }


def _driven_joints(
    spec: RobotSpec, joints: dict[str, int], actuators: dict[int, list[int]]
) -> list[tuple[str, int, int]]:
    """(name, actuator, column in ``joint_names``) of each spec joint with exactly one actuator."""
    return [
        (j, actuators[joints[j]][0], k)
        for k, j in enumerate(spec.joint_names)
        if j in joints and len(actuators.get(joints[j], ())) == 1
    ]


def _joint_name_problems(spec: RobotSpec, joints: dict[str, int]) -> list[ModelProblem]:
    """``joint_names`` against the model's policy joints: missing ones, then unlisted ones."""
    problems = []
    missing = [j for j in spec.joint_names if j not in joints]
    unexpected = [j for j in joints if j not in spec.joint_names]
    if missing:
        problems.append(ModelProblem(
            f"missing joint(s): {', '.join(missing)}",
            f"{_did_you_mean(missing, unexpected or joints)}joint_names must use the MJCF's joint "
            "names",
        ))
    if unexpected:
        problems.append(ModelProblem(
            f"joint(s) not in the spec: {', '.join(unexpected)}",
            "add them to joint_names (and every per-joint array), or remove them from the MJCF",
        ))
    return problems


def _hinge_problems(
    model: mujoco.MjModel, spec: RobotSpec, joints: dict[str, int]
) -> list[ModelProblem]:
    """Spec joints in the model that are not hinges."""
    hinge = mujoco.mjtJoint.mjJNT_HINGE
    not_hinge = [j for j in spec.joint_names if j in joints and model.jnt_type[joints[j]] != hinge]
    if not not_hinge:
        return []
    return [ModelProblem(
        f"joint(s) that are not hinges: {', '.join(not_hinge)}", "policy joints must be hinges"
    )]


def _actuator_count_problems(
    spec: RobotSpec, joints: dict[str, int], actuators: dict[int, list[int]]
) -> list[ModelProblem]:
    """Spec joints in the model without an actuator, then those with more than one."""
    problems = []
    present = [j for j in spec.joint_names if j in joints]
    no_actuator = [j for j in present if not actuators.get(joints[j])]
    doubled = [j for j in present if len(actuators.get(joints[j], ())) > 1]
    if no_actuator:
        problems.append(ModelProblem(
            f"joint(s) without an actuator: {', '.join(no_actuator)}",
            "add one <motor joint=...> or <position joint=... kp=... kv=...> with the spec's gains "
            "per joint",
            check="actuators",
        ))
    if doubled:
        problems.append(ModelProblem(
            f"joint(s) driven by more than one actuator: {', '.join(doubled)}",
            "keep exactly one actuator per joint",
            check="actuators",
        ))
    return problems


def _actuator_gain_problems(
    model: mujoco.MjModel, spec: RobotSpec, driven: list[tuple[str, int, int]]
) -> list[ModelProblem]:
    """The gains contract (``gain_problems``) between the spec and the driven joints' actuators."""
    if not driven:
        return []
    names, acts, cols = zip(*driven, strict=True)
    cols = list(cols)
    bad, _ = gain_problems(model, names, acts, spec.stiffness[cols], spec.damping[cols])
    if not bad:
        return []
    return [ModelProblem(
        "actuator gains differ from the spec's: " + "; ".join(bad),
        "one gains contract: the spec's stiffness/damping drive every joint (training, export, "
        "sim2sim); an MJCF <position> actuator must carry the same kp and kv, or be a <motor> "
        "(torque, no gains in the MJCF)",
        check="actuators",
    )]


def _force_limit_problems(
    model: mujoco.MjModel, spec: RobotSpec, driven: list[tuple[str, int, int]]
) -> list[ModelProblem]:
    """Force-limited position servos whose forcerange is not the spec's ``effort_limit``."""
    limited = [
        f"{name} forcerange ±{model.actuator_forcerange[act, 1]:.6g}, spec effort "
        f"{spec.effort_limit[k]:.6g}"
        for name, act, k in driven
        if model.actuator_forcelimited[act] and actuator_kind(model, act) == "position"
        and not np.isclose(model.actuator_forcerange[act, 1], spec.effort_limit[k], rtol=GAIN_RTOL)
    ]
    if not limited:
        return []
    return [ModelProblem(
        "actuator force limits differ from the spec's effort_limit: " + "; ".join(limited),
        "set forcerange=\"-E E\" with the spec's effort limit E, or drop forcelimited",
        check="actuators",
    )]


def _armature_problems(
    model: mujoco.MjModel, spec: RobotSpec, joints: dict[str, int]
) -> list[ModelProblem]:
    """The MJCF's joint armature against ``extra['armature']``, when the spec gives one."""
    if "armature" not in spec.extra:
        return []
    armature = np.asarray(spec.extra["armature"], dtype=np.float64)
    present = [(k, j) for k, j in enumerate(spec.joint_names) if j in joints]
    off = [
        f"{j} spec {armature[k]:.6g}, MJCF {model.dof_armature[model.jnt_dofadr[joints[j]]]:.6g}"
        for k, j in present
        if not np.isclose(model.dof_armature[model.jnt_dofadr[joints[j]]], armature[k],
                          rtol=GAIN_RTOL)
    ]
    if not off:
        return []
    return [ModelProblem(
        "joint armature differs from extra['armature']: " + "; ".join(off),
        "the MJCF is what training, sim2sim and the deploy bundle simulate: set armature=... on "
        "each joint in the MJCF (or drop extra['armature'])",
        check="armature",
    )]


def _keyframe_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[ModelProblem]:
    """A keyframe named by ``extra['keyframe']`` that the model lacks."""
    keyframe = spec.extra.get("keyframe")
    if (
        not isinstance(keyframe, str)
        or mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, keyframe) >= 0
    ):
        return []
    keys = [_name(model, mujoco.mjtObj.mjOBJ_KEY, k) for k in range(model.nkey)]
    return [ModelProblem(
        f"keyframe {keyframe!r} (extra['keyframe']) is not in the model "
        f"(keyframes: {', '.join(repr(k) for k in keys) or 'none'})",
        f"{_did_you_mean([keyframe], keys)}add <keyframe><key name={keyframe!r} "
        "qpos=\"...\"/></keyframe> "
        "with the standing pose on the floor (`primebot robots new` writes one)",
        check="keyframe",
    )]


def _floor_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[ModelProblem]:
    """A model without a floor (``has_floor``), or with feet that cannot touch it."""
    if not has_floor(model):
        return [ModelProblem(
            "no floor: the model has no colliding plane on the world body",
            'add <geom name="floor" type="plane" size="0 0 0.05" contype="1" conaffinity="1"/> to '
            '<worldbody> '
            "(contact bits set on the floor itself: a default class may turn them off)",
            check="floor",
        )]
    off = _feet_off_the_floor(model, spec)
    if not off:
        return []
    return [ModelProblem(
        f"the feet cannot touch the floor: no geom of {', '.join(off)} shares a contact bit with "
        "it "
        "(contype/conaffinity) or an explicit <pair>",
        "give the feet's collision geoms contype/conaffinity bits the floor's conaffinity/contype "
        "has, or add "
        '<contact><pair geom1="FOOT_GEOM" geom2="floor"/></contact> for each sole (`primebot '
        'robots new` adds the pairs)',
        check="floor",
    )]


def _body_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[ModelProblem]:
    """Bodies the spec names (tracked, end effectors, feet, anchor, root) that the model lacks."""
    bodies = {
        *spec.tracked_bodies,
        *spec.end_effector_bodies,
        *spec.feet,
        spec.anchor_body,
        *([spec.root_body] if spec.root_body else []),
    }
    missing = sorted(b for b in bodies if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) < 0)
    if not missing:
        return []
    return [ModelProblem(
        f"missing body(ies): {', '.join(missing)}",
        f"{_did_you_mean(missing, model_body_names(model))}use the MJCF's body names",
    )]


def _self_collision_geom_problems(model: mujoco.MjModel, spec: RobotSpec) -> list[ModelProblem]:
    """Geoms of ``self_collision_geoms`` that the model lacks."""
    geoms = sorted({g for pair in spec.self_collision_geoms for g in pair})
    missing = [g for g in geoms if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, g) < 0]
    if not missing:
        return []
    names = [_name(model, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(model.ngeom)]
    return [ModelProblem(
        f"missing self-collision geom(s): {', '.join(missing)}",
        f"{_did_you_mean(missing, [n for n in names if n])}name the geoms in the MJCF, "
        "or leave self_collision_geoms empty (any two robot geoms)",
    )]


def _floating_base_problems(
    model: mujoco.MjModel, spec: RobotSpec, joints: dict[str, int]
) -> list[ModelProblem]:
    """The floating base: the named joints of ``extra['root_joints']`` and no free joint, or else
    exactly one free joint, on ``root_body`` when the spec names one."""
    base = tuple(spec.extra.get("root_joints", ()))
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    base_fix = "the floating base is one <freejoint/> on the root body"
    # a base of named joints (e.g. a planar slide x, slide z, pitch) instead of a free joint
    if base:
        problems = []
        missing = [j for j in base if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) < 0]
        if missing:
            problems.append(ModelProblem(
                f"missing base joint(s) (extra['root_joints']): {', '.join(missing)}",
                f"{_did_you_mean(missing, joints)}name them as in the MJCF",
            ))
        if free:
            problems.append(ModelProblem(
                f"extra['root_joints'] declares the base, but the model also has {len(free)} free "
                "joint(s)",
                "remove the free joint, or extra['root_joints']",
            ))
        return problems
    if len(free) != 1:
        return [ModelProblem(
            f"expected exactly one free joint (the floating base), found {len(free)}", base_fix
        )]
    root = _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free[0]]))
    if spec.root_body and root != spec.root_body:
        return [ModelProblem(f"the free joint is not on the root body {spec.root_body!r}",
                             base_fix)]
    return []


def check_robot_model(model: mujoco.MjModel, spec: RobotSpec) -> None:
    """Raise ``RobotError`` listing every mismatch between the model and the spec, each with its
    fix."""
    problems = robot_problems(model, spec)
    if problems:
        lines = [f"{p}\n        fix: {p.fix}" if p.fix else str(p) for p in problems]
        raise RobotError(
            f"robot {spec.name!r}: model {spec.mjcf} does not match the spec:\n    "
            + "\n    ".join(lines),
            fix=f"change the MJCF or the spec as each line says (docs/robots.md lists the model "
            f"requirements); `primebot robots check {spec.name}` runs every check",
        )


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
    """The registered spec ``name``, with its MJCF swapped for ``robot_xml`` when given
    (``--robot-xml``)."""
    return with_mjcf(registry.get("robots", name), robot_xml)
