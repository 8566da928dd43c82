"""``primebot robots new NAME --mjcf FILE``: a pip-installable robot plugin package from a model.

The package holds a copy of the model completed by robot/model_guess.py (a
floor, actuators with the spec's gains, armature, a ``stand`` keyframe, the
timestep, scenery), the spec with everything guessed from the model marked
``REVIEW``, a pyproject.toml with the ``primebot`` entry point and the model as
package data, a README and a test.

**Names from the model never become code** (robot/model_names.py): names that
are not printable are refused before anything is written; every name written
into spec.py is a Python literal (``repr``), every comment and the README
escape what they quote (``printable``), and the XML copy is written by MuJoCo.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_write_text
from ..errors import ConfigError
from .assets import model_files
from .model import compile_mjcf
from .model_guess import Guess, build_model_copy
from .model_names import check_robot_name, printable, refuse_unsafe_names
from .servo_gains import ACTION_SCALE_EFFORT_FRACTION, DAMPING_RATIO


def _table(values: dict[str, float], indent: str = "    ") -> str:
    return "".join(f"{indent}{k!r}: {v!r},\n" for k, v in values.items())


def spec_source(guess: Guess, model_file: str) -> str:
    """The package's spec.py: constants (REVIEW where guessed), then the spec, then the hook.

    Model names appear only as Python literals (``repr``) and in comments through ``printable``."""
    check_robot_name(guess.name)
    n = {topic: printable(note) for topic, note in guess.notes.items()}
    about = (f"{guess.height:.2f} m, {guess.mass:.1f} kg, {len(guess.joint_names)} joints "
             "(scaffolded)")
    return f'''\
"""The {guess.name} robot for primebot, scaffolded by `primebot robots new` from its MJCF.

Review every line marked REVIEW, then run `primebot robots check {guess.name}`.
Gains follow mjlab's rule: stiffness = armature·ω², damping = 2·ζ·armature·ω
(ω = 2π·f with each joint's f below, ζ = {DAMPING_RATIO:g}); action scale = \
{ACTION_SCALE_EFFORT_FRACTION}·effort/stiffness.
The model copy in model/ carries the same armature and gains (the gains contract,
docs/robots.md): change both together, or re-run `primebot robots new`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from primebot.pipeline.api import RobotSpec, hookimpl, pd_gains

MJCF = Path(__file__).parent / "model" / {model_file!r}

DAMPING_RATIO = {DAMPING_RATIO!r}

# Policy joints, in the MJCF's order (the action order and a motion's joint_pos columns).
JOINT_NAMES: tuple[str, ...] = {guess.joint_names!r}

# REVIEW servo natural frequency (Hz): {n.get("gains", "")}
NATURAL_FREQUENCY_HZ = {{
{_table(guess.frequency_hz)}}}

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
# standing pose, hands the ends of the two longest other limbs, the anchor the heaviest body named
# like a torso (else the root), tracked bodies the root, the anchor and three bodies per limb.
ROOT_BODY = {guess.root_body!r}
ANCHOR_BODY = {guess.anchor_body!r}
FEET = {guess.feet!r}
END_EFFECTOR_BODIES = {guess.hands + guess.feet!r}
TRACKED_BODIES = {guess.tracked_bodies!r}

# REVIEW training physics step: {n.get("training_step", "")}
TRAINING_OVERRIDES: tuple[str, ...] = {guess.training_overrides!r}


def {guess.name}_spec(mjcf: str | Path | None = None) -> RobotSpec:
    """The {guess.name} spec; ``mjcf`` overrides the packaged model file."""
    armature = np.array([ARMATURE[j] for j in JOINT_NAMES])
    effort = np.array([EFFORT_LIMIT[j] for j in JOINT_NAMES])
    frequency = np.array([NATURAL_FREQUENCY_HZ[j] for j in JOINT_NAMES])
    stiffness, damping = pd_gains(armature, frequency, DAMPING_RATIO)
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
        description={about!r},
        training_overrides=TRAINING_OVERRIDES,
        extra={{
            "armature": armature,
            "keyframe": {guess.keyframe!r},
            "natural_frequency_hz": frequency,
            "damping_ratio": DAMPING_RATIO,
            "omega": 2 * math.pi * frequency,
        }},
    )


@hookimpl
def register_robots(register) -> None:
    register({guess.name}_spec())
'''


def pyproject_source(name: str, package: str) -> str:
    check_robot_name(name)
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

# the package and its model folder: the model's folders are found as namespace packages, so that
# setuptools installs them as data without a warning per folder
[tool.setuptools.packages.find]
include = ["{package}", "{package}.*"]
namespaces = true

[tool.setuptools.package-data]
# the model and every mesh it loads: without them a non-editable install has no robot
"*" = ["*"]
'''


def test_source(name: str, package: str) -> str:
    check_robot_name(name)
    return f'''\
"""The {name} plugin registers and its model passes every `primebot robots check` check."""

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.checks import check_robot


def test_{name}_registers_and_passes_robots_check():
    spec = load_plugins().registry.get("robots", {name!r})
    errors = [f for f in check_robot(spec, simulate=False) if f.status == "error"]
    assert not errors, errors
'''


def readme_source(name: str, package: str, source_name: str, changes: list[str]) -> str:
    """The package's README: ``source_name`` (the MJCF's file name) and ``changes`` escaped with
    ``printable``."""
    check_robot_name(name)
    added = printable(", ".join(changes) or "nothing")
    return (f"# primebot-{name.replace('_', '-')}\n\nThe {name} robot for primebot, scaffolded "
            "from "
            f"`{printable(source_name).replace('`', chr(39))}` by `primebot robots "
            "new`.\n\n```\npip install -e .\n"
            f"primebot robots check {name}\n```\n\nReview the lines marked REVIEW in spec.py. The "
            "model copy in "
            f"{package}/model/ adds: {added}.\n")


@dataclass
class Scaffold:
    folder: Path
    package: str
    guess: Guess
    model_changes: list[str]
    files: list[Path]


def scaffold_robot(name: str, mjcf: str | Path, out_dir: str | Path | None = None) -> Scaffold:
    """Write the plugin package for ``mjcf`` as robot ``name`` into ``out_dir``
    (``./primebot-NAME``)."""
    check_robot_name(name)
    mjcf = Path(mjcf).resolve()
    folder = Path(out_dir) if out_dir else Path(f"primebot-{name.replace('_', '-')}")
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} exists and is not empty",
                          fix="choose another folder with -o, or remove it")
    model = compile_mjcf(mjcf, name)
    refuse_unsafe_names(model, mjcf)
    xml, guess, changes = build_model_copy(mjcf, name, model)
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
        folder / "README.md": readme_source(name, package, mjcf.name, changes),
    }
    for path, text in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        files.append(path)
    compile_mjcf(model_dir / model_file, name)  # the copy must load from its new folder
    return Scaffold(folder, package, guess, changes, files)
