"""Import paths of primebot 0.1 that the docs taught, kept working for one release with a DeprecationWarning.

Plugins should import ``primebot.pipeline.api`` (docs/plugin_hooks.md). Until
the next release, ``from primebot.pipeline.hookspecs import hookimpl`` and the
like still work: a module that moved into a package is found under its old
name (``MOVED_MODULES``), and a package that took an old module's name hands
on that module's names (``MOVED_NAMES``, through the package's ``__getattr__``;
``NAMES_MOVED_ON`` for the few that have since left that module).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable
from typing import Any

PACKAGE = __package__ or "primebot.pipeline"

MOVED_MODULES: dict[str, str] = {
    "hookspecs": "hooks.specs",
    "plugins": "hooks.host",
    "tasks": "sim.task",
    "rewards": "sim.rewards",
    "env": "sim.env",
    "deploy_policy": "deploy.policy",
    "sim2sim": "deploy.sim2sim",
    "sim2sim_planar": "deploy.planar",
    "device_probe": "devices.probe",
    "episode_eval": "evaluate.episodes",
    "tracking_metrics": "evaluate.metrics",
    "onnx_export": "export.graph",
    "motion_author": "motion.author",
    "motion_convert": "motion.convert",
    "motion_problems": "motion.problems",
    "motion_replay": "motion.replay",
    "motion_validate": "motion.validate",
    "contact_sheet": "render.contact_sheet",
    "ghost_video": "render.ghost",
    "report_curves": "report.curves",
    "robot_check": "robot.checks",
    "kinematics": "robot.kinematics",
    "robot_scaffold": "robot.scaffold",
    "presets": "stages.presets",
    "pipeline_record": "stages.record",
    "pipeline_run": "stages.runner",
    "checkpoint": "train.checkpoints",
    "distributed": "train.distributed",
    "training_log": "train.log",
    "trained_policy": "train.policy",
    "runner": "train.runner",
    "training": "train.session",
    "stop_signals": "train.signals",
    "transfer": "train.transfer",
}
"""Old module (under ``primebot.pipeline``) → where it lives now: every module of 0.1 that moved."""

MOVED_NAMES: dict[str, str] = {
    "robot": "robot.spec",
    "stages": "stages.contract",
    "devices": "devices.backend",
    "motion": "motion.format",
    "evaluate": "evaluate.run",
    "export": "export.run",
    "report": "report.page",
    "sim": "sim.physics",
}
"""Old module whose name is now a package → the module that holds its names."""

NAMES_MOVED_ON: dict[str, dict[str, str]] = {
    "robot": dict.fromkeys(("GAIN_RTOL", "actuator_kind", "servo_gains", "gain_problems"), "robot.actuators"),
}
"""Names of an old module in ``MOVED_NAMES`` that live elsewhere than the rest → the module that holds each."""


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{PACKAGE}.{old} is deprecated and goes in the next release: import primebot.pipeline.api "
        f"(or {PACKAGE}.{new})",
        DeprecationWarning,
        stacklevel=3,
    )


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``primebot.pipeline.<old>`` as the module it became."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        old = fullname.removeprefix(PACKAGE + ".")
        if fullname.startswith(PACKAGE + ".") and old in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        old = spec.name.removeprefix(PACKAGE + ".")
        _warn(old, MOVED_MODULES[old])
        return importlib.import_module(f"{PACKAGE}.{MOVED_MODULES[old]}")

    def exec_module(self, module) -> None:
        """The module is the moved one, already executed."""


def install() -> None:
    """Make the old module paths importable (once per process)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())


def names_of(package: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that hands on the names of the module that had the package's name."""
    old = package.removeprefix(PACKAGE + ".")

    def __getattr__(name: str) -> Any:
        new = NAMES_MOVED_ON.get(old, {}).get(name, MOVED_NAMES[old])
        module = importlib.import_module(f"{PACKAGE}.{new}")
        if name.startswith("__") or not hasattr(module, name):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{old}.{name}", f"{new}.{name}")
        return getattr(module, name)

    return __getattr__
