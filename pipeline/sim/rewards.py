"""Reward terms and the manager that combines them.

A reward term is a pure function registered through ``register_reward_terms``:
``func(state, **params)`` returns one value per environment ([N] array) from
the task's state object. A task config names the terms it uses, each with a
weight and parameters (YAML)::

    rewards:
      body_pos_error_exp: {weight: 1.0, params: {std: 0.3}}
      action_rate_l2: {weight: -0.1}
      body_pos_fine: {term: body_pos_error_exp, weight: 1.0, params: {std: 0.02}}

A key is the registered term's name, or any name with ``term:`` naming the
registered term: the same function twice with other parameters (a coarse and
a fine kernel of one error, say) is two entries.

The manager resolves names in the registry, multiplies each term by its
weight and the control period ``dt`` (so sums are per simulated second and do
not depend on the control rate), keeps per-term episode sums, and describes
the active terms as a table at start. Terms with weight 0 are skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..registry import Registry
from .terms import StateTerm


@dataclass(frozen=True)
class RewardTerm(StateTerm):
    """A named reward term. ``func(state, **params)`` returns one float per environment."""


@dataclass(frozen=True)
class ActiveTerm:
    """A reward term as a task uses it: the registered term, its weight and resolved parameters."""

    term: RewardTerm
    weight: float
    params: Mapping[str, Any]
    plugin: str = ""
    key: str = ""
    """The name under ``rewards:`` (the term's own unless the entry has ``term:``)."""

    @property
    def name(self) -> str:
        return self.key or self.term.name


def _term_config(name: str, raw: Any) -> tuple[str, float, dict[str, Any]]:
    """(registered term, weight, params) from ``{term: t, weight: w, params: {...}}`` (``term``
    defaults to ``name``) or a bare number (the weight)."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return name, float(raw), {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"reward term {name!r}: expected a mapping {{weight: ..., params: {{...}}}}, got "
            f"{raw!r}",
            fix=f"write `{name}: {{weight: 1.0}}` under `rewards:`",
        )
    unknown = set(raw) - {"term", "weight", "params"}
    if unknown:
        raise ConfigError(
            f"reward term {name!r}: unknown key(s) {', '.join(sorted(unknown))}",
            fix="a term takes only `term`, `weight` and `params`",
        )
    term = raw.get("term", name)
    if not isinstance(term, str) or not term:
        raise ConfigError(
            f"reward term {name!r}: term {term!r} is not a registered term's name",
            fix="`term:` names a registered reward term (`primebot plugins` lists them)",
        )
    if "weight" not in raw:
        raise ConfigError(
            f"reward term {name!r} has no weight", fix=f"add `weight:` to rewards.{name}"
        )
    try:
        weight = float(raw["weight"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"reward term {name!r}: weight {raw['weight']!r} is not a number"
        ) from exc
    params = raw.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"reward term {name!r}: params must be a mapping, got {params!r}")
    return term, weight, dict(params)


def _check_params(term: RewardTerm, params: Mapping[str, Any]) -> None:
    """Refuse parameters the term's function does not accept (a typo would otherwise be silent)."""
    signature = inspect.signature(term.func)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return
    accepted = set(list(signature.parameters)[1:])  # the first is the state
    unknown = set(params) - accepted
    if unknown:
        raise ConfigError(
            f"reward term {term.name!r} has no parameter(s) {', '.join(sorted(unknown))}",
            fix=f"it accepts: {', '.join(sorted(accepted)) or 'none'}",
        )


def resolve_reward_terms(config: Mapping[str, Any], registry: Registry) -> list[ActiveTerm]:
    """The terms a task config names, looked up in ``registry`` (unknown names list the registered
    ones)."""
    active = []
    for name, raw in (config or {}).items():
        term_name, weight, params = _term_config(name, raw)
        registration = registry.registration("reward_terms", term_name)
        term: RewardTerm = registration.obj
        merged = {**term.default_params, **params}
        _check_params(term, merged)
        active.append(ActiveTerm(term, weight, merged, registration.plugin, key=name))
    return active


class RewardManager:
    """Weighted sum of reward terms over N environments, with per-term episode sums."""

    def __init__(self, terms: list[ActiveTerm], dt: float, num_envs: int) -> None:
        self.terms = [t for t in terms if t.weight != 0.0]
        self.dt = float(dt)
        self.num_envs = int(num_envs)
        self.reward = np.zeros(num_envs, np.float32)
        self.step_values = {t.name: np.zeros(num_envs, np.float64) for t in self.terms}
        """Each term's weighted contribution (weight·dt·value) in the last ``compute``."""
        self.episode_sums = {t.name: np.zeros(num_envs, np.float64) for t in self.terms}
        """Each term's weighted contributions summed over the current episode, per env."""

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], registry: Registry, dt: float, num_envs: int
    ) -> RewardManager:
        return cls(resolve_reward_terms(config, registry), dt, num_envs)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.terms]

    def compute(self, state: Any, valid: np.ndarray | None = None) -> np.ndarray:
        """Evaluate every term on ``state``; return the [N] float32 reward (weights and dt applied).

        Envs where ``valid`` (bool [N]) is False get 0 from every term and add
        nothing to their episode sums (their state is not trustworthy, e.g. a
        physics fault).
        """
        total = np.zeros(self.num_envs, np.float64)
        for t in self.terms:
            value = np.asarray(t.term.func(state, **t.params), dtype=np.float64)
            if value.shape != (self.num_envs,):
                raise ValueError(
                    f"reward term {t.name!r} (plugin {t.plugin or '?'}) returned shape "
                    f"{value.shape}, "
                    f"expected ({self.num_envs},): one value per environment"
                )
            if valid is not None:
                value = np.where(valid, value, 0.0)
            weighted = self.step_values[t.name]
            np.multiply(value, t.weight * self.dt, out=weighted)
            total += weighted
            self.episode_sums[t.name] += weighted
        self.reward[:] = total
        return self.reward

    def reset(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Zero the episode sums of envs ``ids``; return each term's finished sums for them."""
        finished = {}
        for name, sums in self.episode_sums.items():
            finished[name] = sums[ids].copy()
            sums[ids] = 0.0
        return finished

    def table(self) -> str:
        """The active terms as a text table: name, weight, parameters, plugin."""
        rows = [
            (
                t.name,
                f"{t.weight:g}",
                ", ".join(f"{k}={v}" for k, v in t.params.items()) or "-",
                t.plugin or "-",
            )
            for t in self.terms
        ]
        header = ("term", "weight", "params", "plugin")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]

        def line(cells: tuple[str, ...]) -> str:
            return "  ".join(
                cell.ljust(width) for cell, width in zip(cells, widths, strict=True)
            ).rstrip()

        out = [f"Active reward terms ({len(rows)}, dt = {self.dt:g} s):", line(header)]
        out.append(line(tuple("-" * w for w in widths)))
        out += [line(r) for r in rows]
        return "\n".join(out)
