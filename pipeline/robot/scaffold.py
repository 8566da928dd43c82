"""``primebot robots new NAME --mjcf FILE``: a pip-installable robot plugin package from a model.

The package holds a copy of the model that meets every requirement of
docs/robots.md (a floor, one actuator per hinge carrying the spec's gains,
joint armature, a ``stand`` keyframe with the feet on the floor, a 5 ms
timestep with the implicitfast integrator), the spec
with everything guessed from the model marked ``REVIEW``, a pyproject.toml
with the ``primebot`` entry point and the model as package data, and a test.

Gains follow mjlab's rule from each joint's reflected inertia (armature):
stiffness = armature·ω², damping = 2·ζ·armature·ω (ω = 2π·f, ζ = 2),
action scale = 0.25·effort/stiffness. A model without armature or effort
limits gets estimates from the mass each joint carries (marked ``REVIEW``):
replace them with the motors' values. The natural frequency f is mjlab's
10 Hz, raised where that leaves a joint softer than 1.5 × the gravity torque
per radian it carries standing (``STANCE_STIFFNESS_SAFETY``): below that the
PD servos alone let the robot fold over, every training episode starts with a
fall, and the laptop presets do not learn (docs/robots.md, "Gains").
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from ..atomic import atomic_write_text
from ..errors import ConfigError, RobotError
from .actuators import actuator_kind
from .assets import model_files
from .checks import PHYSICS_TIMESTEP
from .kinematics import geom_vertical_extent, robot_geoms, standing_height
from .spec import compile_mjcf, pd_gains
from .statics import GRAVITY, gravity_stiffness, is_ancestor

NATURAL_FREQUENCY_HZ = 10.0
"""mjlab's natural frequency of the joint servos: the scaffold's lowest."""
STANCE_STIFFNESS_SAFETY = 1.5
"""Every joint's stiffness at least this × its gravity stiffness standing (``gravity_stiffness``)."""
FREQUENCY_STEP_HZ = 0.5
DAMPING_RATIO = 2.0
ACTION_SCALE_EFFORT_FRACTION = 0.25

MIN_ARMATURE = 0.003
"""kg·m²: the smallest estimated armature (a small servo; kp ≈ 12 N·m/rad at 10 Hz)."""
ARMATURE_PER_CARRIED_INERTIA = 0.03
"""Estimated armature = this × carried mass × (0.1·height)² (≈ 0.018 kg·m² for a 35 kg, 1.3 m robot's legs)."""
EFFORT_PER_CARRIED_TORQUE = 2.0
"""Estimated effort = this × carried mass · g · 0.1·height (≈ 90 N·m for a 35 kg, 1.3 m robot's legs)."""
MIN_EFFORT_PER_KG = 0.3
"""N·m per kg of robot: the smallest estimated effort (≈ 10 N·m for a 35 kg robot's wrists)."""

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass
class Guess:
    """What ``robots new`` derived from the model, with notes on how (the spec's REVIEW comments)."""

    name: str
    joint_names: tuple[str, ...]
    default_pose: dict[str, float]
    armature: dict[str, float]
    effort: dict[str, float]
    root_body: str
    anchor_body: str
    feet: tuple[str, ...]
    hands: tuple[str, ...]
    tracked_bodies: tuple[str, ...]
    keyframe: str
    height: float
    mass: float
    natural_frequency_hz: float = NATURAL_FREQUENCY_HZ
    """Of the servos (mjlab's 10 Hz, or higher so that they hold the robot standing)."""
    notes: dict[str, str] = field(default_factory=dict)
    """What was estimated rather than read, by topic."""
    model_changes: list[str] = field(default_factory=list)
    """What the package's copy of the model adds to the original."""


def _name(model, obj, index) -> str:
    return mujoco.mj_id2name(model, obj, index) or ""


def _check_name(name: str) -> None:
    if not NAME_PATTERN.match(name):
        raise ConfigError(
            f"robot name {name!r} is not usable as a registry and package name",
            fix="use lower-case letters, digits and underscores, starting with a letter (e.g. g1)",
        )


