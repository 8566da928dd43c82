"""Termination terms and the manager that checks the ones a task config switches on.

A termination term is a pure function registered through
``register_termination_terms``: ``func(state, **params)`` returns a bool
``[N]`` mask of the environments that failed, from the task's state object.
A task config names its checks under ``terminations:``, each as

- a number: the term's ``threshold`` parameter (``anchor_height: 0.25``),
- ``null``: the check is off,
- a mapping: the term's parameters (``{threshold: 0.3}``).

Time-outs are not terms: the env ends those episodes as truncations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..registry import Registry
from .terms import StateTerm


@dataclass(frozen=True)
class TerminationTerm(StateTerm):
    """A named failure check: ``func(state, **params)`` → bool [N]."""


def _params(name: str, raw: Any) -> dict[str, Any] | None:
    """The parameters of one ``terminations:`` entry; None when the check is off."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return {} if raw else None
    if isinstance(raw, (int, float)):
        return {"threshold": float(raw)}
    if isinstance(raw, Mapping):
        return dict(raw)
    raise ConfigError(f"terminations.{name}: expected a threshold, null or a mapping of "
                      f"parameters, got {raw!r}",
                      fix=f"--set task.terminations.{name}=0.25 (or null to switch it off)")


class TerminationManager:
    """The enabled failure checks of a task config, in its order."""

    def __init__(self, config: Mapping[str, Any], registry: Registry) -> None:
        self.checks: list[tuple[str, TerminationTerm, dict[str, Any]]] = []
        for name, raw in (config or {}).items():
            params = _params(name, raw)
            term: TerminationTerm = registry.get("termination_terms", name)
            if params is not None:
                self.checks.append((name, term, {**term.default_params, **params}))

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.checks]

    def compute(self, state: Any) -> dict[str, np.ndarray]:
        """Every enabled check's failure mask, by name."""
        return {name: term.func(state, **params) for name, term, params in self.checks}
