"""What ``primebot robots new`` derives from a model and adds to its copy.

The copy meets every requirement of docs/robots.md: a floor that the feet
touch, one actuator per hinge carrying the spec's gains, joint armature, a
``stand`` keyframe with the feet on the floor and the centre of mass over
them, a 5 ms timestep with the implicitfast integrator, and a light, a skybox
and a textured floor where the model has none (robot/scenery.py). Everything
the copy adds sets its own attributes (contact bits, friction, solver
parameters, actuator dynamics) instead of inheriting the model's default
class: the Menagerie's Apollo turns contacts off in its default.

A model without armature or effort limits gets estimates from the mass each
joint carries (marked ``REVIEW``): replace them with the motors' values. The
servo gains, by mjlab's rule from the armature at each joint's frequency, are
robot/servo_gains.py's.
"""


from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from ..errors import RobotError
from .actuators import actuator_kind
from .checks import PHYSICS_TIMESTEP
from .contacts import can_touch, collision_geoms, floor_geoms
from .kinematics import geom_vertical_extent, robot_geoms, standing_height
from .model_names import element_name
from .scenery import add_scenery, free_name, model_names
from .servo_gains import (
    gains,
    joint_frequencies,
    standing_under_servos,
    stiffen_legs,
    write_servos,
)
from .stance import balancing_lean, on_floor, standing_balance
from .statics import GRAVITY, holds_foot, is_ancestor
from .training_step import choose_training_step

MIN_ARMATURE = 0.003
"""kg·m²: the smallest estimated armature (a small servo; kp ≈ 12 N·m/rad at 10 Hz)."""
ARMATURE_PER_CARRIED_INERTIA = 0.03
"""Estimated armature = this × carried mass × (0.1·height)² (≈ 0.018 kg·m² for a 35 kg, 1.3 m
robot's legs)."""
EFFORT_PER_CARRIED_TORQUE = 2.0
"""Estimated effort = this × carried mass · g · 0.1·height (≈ 90 N·m for a 35 kg, 1.3 m robot's
legs)."""
MIN_EFFORT_PER_KG = 0.3
"""N·m per kg of robot: the smallest estimated effort (≈ 10 N·m for a 35 kg robot's wrists)."""

COLLISION_GROUP = 3
"""The geom group the Menagerie's models keep their collision geoms in (visual meshes are in 1 or
2)."""
FLOOR = {
    "type": mujoco.mjtGeom.mjGEOM_PLANE, "size": [0.0, 0.0, 0.05], "condim": 3,
    "friction": [1.0, 0.005, 0.0001],
    "solref": [0.02, 1.0], "solimp": [0.9, 0.95, 0.001, 0.5, 2.0], "solmix": 1.0, "margin": 0.0,
    "gap": 0.0,
    "priority": 0, "group": 0, "rgba": [0.5, 0.5, 0.5, 1.0],
}
"""The added floor's attributes besides its contact bits: MuJoCo's built-in defaults, set
explicitly."""
FLOOR_PAIR = {"condim": 3, "friction": [1.0, 1.0, 0.005, 0.0001, 0.0001], "solref": [0.02, 1.0],
              "solimp": [0.9, 0.95, 0.001, 0.5, 2.0], "margin": 0.0, "gap": 0.0}
"""An added floor contact pair's attributes (MuJoCo's defaults for a pair)."""


@dataclass
class Guess:
    """What ``robots new`` derived from the model, with notes on how (the spec's REVIEW
    comments)."""

    name: str
    joint_names: tuple[str, ...]
    default_pose: dict[str, float]
    armature: dict[str, float]
    effort: dict[str, float]
    frequency_hz: dict[str, float]
    """Each servo's natural frequency: mjlab's 10 Hz, or higher where that would not hold the robot
    standing."""
    root_body: str
    anchor_body: str
    feet: tuple[str, ...]
    hands: tuple[str, ...]
    tracked_bodies: tuple[str, ...]
    keyframe: str
    height: float
    mass: float
    notes: dict[str, str] = field(default_factory=dict)
    """What was estimated rather than read, by topic (may quote names: escape before writing)."""
    model_changes: list[str] = field(default_factory=list)
    """What the package's copy of the model adds to the original."""
    training_overrides: tuple[str, ...] = ()
    """The spec's ``training_overrides``: the coarser physics step where the robot moves the same at
    it (robot/training_step.py)."""


