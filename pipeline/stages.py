"""The stage contract: one step of ``primebot pipeline run``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stage:
    """A pipeline stage registered through ``register_stages``, placed by ``after``/``before``."""

    name: str
    run: Callable[..., Any]
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    description: str = ""
