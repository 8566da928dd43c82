"""Loading plugins: built-ins first (``DEFAULT_PLUGINS``), then entry points of group ``primebot``.

Every plugin, built-in or not, contributes through the hooks in
``hooks.specs``. ``PRIMEBOT_DISABLE_PLUGINS=a,b`` skips plugins by name. A
plugin that fails to import stops start-up with an error naming the plugin,
its distribution and the original exception.
"""

from __future__ import annotations

import difflib
import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from ..errors import PluginError, PrimebotError
from ..exit_guard import exit_call, no_hard_exit
from ..registry import Register, Registry
from . import specs as hookspecs

ENTRY_POINT_GROUP = "primebot"

# Built-ins, by plugin name. Module paths are data here: the core never imports
# primebot.plugins directly, it loads these exactly as it loads entry points.
DEFAULT_PLUGINS: dict[str, str] = {
    "commands.plugins": "primebot.pipeline.commands.plugins",
    "commands.devices": "primebot.pipeline.commands.devices",
    "commands.train": "primebot.pipeline.commands.train",
    "commands.config": "primebot.pipeline.commands.settings",
    "backends.cpu": "primebot.plugins.backends.cpu",
    "backends.cuda": "primebot.plugins.backends.cuda",
    "backends.npu": "primebot.plugins.backends.npu",
    "robots.biped4": "primebot.plugins.robots.biped4.spec",
    "tasks.walk": "primebot.plugins.tasks.walk.task",
    "commands.robots": "primebot.pipeline.commands.robots",
    "commands.motion": "primebot.pipeline.commands.motion",
    "robots.q1": "primebot.plugins.robots.q1.spec",
    "tasks.tracking": "primebot.plugins.tasks.tracking.task",
    "commands.eval": "primebot.pipeline.commands.evaluate",
    "commands.export": "primebot.pipeline.commands.export",
    "commands.sim2sim": "primebot.pipeline.commands.sim2sim",
    "commands.stress": "primebot.pipeline.commands.stress",
    "commands.compare": "primebot.pipeline.commands.compare",
    "commands.pipeline": "primebot.pipeline.commands.pipeline",
    "stages.builtin": "primebot.plugins.stages.builtin",
}

REGISTER_HOOKS: dict[str, str] = {
    "robots": "register_robots",
    "reward_terms": "register_reward_terms",
    "observation_terms": "register_observation_terms",
    "termination_terms": "register_termination_terms",
    "tasks": "register_tasks",
    "backends": "register_backends",
    "stages": "register_stages",
}
"""Registry kind → the hook that fills it."""


@dataclass
class PluginInfo:
    """One loaded plugin and where it came from."""

    name: str
    module: str
    source: str
    """``built-in`` or ``<distribution> <version>``."""
    hooks: list[str] = field(default_factory=list)


def _validators() -> dict[str, Any]:
    from ..devices.backend import Backend
    from ..robot.spec import RobotSpec
    from ..sim.observation_terms import ObservationTerm
    from ..sim.rewards import RewardTerm
    from ..sim.task import TaskSpec
    from ..sim.termination_terms import TerminationTerm
    from ..stages.contract import Stage

    def instance_of(cls: type):
        def check(name: str, obj: Any) -> None:
            if not isinstance(obj, cls):
                raise TypeError(f"expected a {cls.__name__}, got {type(obj).__name__}")

        return check

    def task(name: str, obj: Any) -> None:
        instance_of(TaskSpec)(name, obj)
        obj.check()

    return {
        "robots": instance_of(RobotSpec),
        "reward_terms": instance_of(RewardTerm),
        "observation_terms": instance_of(ObservationTerm),
        "termination_terms": instance_of(TerminationTerm),
        "tasks": task,
        "backends": instance_of(Backend),
        "stages": instance_of(Stage),
        "commands": None,
    }


def _describe(exc: BaseException) -> str:
    """An exception for a plugin error; ``sys.exit`` by name (it would otherwise end primebot
    silently)."""
    if isinstance(exc, SystemExit):
        return f"it called {exit_call(exc)}"
    return f"{type(exc).__name__}: {exc}"