def _model_structure(model: mujoco.MjModel, path: Path) -> tuple[int, list[int]]:
    """The floating base's joint and the hinge joints (MJCF order); typed errors otherwise."""
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if len(free) != 1:
        raise RobotError(
            f"{path}: expected exactly one free joint (the floating base), found {len(free)}",
            fix="give the root body a <freejoint/>; a fixed-base or planar model needs a "
                "hand-written spec",
        )
    others = [j for j in range(model.njnt) if j != free[0]]
    not_hinge = [repr(element_name(model, mujoco.mjtObj.mjOBJ_JOINT, j)) or f"#{j}" for j in others
                 if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE]
    unnamed = [f"#{j}" for j in others if not element_name(model, mujoco.mjtObj.mjOBJ_JOINT, j)]
    if not_hinge or unnamed:
        raise RobotError(
            f"{path}: policy joints must be named hinges"
            + (f"; not hinges: {', '.join(not_hinge)}" if not_hinge else "")
            + (f"; unnamed: {', '.join(unnamed)}" if unnamed else ""),
            fix="name every hinge; ball and slide joints cannot be policy joints",
        )
    if not others:
        raise RobotError(f"{path}: the model has no hinge joints to drive", fix="check the MJCF")
    return free[0], others


def _carried_mass(model: mujoco.MjModel, joint: int, feet: set[int]) -> float:
    """The mass a joint holds up: the whole robot for a joint on the way to a foot, else its
    subtree."""
    body = int(model.jnt_bodyid[joint])
    if holds_foot(model, joint, feet):
        return float(model.body_subtreemass[int(model.body_rootid[body])])
    return float(model.body_subtreemass[body])


def _chain(model: mujoco.MjModel, root: int, body: int) -> list[int]:
    """Bodies from just below ``root`` down to ``body``."""
    path = []
    while body not in (root, 0):
        path.append(body)
        body = int(model.body_parentid[body])
    return path[::-1]


def _stand_qpos(model: mujoco.MjModel, free: int, joints: list[int], pose: np.ndarray,
                start: np.ndarray) -> np.ndarray:
    """``start`` with the joints at ``pose`` and the root lowered or raised onto the floor."""
    qpos = start.copy()
    qpos[model.jnt_qposadr[joints]] = pose
    return on_floor(model, qpos, free)


def add_floor(spec: mujoco.MjSpec, model: mujoco.MjModel) -> list[str]:
    """Give ``spec`` a floor its robot stands on, if ``model`` (its compiled state) has none: a
    plane whose contact bits meet every colliding robot geom's, every other attribute set
    explicitly. When no robot geom can touch the floor (contacts come from explicit pairs, as in the
    Menagerie's Apollo, whose default class turns every geom's contact bits off), explicit pairs
    join the floor and the robot's collision geoms (group ``COLLISION_GROUP``, else its
    primitives)."""
    changes = []
    geoms = list(spec.geoms)  # in the compiled model's order (before the floor joins them)
    robot = np.flatnonzero(model.geom_bodyid > 0)
    floors = [int(f) for f in floor_geoms(model) if collision_geoms(model)[f]]
    taken = model_names(model)
    if floors:
        floor_name = element_name(model, mujoco.mjtObj.mjOBJ_GEOM, floors[0])
        touches = any(can_touch(model, int(g), f) for g in robot for f in floors)
    else:
        contype = int(np.bitwise_or.reduce(model.geom_conaffinity[robot], initial=0)) or 1
        conaffinity = int(np.bitwise_or.reduce(model.geom_contype[robot], initial=0)) or 1
        floor_name = free_name(taken, "floor")
        spec.worldbody.add_geom(name=floor_name, contype=contype, conaffinity=conaffinity, **FLOOR)
        changes.append("a floor")
        touches = bool(np.any((model.geom_contype[robot] & conaffinity)
                              | (model.geom_conaffinity[robot] & contype)))
    if touches:
        return changes
    if not floor_name:
        floor_name = geoms[floors[0]].name = free_name(taken, "floor")
    grouped = robot[model.geom_group[robot] == COLLISION_GROUP]
    primitives = robot[model.geom_type[robot] != mujoco.mjtGeom.mjGEOM_MESH]
    partners = grouped if len(grouped) else primitives if len(primitives) else robot
    for g in partners:
        geom = geoms[int(g)]
        if not geom.name:
            geom.name = free_name(taken, f"collision_{int(g)}")
        spec.add_pair(geomname1=floor_name, geomname2=geom.name, **FLOOR_PAIR)
    where = (
        f"group {COLLISION_GROUP}" if len(grouped) else "primitive" if len(primitives) else "all"
    )
    changes.append(f"contact pairs between the floor and the {len(partners)} {where} collision "
                   "geoms "
                   "(no geom of the model can touch it by its contact bits)")
    return changes


