"""The task spec: how a registered task builds its vectorised environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .env import VecEnv


@dataclass(frozen=True)
class TaskSpec:
    """A task as registered through ``register_tasks``."""

    name: str
    make_env: Callable[..., VecEnv]
    """Builds the environment; keyword arguments are defined by the task family."""
    default_config: Mapping[str, Any] = field(default_factory=dict)
    """Task settings (YAML-able) that ``--set task.key=value`` may override."""
    description: str = ""
    needs_motion: bool = True
    """Whether the task tracks a reference motion (``primebot train MOTION``)."""
    default_robot: str | None = None
    open_config_sections: tuple[str, ...] = ()
    """Config sections whose keys are not fixed by ``default_config`` (e.g. ``rewards``:
    any registered reward term may be added as ``task.rewards.<term>={weight: ..}``)."""