def disabled_plugins(environ: dict[str, str] | None = None) -> set[str]:
    """Names listed in ``PRIMEBOT_DISABLE_PLUGINS`` (comma-separated)."""
    raw = (os.environ if environ is None else environ).get("PRIMEBOT_DISABLE_PLUGINS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def _distribution_label(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown distribution"
    return f"{dist.metadata['Name']} {dist.version}"


class PluginHost:
    """The plugin manager, the registry it filled, and what each plugin is."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = Registry()
        for kind, validator in _validators().items():
            self.registry.declare(kind, validator)
        self.plugins: dict[str, PluginInfo] = {}
        self.failures: dict[str, PrimebotError] = {}
        """Plugin name → the error its ``register_*`` hook raised (the others still registered)."""

    # -- loading -----------------------------------------------------------
    def add(self, plugin: object, name: str, source: str, module: str | None = None) -> None:
        """Register a plugin object/module under ``name`` (no hooks are called yet)."""
        if name in self.plugins:
            raise PluginError(
                f"two plugins are named {name!r}: {self.plugins[name].source} and {source}",
                fix="uninstall one, or disable it with PRIMEBOT_DISABLE_PLUGINS",
            )
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r} ({source}) has an invalid hook: {exc}") from exc
        callers = self.pm.get_hookcallers(plugin) or []
        unknown = [caller.name for caller in callers if caller.spec is None
                   and not any(impl.optionalhook for impl in caller.get_hookimpls())]
        if unknown:
            specs = sorted(name for name in dir(hookspecs) if name.startswith("register_"))
            close = difflib.get_close_matches(unknown[0], specs, n=1)
            self.pm.unregister(plugin)
            raise PluginError(
                f"plugin {name!r} ({source}) implements {', '.join(repr(u) for u in unknown)}, "
                "which is not a "
                f"primebot hook" + (f" (did you mean {close[0]!r}?)" if close else ""),
                fix=f"rename the function to one of the hooks: {', '.join(specs)} "
                    "(docs/plugin_hooks.md)",
            )
        hooks = [caller.name for caller in callers]
        self.plugins[name] = PluginInfo(name, module or getattr(plugin, "__name__", repr(plugin)),
                                        source, hooks)

    def load_builtins(self, disabled: set[str]) -> None:
        for name, module_name in DEFAULT_PLUGINS.items():
            if name in disabled:
                continue
            try:
                with no_hard_exit():
                    module = importlib.import_module(module_name)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported with the plugin's name
                raise PluginError(
                    f"built-in plugin {name!r} ({module_name}) failed to import: {_describe(exc)}",
                    fix="reinstall primebot, or disable the plugin with PRIMEBOT_DISABLE_PLUGINS",
                ) from exc
            self.add(module, name, "built-in", module_name)

    def load_entry_points(self, disabled: set[str],
                          eps: Iterable[EntryPoint] | None = None) -> None:
        eps = entry_points(group=ENTRY_POINT_GROUP) if eps is None else eps
        for ep in eps:
            if ep.name in disabled:
                continue
            label = _distribution_label(ep)
            try:
                with no_hard_exit():
                    plugin = ep.load()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported with the plugin's name
                raise PluginError(
                    f"plugin {ep.name!r} from distribution {label} failed to import "
                    f"({ep.value}): {_describe(exc)}",
                    fix="fix or upgrade that distribution, or set "
                        f"PRIMEBOT_DISABLE_PLUGINS={ep.name}",
                ) from exc
            self.add(plugin, ep.name, label, ep.value)

    # -- calling hooks -----------------------------------------------------
    def _impls(self, hook_name: str):
        # get_hookimpls() lists implementations in load order (pluggy *calls* them
        # last-first); registering in load order keeps built-ins ahead of third parties.
        return getattr(self.pm.hook, hook_name).get_hookimpls()

    def _call(self, impl, **kwargs) -> None:
        try:
            with no_hard_exit():
                impl.function(**kwargs)
        except PrimebotError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plugin bug, named; sys.exit too
            raise PluginError(
                f"plugin {impl.plugin_name!r} raised in {impl.function.__name__}: {_describe(exc)}"
            ) from exc

    def collect(self, *, strict: bool = True) -> None:
        """Call every ``register_*`` hook so the registry holds what plugins provide.

        With ``strict`` the first hook that raises stops loading. Otherwise a failing
        plugin is recorded in ``failures`` and the others still register, so ``primebot
        plugins`` can list every plugin and mark the failing one; the CLI's other commands
        stop with that error (``raise_failures``).
        """
        for kind, hook_name in REGISTER_HOOKS.items():
            for impl in self._impls(hook_name):
                try:
                    self._call(impl, register=Register(self.registry, kind, impl.plugin_name))
                except PrimebotError as exc:
                    if strict:
                        raise
                    self.failures.setdefault(impl.plugin_name, exc)

    def raise_failures(self) -> None:
        """Raise a ``PluginError`` for the first plugin whose ``register_*`` hook failed."""
        for name, exc in self.failures.items():
            raise PluginError(
                f"plugin {name!r} ({self.plugins[name].source}) failed to register: {exc}",
                fix=f"fix it as above, or set PRIMEBOT_DISABLE_PLUGINS={name}; "
                "`primebot plugins` lists every plugin and marks the failing one",
            ) from exc

    def add_commands(self, cli) -> None:
        """Call ``register_commands`` on the click group and record which plugin added what."""
        for impl in self._impls("register_commands"):
            before = dict(cli.commands)
            self._call(impl, cli=cli)
            for name, command in cli.commands.items():
                if before.get(name) is command:
                    continue
                if self._recorded_command(name) == (impl.plugin_name, command):
                    continue  # the same host building a second CLI (e.g. main() called twice)
                if name in before:
                    owner = self.registry.registration("commands", name).plugin
                    raise PluginError(
                        f"command {name!r} is registered twice: by plugin {owner!r} "
                        f"and by plugin {impl.plugin_name!r}"
                    )
                self.registry.add("commands", name, command, impl.plugin_name)


    def _recorded_command(self, name: str) -> tuple[str, Any] | None:
        found = [reg for reg in self.registry.registrations("commands") if reg.name == name]
        return (found[0].plugin, found[0].obj) if found else None


def load_plugins(
    *,
    environ: dict[str, str] | None = None,
    entry_points_: Iterable[EntryPoint] | None = None,
    extra: Iterable[tuple[str, object]] = (),
    strict: bool = True,
) -> PluginHost:
    """Load built-ins and installed plugins, then fill the registry.

    ``extra`` adds (name, plugin) pairs after entry points (for embedding and tests);
    ``strict=False`` records a failing ``register_*`` hook instead of raising (``collect``).
    """
    disabled = disabled_plugins(environ)
    host = PluginHost()
    host.load_builtins(disabled)
    host.load_entry_points(disabled, entry_points_)
    for name, plugin in extra:
        if name not in disabled:
            host.add(plugin, name, "in-process")
    host.collect(strict=strict)
    return host


_HOST: PluginHost | None = None


def get_host() -> PluginHost:
    """The process-wide plugin host, loaded on first use (a failing register hook is recorded)."""
    global _HOST
    if _HOST is None:
        _HOST = load_plugins(strict=False)
    return _HOST


def reset_host() -> None:
    """Forget the process-wide host (tests, and embedding after installing a plugin)."""
    global _HOST
    _HOST = None