def _anchor(model: mujoco.MjModel, root: int) -> int:
    """The heaviest body named like a torso (not a camera mount on it), else the root."""
    torso = [b for b in range(1, model.nbody)
             if "torso" in element_name(model, mujoco.mjtObj.mjOBJ_BODY, b).lower()
             and is_ancestor(model, root, b)]
    return max(torso, key=lambda b: model.body_mass[b]) if torso else root


def guess_robot(name: str, model: mujoco.MjModel, path: Path) -> Guess:
    """Joints, bodies, feet, hands, anchor, pose, armature, effort and servo frequencies read or
    guessed from ``model`` (with its floor and contacts: ``add_floor``)."""
    free, joints = _model_structure(model, path)
    root = int(model.jnt_bodyid[free])
    notes: dict[str, str] = {}
    names = tuple(element_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints)
    lo, hi = model.jnt_range[joints, 0], model.jnt_range[joints, 1]
    limited = model.jnt_limited[joints] > 0
    if model.nkey:
        pose = model.key_qpos[0][model.jnt_qposadr[joints]].copy()
        key_name = element_name(model, mujoco.mjtObj.mjOBJ_KEY, 0)
        notes["default_pose"] = (
            f"the model's first keyframe ({key_name!r})"
            if key_name
            else "the model's first keyframe"
        )
    else:
        pose = np.where(limited, np.clip(0.0, lo, hi), 0.0)
        key_name = ""
        notes["default_pose"] = "all joints at 0 (clipped into their ranges)"
    start = model.key_qpos[0].copy() if model.nkey else model.qpos0.copy()
    qpos = _stand_qpos(model, free, joints, pose, start)

    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    low, _ = geom_vertical_extent(model, data)
    mask = robot_geoms(model)
    children = {int(model.body_parentid[b]) for b in range(1, model.nbody)}
    leaves = [b for b in range(1, model.nbody) if b not in children and is_ancestor(model, root, b)]
    touching = {int(model.geom_bodyid[g]) for g in np.flatnonzero(mask & (low < 0.02))}
    feet = [b for b in touching if not any(is_ancestor(model, b, o) and o != b for o in touching)]
    if not feet:
        feet = sorted(leaves, key=lambda b: data.xpos[b, 2])[:2]
    feet_set = set(feet)
    balance = standing_balance(model, data, root, feet)
    if not model.nkey or balance is None or not balance.stands:
        # a guessed pose, or a keyframe whose centre of mass is not over the middle of the feet:
        # lean it there
        lean = balancing_lean(model, qpos, free, joints, root, feet)
        if lean is not None and lean.angle and (model.nkey == 0 or lean.balance.stands):
            qpos = lean.qpos
            pose = qpos[model.jnt_qposadr[joints]].copy()
            joint = lambda j: element_name(model, mujoco.mjtObj.mjOBJ_JOINT, j)  # noqa: E731
            moved = ", ".join(f"{joint(j)!r} {before:+.3f} → {after:+.3f}"
                              for j, (before, after) in lean.changes.items())
            notes["default_pose"] += (f", leaned {lean.angle:+.3f} rad over the feet ({moved}) to "
                                      "put the centre of "
                                      "mass over the middle of the support polygon")
        elif lean is None:
            notes["default_pose"] += (
                "; the legs have no two pitch joints to lean it over the feet: check its balance"
            )
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
    anchor = _anchor(model, root)
    hands = [b for b in leaves
             if not any(is_ancestor(model, b, f) or is_ancestor(model, f, b) for f in feet)]
    # the longest limbs: not a head
    hands = sorted(hands, key=lambda b: -len(_chain(model, root, b)))[:2]

    def by_side(bodies):  # left (+y) first
        return sorted(bodies, key=lambda b: -data.xpos[b, 1])

    feet, hands = by_side(feet), by_side(hands)
    tracked = [root, anchor]
    for end in [*feet, *hands]:
        chain = _chain(model, root, end)
        # a third and two thirds down the limb (hip roll and knee of a 6-joint leg), and its end
        tracked += (
            [chain[round(len(chain) / 3) - 1], chain[round(2 * len(chain) / 3) - 1], end]
            if len(chain) >= 3
            else chain
        )
    tracked = list(dict.fromkeys(tracked))

    height = standing_height(model) if model.nkey else _height_at(model, qpos)
    armature, effort = {}, {}
    actuators = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)
                 if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
    estimated_armature, estimated_effort = [], []
    for j, joint_name in zip(joints, names, strict=True):
        carried = _carried_mass(model, j, feet_set)
        arm = float(model.dof_armature[model.jnt_dofadr[j]])
        if arm <= 0:
            arm = max(MIN_ARMATURE, ARMATURE_PER_CARRIED_INERTIA * carried * (0.1 * height) ** 2)
            estimated_armature.append(joint_name)
        armature[joint_name] = float(f"{arm:.4g}")
        act = actuators.get(j)
        if act is not None and model.actuator_forcelimited[act]:
            eff = float(model.actuator_forcerange[act, 1])
        elif model.jnt_actfrclimited[j]:
            eff = float(model.jnt_actfrcrange[j, 1])
        elif (
            act is not None
            and actuator_kind(model, act) == "motor"
            and model.actuator_ctrllimited[act]
        ):
            eff = float(model.actuator_ctrlrange[act, 1] * model.actuator_gear[act, 0])
        else:
            eff = max(MIN_EFFORT_PER_KG * float(model.body_subtreemass[root]),
                      EFFORT_PER_CARRIED_TORQUE * carried * GRAVITY * 0.1 * height)
            estimated_effort.append(joint_name)
        effort[joint_name] = float(f"{eff:.4g}")
    frequency, notes["gains"] = joint_frequencies(model, data, joints, names, root, feet_set,
                                                  armature)
    if estimated_armature:
        notes["armature"] = (f"estimated for {len(estimated_armature)} joint(s) without armature "
                             "in the MJCF "
                             "(0.03 × carried mass × (0.1·height)², at least 0.003): replace with "
                             "your motors' "
                             "reflected inertia")
    else:
        notes["armature"] = "read from the MJCF's joints"
    if estimated_effort:
        notes["effort"] = (f"estimated for {len(estimated_effort)} joint(s) without force limits "
                           "in the MJCF "
                           "(2 × carried mass · g · 0.1·height, at least 0.3 N·m per kg of robot): "
                           "replace with your motors' peak torque")
    else:
        notes["effort"] = "read from the MJCF's actuator force ranges / joint actuatorfrcrange"
    body = lambda b: element_name(model, mujoco.mjtObj.mjOBJ_BODY, b)  # noqa: E731
    return Guess(
        name=name, joint_names=names, default_pose=dict(zip(names, map(float, pose), strict=True)),
        armature=armature, effort=effort, frequency_hz=frequency, root_body=body(root),
        anchor_body=body(anchor),
        feet=tuple(map(body, feet)), hands=tuple(map(body, hands)),
        tracked_bodies=tuple(map(body, tracked)),
        keyframe=key_name or "stand", height=float(height),
        mass=float(model.body_subtreemass[root]), notes=notes,
    )


