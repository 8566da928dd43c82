"""The registry: everything plugins contributed, by kind and name, with who contributed it."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import RegistrationError, UnknownNameError

Validator = Callable[[str, Any], None]
"""Checks one registration; raises ``RegistrationError`` (or TypeError/ValueError) to refuse it."""


@dataclass(frozen=True)
class Registration:
    """One named thing a plugin registered."""

    kind: str
    name: str
    obj: Any
    plugin: str

DEFAULT_TASK = "tracking"
"""The task a command runs when none is named (``--task``, ``TrainConfig.task``): the built-in
motion-tracking task. The one place the core names a task; its ``default_robot`` is the robot the
``motion`` commands use when none is named (``Registry.default_robot``)."""


class Registry:
    """Named robots, reward terms, tasks, backends and stages, each traced to its plugin.

    A kind is declared once with a validator; ``Register`` objects handed to
    plugin hooks add to it. Duplicate names are refused with both plugins named.
    """

    def __init__(self) -> None:
        self._validators: dict[str, Validator] = {}
        self._items: dict[str, dict[str, Registration]] = {}

    def default_robot(self) -> str:
        """The robot a command uses when none is named: the default task's (``DEFAULT_TASK``)."""
        return self.get("tasks", DEFAULT_TASK).default_robot

    def declare(self, kind: str, validator: Validator | None = None) -> None:
        """Make ``kind`` registrable; ``validator`` checks each object handed in."""
        self._validators[kind] = validator or (lambda name, obj: None)
        self._items.setdefault(kind, {})

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._validators)

    def add(self, kind: str, name: str, obj: Any, plugin: str) -> Registration:
        """Validate and record ``obj`` under ``kind``/``name`` for ``plugin``."""
        if kind not in self._validators:
            raise RegistrationError(f"plugin {plugin!r} registered an unknown kind {kind!r}")
        if not isinstance(name, str) or not name.strip():
            raise RegistrationError(
                f"plugin {plugin!r} registered a {kind[:-1]} without a name",
                fix="pass a non-empty string name",
            )
        existing = self._items[kind].get(name)
        if existing is not None:
            raise RegistrationError(
                f"{kind[:-1]} {name!r} is registered twice: by plugin {existing.plugin!r} "
                f"and by plugin {plugin!r}",
                fix="rename one of them, or disable one plugin with PRIMEBOT_DISABLE_PLUGINS",
            )
        try:
            self._validators[kind](name, obj)
        except (TypeError, ValueError) as exc:
            raise RegistrationError(f"plugin {plugin!r} registered an invalid {kind[:-1]} "
                                    f"{name!r}: {exc}") from exc
        registration = Registration(kind, name, obj, plugin)
        self._items[kind][name] = registration
        return registration

    def get(self, kind: str, name: str) -> Any:
        """The object registered as ``name``; a typed error lists the alternatives."""
        return self.registration(kind, name).obj

    def registration(self, kind: str, name: str) -> Registration:
        try:
            return self._items[kind][name]
        except KeyError:
            known = sorted(self._items.get(kind, {}))
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownNameError(
                f"no {kind[:-1]} named {name!r}{hint}; registered: {', '.join(known) or 'none'}",
            ) from None

    def names(self, kind: str) -> list[str]:
        return list(self._items.get(kind, {}))

    def items(self, kind: str) -> dict[str, Any]:
        """Name → object for ``kind``, in registration order."""
        return {name: reg.obj for name, reg in self._items.get(kind, {}).items()}

    def registrations(self, kind: str | None = None) -> Iterator[Registration]:
        kinds = [kind] if kind else list(self._items)
        for k in kinds:
            yield from self._items.get(k, {}).values()

    def by_plugin(self, plugin: str) -> list[Registration]:
        return [reg for reg in self.registrations() if reg.plugin == plugin]


class Register:
    """The callable a ``register_*`` hook receives: ``register(obj, name=None)``.

    ``name`` defaults to ``obj.name`` (specs) or ``obj.__name__`` (functions).
    The registry validates the object and records which plugin handed it in.
    """

    def __init__(self, registry: Registry, kind: str, plugin: str) -> None:
        self._registry = registry
        self.kind = kind
        self.plugin = plugin

    def __call__(self, obj: Any, name: str | None = None) -> Any:
        if name is None:
            name = getattr(obj, "name", None) or getattr(obj, "__name__", None)
        self._registry.add(self.kind, name, obj, self.plugin)
        return obj