def _model_structure(model: mujoco.MjModel, path: Path) -> tuple[int, list[int]]:
    """The floating base's joint and the hinge joints (MJCF order); typed errors otherwise."""
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if len(free) != 1:
        raise RobotError(
            f"{path}: expected exactly one free joint (the floating base), found {len(free)}",
            fix="give the root body a <freejoint/>; a fixed-base or planar model needs a hand-written spec",
        )
    others = [j for j in range(model.njnt) if j != free[0]]
    not_hinge = [_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"#{j}" for j in others
                 if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE]
    unnamed = [f"#{j}" for j in others if not _name(model, mujoco.mjtObj.mjOBJ_JOINT, j)]
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
    """The mass a joint holds up: the whole robot for a joint on the way to a foot, else its subtree."""
    body = int(model.jnt_bodyid[joint])
    below = {b for b in range(model.nbody) if is_ancestor(model, body, b)}
    if below & feet:
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
    data = mujoco.MjData(model)
    data.qpos[:] = start
    data.qpos[model.jnt_qposadr[joints]] = pose
    mujoco.mj_kinematics(model, data)
    low = geom_vertical_extent(model, data)[0][robot_geoms(model)].min()
    data.qpos[model.jnt_qposadr[free] + 2] -= low
    return data.qpos.copy()


def guess_robot(name: str, model: mujoco.MjModel, path: Path) -> Guess:
    """Joints, bodies, feet, hands, anchor, pose, armature and effort read or guessed from ``model``."""
    free, joints = _model_structure(model, path)
    root = int(model.jnt_bodyid[free])
    notes: dict[str, str] = {}
    names = tuple(_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints)
    lo, hi = model.jnt_range[joints, 0], model.jnt_range[joints, 1]
    limited = model.jnt_limited[joints] > 0
    if model.nkey:
        pose = model.key_qpos[0][model.jnt_qposadr[joints]].copy()
        key_name = _name(model, mujoco.mjtObj.mjOBJ_KEY, 0)
        notes["default_pose"] = f"the model's first keyframe ({key_name or 'unnamed'})"
    else:
        pose = np.where(limited, np.clip(0.0, lo, hi), 0.0)
        key_name = ""
        notes["default_pose"] = "all joints at 0 (clipped into their ranges): bend the knees a little"
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
    torso = [b for b in range(1, model.nbody) if "torso" in _name(model, mujoco.mjtObj.mjOBJ_BODY, b).lower()]
    anchor = torso[0] if torso else root
    hands = [b for b in leaves if not any(is_ancestor(model, b, f) or is_ancestor(model, f, b) for f in feet)]
    hands = sorted(hands, key=lambda b: -len(_chain(model, root, b)))[:2]  # the longest limbs: not a head

    def by_side(bodies):  # left (+y) first
        return sorted(bodies, key=lambda b: -data.xpos[b, 1])

    feet, hands = by_side(feet), by_side(hands)
    tracked = [root, anchor]
    for end in [*feet, *hands]:
        chain = _chain(model, root, end)
        # a third and two thirds down the limb (hip roll and knee of a 6-joint leg), and its end
        tracked += [chain[round(len(chain) / 3) - 1], chain[round(2 * len(chain) / 3) - 1], end] if len(chain) >= 3 else chain
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
        elif act is not None and actuator_kind(model, act) == "motor" and model.actuator_ctrllimited[act]:
            eff = float(model.actuator_ctrlrange[act, 1] * model.actuator_gear[act, 0])
        else:
            eff = max(MIN_EFFORT_PER_KG * float(model.body_subtreemass[root]),
                      EFFORT_PER_CARRIED_TORQUE * carried * GRAVITY * 0.1 * height)
            estimated_effort.append(joint_name)
        effort[joint_name] = float(f"{eff:.4g}")
    # mjlab's 10 Hz, or the lowest frequency (in FREQUENCY_STEP_HZ) at which every servo is at least
    # STANCE_STIFFNESS_SAFETY × as stiff as gravity's pull on what it carries (stiffness grows as f²)
    kp_10 = np.array([armature[n] for n in names]) * (2 * math.pi * NATURAL_FREQUENCY_HZ) ** 2
    needed = STANCE_STIFFNESS_SAFETY * gravity_stiffness(model, data, joints, root, feet_set) / kp_10
    frequency = NATURAL_FREQUENCY_HZ * math.sqrt(max(1.0, float(needed.max())))
    frequency = math.ceil(frequency / FREQUENCY_STEP_HZ - 1e-9) * FREQUENCY_STEP_HZ
    weakest = names[int(np.argmax(needed))]
    if frequency > NATURAL_FREQUENCY_HZ:
        notes["gains"] = (f"mjlab's 10 Hz raised to {frequency:g} Hz: at 10 Hz {weakest} would be "
                          f"{1 / needed.max() * STANCE_STIFFNESS_SAFETY:.2f} × as stiff as the gravity torque "
                          "per radian it carries standing, and the robot folds over under its servos; lower "
                          "it only if your motors cannot hold these gains")
    else:
        notes["gains"] = f"mjlab's 10 Hz: every servo is ≥ {STANCE_STIFFNESS_SAFETY:g} × its gravity stiffness"
    if estimated_armature:
        notes["armature"] = (f"estimated for {len(estimated_armature)} joint(s) without armature in the MJCF "
                             "(0.03 × carried mass × (0.1·height)², at least 0.003): replace with your motors' "
                             "reflected inertia")
    else:
        notes["armature"] = "read from the MJCF's joints"
    if estimated_effort:
        notes["effort"] = (f"estimated for {len(estimated_effort)} joint(s) without force limits in the MJCF "
                           "(2 × carried mass · g · 0.1·height, at least 0.3 N·m per kg of robot): replace with your motors' peak torque")
    else:
        notes["effort"] = "read from the MJCF's actuator force ranges / joint actuatorfrcrange"
    body = lambda b: _name(model, mujoco.mjtObj.mjOBJ_BODY, b)  # noqa: E731
    return Guess(
        name=name, joint_names=names, default_pose=dict(zip(names, map(float, pose), strict=True)),
        armature=armature, effort=effort, root_body=body(root), anchor_body=body(anchor),
        feet=tuple(map(body, feet)), hands=tuple(map(body, hands)), tracked_bodies=tuple(map(body, tracked)),
        keyframe=key_name or "stand", height=float(height), mass=float(model.body_subtreemass[root]),
        natural_frequency_hz=frequency, notes=notes,
    )


