"""Every hook a primebot plugin can implement.

A plugin is a module (or object) with functions decorated ``@hookimpl`` whose
names match the specs below. The ``register_*`` hooks receive a ``register``
callable bound to that plugin: ``register(obj, name=None)``. The registry
checks what it is given and remembers which plugin gave it, so that
``primebot plugins`` can list it and duplicate names are reported with both
plugins named. See docs/plugin_hooks.md for an example of each hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from ..registry import Register

PROJECT = "primebot"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_robots(register: Register) -> None:
    """Register robots: ``register(RobotSpec(...))`` for each robot this plugin provides."""


@hookspec
def register_reward_terms(register: Register) -> None:
    """Register reward terms: ``register(RewardTerm(name, func, ...))``.

    A task config names terms with a weight and parameters; ``func`` is a pure
    function of the task state returning one value per environment.
    """


@hookspec
def register_observation_terms(register: Register) -> None:
    """Register observation terms: ``register(ObservationTerm(name, func, size, ...))``.

    A task's observation groups name terms in order; ``func`` is a pure
    function of the task state returning ``[N, size]``.
    """


@hookspec
def register_termination_terms(register: Register) -> None:
    """Register termination terms: ``register(TerminationTerm(name, func, ...))``.

    A task config names checks under ``terminations:``; ``func`` is a pure
    function of the task state returning a bool mask, one value per environment.
    """


@hookspec
def register_tasks(register: Register) -> None:
    """Register tasks: ``register(TaskSpec(name, make_env, default_config, ...))``."""


@hookspec
def register_backends(register: Register) -> None:
    """Register device backends: ``register(backend)`` with a ``Backend`` subclass instance."""


@hookspec
def register_stages(register: Register) -> None:
    """Register pipeline stages: ``register(Stage(name, run, after=..., before=...))``."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add click commands or groups to the ``primebot`` CLI: ``cli.add_command(cmd)``."""
