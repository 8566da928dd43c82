"""The reward-term contract: pure functions registered through ``register_reward_terms``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RewardTerm:
    """A named reward term. ``func(state, **params)`` returns one float per environment."""

    name: str
    func: Callable[..., Any]
    description: str = ""
    default_params: Mapping[str, Any] = field(default_factory=dict)