def _height_at(model: mujoco.MjModel, qpos: np.ndarray) -> float:
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    low, high = geom_vertical_extent(model, data)
    mask = robot_geoms(model)
    return float(high[mask].max() - low[mask].min())


def gains(guess: Guess) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(armature, stiffness, damping, effort) in joint order, by mjlab's rule."""
    armature = np.array([guess.armature[j] for j in guess.joint_names])
    effort = np.array([guess.effort[j] for j in guess.joint_names])
    kp, kd = pd_gains(armature, guess.natural_frequency_hz, DAMPING_RATIO)
    return armature, kp, kd, effort


def build_model_copy(source: Path, guess: Guess) -> tuple[str, list[str]]:
    """The package's MJCF (XML text): the original plus a floor, armature, servos and the stand keyframe."""
    spec = mujoco.MjSpec.from_file(str(source))
    armature, kp, kd, effort = gains(guess)
    changes = []
    for j, name in enumerate(guess.joint_names):
        joint = spec.joint(name)
        if not math.isclose(joint.armature, armature[j], rel_tol=1e-3):
            joint.armature = float(armature[j])
            changes.append("armature")
    by_joint = {a.target: a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    for j, name in enumerate(guess.joint_names):
        act = by_joint.get(name)
        if act is None:
            act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            changes.append("actuators added")
        elif act.biastype == mujoco.mjtBias.mjBIAS_NONE:
            continue  # a motor: torque control, the gains live in the spec
        else:
            changes.append("actuator gains set")
        act.set_to_position(kp=float(kp[j]), kv=float(kd[j]))
        act.gear = [1, 0, 0, 0, 0, 0]
        act.ctrllimited = 0
        act.forcelimited = 1
        act.forcerange = [-float(effort[j]), float(effort[j])]
    if not math.isclose(spec.option.timestep, PHYSICS_TIMESTEP):
        changes.append(f"timestep {PHYSICS_TIMESTEP:g} s (was {spec.option.timestep:g})")
        spec.option.timestep = PHYSICS_TIMESTEP
    if spec.option.integrator != mujoco.mjtIntegrator.mjINT_IMPLICITFAST:
        changes.append("the implicitfast integrator")
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    model = spec.compile()
    if not any(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE and model.geom_bodyid[g] == 0
               for g in range(model.ngeom)):
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
        changes.append("a floor")
        model = spec.compile()
    free, joints = _model_structure(model, source)
    pose = np.array([guess.default_pose[j] for j in guess.joint_names])
    start = model.key_qpos[0].copy() if model.nkey else model.qpos0.copy()
    qpos = _stand_qpos(model, free, joints, pose, start)
    ctrl = np.zeros(model.nu)
    for a in range(model.nu):
        if actuator_kind(model, a) == "position" and model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
            ctrl[a] = qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]]
    if spec.keys:
        key = spec.keys[0]
        key.name = key.name or guess.keyframe
        changes.append("the first keyframe's root height and ctrl set")
    else:
        key = spec.add_key(name=guess.keyframe)
        changes.append(f"a {guess.keyframe!r} keyframe")
    key.qpos, key.ctrl = qpos.tolist(), ctrl.tolist()
    spec.compile()
    return spec.to_xml(), list(dict.fromkeys(changes))


