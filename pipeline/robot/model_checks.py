"""Does a compiled MJCF fit its robot spec? The model requirements of docs/robots.md, one check
each.

``robot_problems`` lists every mismatch (a ``ModelProblem`` with its fix and the requirement it
breaks: names, actuators, armature, keyframe, floor, …); ``check_robot_model`` raises them as one
``RobotError``. ``robots check`` prints them beside its physical checks (``robot.checks``);
loading a robot (``spec.load_robot_model``, ``spec.robot_indices``) refuses a model with any.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from ..errors import RobotError
from .actuators import GAIN_RTOL, actuator_kind, gain_problems
from .contacts import can_touch, collision_geoms, floor_geoms
from .statics import is_ancestor

if TYPE_CHECKING:
    from .spec import RobotSpec


def object_name(model: mujoco.MjModel, obj: mujoco.mjtObj, index: int) -> str:
    return mujoco.mj_id2name(model, obj, index) or ""


def joint_actuators(model: mujoco.MjModel) -> dict[int, list[int]]:
    by_joint: dict[int, list[int]] = {}
    for act in range(model.nu):
        if model.actuator_trntype[act] == mujoco.mjtTrn.mjTRN_JOINT:
            by_joint.setdefault(int(model.actuator_trnid[act, 0]), []).append(act)
    return by_joint


def model_body_names(model: mujoco.MjModel) -> tuple[str, ...]:
    """Names of every body but the world, in MuJoCo order (a motion's ``body_names``)."""
    return tuple(object_name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody))


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
    actuators = joint_actuators(model)
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
        object_name(model, mujoco.mjtObj.mjOBJ_JOINT, j): j
        for j in range(model.njnt)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
        and object_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) not in base
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
    keys = [object_name(model, mujoco.mjtObj.mjOBJ_KEY, k) for k in range(model.nkey)]
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
    names = [object_name(model, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(model.ngeom)]
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
    root = object_name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free[0]]))
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
