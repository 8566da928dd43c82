"""What every registered term of a task's state has: a name, the function, its parameters' defaults.

Reward terms (``rewards.RewardTerm``) and termination terms
(``termination_terms.TerminationTerm``) are this shape under their own
registry kinds; observation terms add their width (``observation_terms``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StateTerm:
    """A named function of a task's state: ``func(state, **params)``, ``default_params`` filling the
    parameters a task config leaves out."""

    name: str
    func: Callable[..., Any]
    description: str = ""
    default_params: Mapping[str, Any] = field(default_factory=dict)