def _py(value) -> str:
    return repr(value)


def _table(values: dict[str, float], indent: str = "    ") -> str:
    return "".join(f"{indent}{k!r}: {v!r},\n" for k, v in values.items())


def spec_source(guess: Guess, model_file: str) -> str:
    """The package's spec.py: constants (REVIEW where guessed), then the spec, then the hook."""
    n = guess.notes
    return f'''"""The {guess.name} robot for primebot, scaffolded by `primebot robots new` from its MJCF.

Review every line marked REVIEW, then run `primebot robots check {guess.name}`.
Gains follow mjlab's rule: stiffness = armature·ω², damping = 2·ζ·armature·ω
(ω = 2π·{guess.natural_frequency_hz:g} Hz, ζ = {DAMPING_RATIO:g}); action scale = {ACTION_SCALE_EFFORT_FRACTION}·effort/stiffness.
The model copy in model/ carries the same armature and gains (the gains contract,
docs/robots.md): change both together, or re-run `primebot robots new`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from primebot.pipeline.api import RobotSpec, hookimpl, pd_gains

MJCF = Path(__file__).parent / "model" / {model_file!r}

# REVIEW servo natural frequency (Hz): {n.get("gains", "")}
NATURAL_FREQUENCY_HZ = {guess.natural_frequency_hz!r}
DAMPING_RATIO = {DAMPING_RATIO!r}

# Policy joints, in the MJCF's order (the action order and a motion's joint_pos columns).
JOINT_NAMES: tuple[str, ...] = {_py(guess.joint_names)}

# REVIEW armature (kg·m²): {n.get("armature", "")}
ARMATURE = {{
{_table(guess.armature)}}}

# REVIEW effort limit (N·m): {n.get("effort", "")}
EFFORT_LIMIT = {{
{_table(guess.effort)}}}

# REVIEW standing pose (rad): {n.get("default_pose", "")}
DEFAULT_POSE = {{
{_table(guess.default_pose)}}}

# REVIEW bodies, guessed from the model's tree: feet are the bodies touching the floor in the
# standing pose, hands the ends of the two longest other limbs, the anchor a body named
# "torso" (else the root), tracked bodies the root, the anchor and three bodies per limb.
ROOT_BODY = {guess.root_body!r}
ANCHOR_BODY = {guess.anchor_body!r}
FEET = {_py(guess.feet)}
END_EFFECTOR_BODIES = {_py(guess.hands + guess.feet)}
TRACKED_BODIES = {_py(guess.tracked_bodies)}


def {guess.name}_spec(mjcf: str | Path | None = None) -> RobotSpec:
    """The {guess.name} spec; ``mjcf`` overrides the packaged model file."""
    armature = np.array([ARMATURE[j] for j in JOINT_NAMES])
    effort = np.array([EFFORT_LIMIT[j] for j in JOINT_NAMES])
    stiffness, damping = pd_gains(armature, NATURAL_FREQUENCY_HZ, DAMPING_RATIO)
    return RobotSpec(
        name={guess.name!r},
        mjcf=Path(mjcf) if mjcf else MJCF,
        joint_names=JOINT_NAMES,
        default_joint_pos=np.array([DEFAULT_POSE[j] for j in JOINT_NAMES]),
        stiffness=stiffness,
        damping=damping,
        effort_limit=effort,
        action_scale={ACTION_SCALE_EFFORT_FRACTION!r} * effort / stiffness,
        anchor_body=ANCHOR_BODY,
        tracked_bodies=TRACKED_BODIES,
        end_effector_bodies=END_EFFECTOR_BODIES,
        feet=FEET,
        self_collision_geoms=(),  # REVIEW: empty counts a contact between any two robot geoms
        root_body=ROOT_BODY,
        description={f"{guess.height:.2f} m, {guess.mass:.1f} kg, {len(guess.joint_names)} joints (scaffolded)"!r},
        extra={{
            "armature": armature,
            "keyframe": {guess.keyframe!r},
            "natural_frequency_hz": NATURAL_FREQUENCY_HZ,
            "damping_ratio": DAMPING_RATIO,
            "omega": 2 * math.pi * NATURAL_FREQUENCY_HZ,
        }},
    )


@hookimpl
def register_robots(register) -> None:
    register({guess.name}_spec())
'''


