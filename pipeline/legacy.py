"""Import paths of primebot 0.1 that the docs taught, kept working for one release with a DeprecationWarning.

Plugins should import ``primebot.pipeline.api`` (docs/plugin_hooks.md). Until
the next release, ``from primebot.pipeline.hookspecs import hookimpl`` and the
like still work: a module that moved into a package is found under its old
name (``MOVED_MODULES``), and a package that took an old module's name hands
on that module's names (``MOVED_NAMES``, through the package's ``__getattr__``).
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
}
"""Old module (under ``primebot.pipeline``) → where it lives now."""

MOVED_NAMES: dict[str, str] = {
    "robot": "robot.spec",
    "stages": "stages.contract",
    "devices": "devices.backend",
}
"""Old module whose name is now a package → the module that holds its names."""


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
    new = MOVED_NAMES[old]

    def __getattr__(name: str) -> Any:
        module = importlib.import_module(f"{PACKAGE}.{new}")
        if name.startswith("__") or not hasattr(module, name):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{old}.{name}", f"{new}.{name}")
        return getattr(module, name)

    return __getattr__