def _height_at(model: mujoco.MjModel, qpos: np.ndarray) -> float:
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    low, high = geom_vertical_extent(model, data)
    mask = robot_geoms(model)
    return float(high[mask].max() - low[mask].min())


def complete_model(spec: mujoco.MjSpec, model: mujoco.MjModel, guess: Guess) -> list[str]:
    """Add to ``spec`` (compiled: ``model``) what the requirements need and the model lacks:
    armature, servos, the timestep and integrator, the standing keyframe, and the light, sky and
    floor texture of a video."""
    armature = gains(guess)[0]
    changes = []
    unlimited = 0
    for j, name in enumerate(guess.joint_names):
        joint = spec.joint(name)
        if not math.isclose(joint.armature, armature[j], rel_tol=1e-3):
            joint.armature = float(armature[j])
            changes.append("armature")
        # motion authoring and the task's soft limits need a range
        if not model.jnt_limited[model.joint(name).id]:
            joint.limited, joint.range = mujoco.mjtLimited.mjLIMITED_TRUE, [-math.pi, math.pi]
            unlimited += 1
    if unlimited:
        changes.append(f"a ±π range on {unlimited} hinge(s) without one")
    changes += write_servos(spec, model, guess)
    if not math.isclose(spec.option.timestep, PHYSICS_TIMESTEP):
        changes.append(f"timestep {PHYSICS_TIMESTEP:g} s (was {spec.option.timestep:g})")
        spec.option.timestep = PHYSICS_TIMESTEP
    if spec.option.integrator != mujoco.mjtIntegrator.mjINT_IMPLICITFAST:
        changes.append("the implicitfast integrator")
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    for flag, what in ((mujoco.mjtDisableBit.mjDSBL_CONTACT, "contacts"),
                       (mujoco.mjtDisableBit.mjDSBL_GRAVITY, "gravity"),
                       (mujoco.mjtDisableBit.mjDSBL_CONSTRAINT, "constraints")):
        if spec.option.disableflags & int(flag):  # the floor and the servos need them
            spec.option.disableflags &= ~int(flag)
            changes.append(f"{what} enabled (the model's <option><flag> turned them off)")
    model = spec.compile()
    free, joints = _model_structure(model, Path(guess.name))
    pose = np.array([guess.default_pose[j] for j in guess.joint_names])
    start = model.key_qpos[0].copy() if model.nkey else model.qpos0.copy()
    qpos = _stand_qpos(model, free, joints, pose, start)
    ctrl = np.zeros(model.nu)
    for a in range(model.nu):
        if (
            actuator_kind(model, a) == "position"
            and model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        ):
            ctrl[a] = qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]]
    if spec.keys:
        key = spec.keys[0]
        key.name = key.name or guess.keyframe
        changes.append("the first keyframe's root height and ctrl set")
    else:
        key = spec.add_key(name=guess.keyframe)
        changes.append(f"a {guess.keyframe!r} keyframe")
    key.qpos, key.ctrl, key.qvel, key.time = qpos.tolist(), ctrl.tolist(), [0.0] * model.nv, 0.0
    changes += add_scenery(spec, model, guess.height)
    return list(dict.fromkeys(changes))


def build_model_copy(source: Path, name: str,
                     model: mujoco.MjModel | None = None) -> tuple[str, Guess, list[str]]:
    """The package's MJCF (XML text) for the model at ``source`` (``model``: it compiled, if at
    hand), the guess it was built from, and what it adds to the original."""
    spec = mujoco.MjSpec.from_file(str(source))
    changes = add_floor(spec, spec.compile() if model is None else model)
    model = spec.compile()
    guess = guess_robot(name, model, source)
    changes += complete_model(spec, model, guess)
    guess.notes["gains"] += stiffen_legs(spec, guess)
    served = spec.compile()  # the copy as written, its servos set on this compiled model alone
    standing = standing_under_servos(served, guess)
    guess.training_overrides, guess.notes["training_step"] = choose_training_step(
        served, standing, served.body(guess.anchor_body).id, served.body(guess.root_body).id)
    guess.model_changes = list(dict.fromkeys(changes))
    return spec.to_xml(), guess, guess.model_changes