def pyproject_source(name: str, package: str) -> str:
    return f'''[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "primebot-{name.replace("_", "-")}"
version = "0.1.0"
description = "The {name} robot for primebot (scaffolded by `primebot robots new`)."
requires-python = ">=3.10"
# needs primebot installed in the same environment

[project.entry-points.primebot]
{name} = "{package}.spec"

[tool.setuptools]
packages = ["{package}"]

[tool.setuptools.package-data]
# the model and every mesh it loads: without them a non-editable install has no robot
{package} = ["model/*", "model/**/*"]
'''


def test_source(name: str, package: str) -> str:
    return f'''"""The {name} plugin registers and its model passes every `primebot robots check` check."""

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.checks import check_robot


def test_{name}_registers_and_passes_robots_check():
    spec = load_plugins().registry.get("robots", "{name}")
    errors = [f for f in check_robot(spec, simulate=False) if f.status == "error"]
    assert not errors, errors
'''


@dataclass
class Scaffold:
    folder: Path
    package: str
    guess: Guess
    model_changes: list[str]
    files: list[Path]


def scaffold_robot(name: str, mjcf: str | Path, out_dir: str | Path | None = None) -> Scaffold:
    """Write the plugin package for ``mjcf`` as robot ``name`` into ``out_dir`` (``./primebot-NAME``)."""
    _check_name(name)
    mjcf = Path(mjcf).resolve()
    folder = Path(out_dir) if out_dir else Path(f"primebot-{name.replace('_', '-')}")
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} exists and is not empty", fix="choose another folder with -o, or remove it")
    model = compile_mjcf(mjcf, name)
    guess = guess_robot(name, model, mjcf)
    xml, changes = build_model_copy(mjcf, guess)
    package = f"primebot_{name}"
    pkg = folder / package
    model_dir = pkg / "model"
    files = []
    for relative in model_files(mjcf):
        if relative.suffix.lower() == ".xml":
            continue  # includes are flattened into the copy
        target = model_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mjcf.parent / relative, target)
        files.append(target)
    model_file = f"{name}.xml"
    writes = {
        model_dir / model_file: xml,
        pkg / "__init__.py": f'"""The {name} robot for primebot."""\n',
        pkg / "spec.py": spec_source(guess, model_file),
        folder / "pyproject.toml": pyproject_source(name, package),
        folder / "tests" / f"test_{name}.py": test_source(name, package),
        folder / "README.md": (
            f"# primebot-{name.replace('_', '-')}\n\nThe {name} robot for primebot, scaffolded from "
            f"`{mjcf.name}` by `primebot robots new`.\n\n```\npip install -e .\nprimebot robots check {name}\n```\n\n"
            "Review the lines marked REVIEW in spec.py. The model copy in "
            f"{package}/model/ adds: {', '.join(changes) or 'nothing'}.\n"
        ),
    }
    for path, text in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        files.append(path)
    compile_mjcf(model_dir / model_file, name)  # the copy must load from its new folder
    guess.model_changes = changes
    return Scaffold(folder, package, guess, changes, files)
