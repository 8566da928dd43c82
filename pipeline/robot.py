"""The robot spec: what the pipeline needs to know about a robot besides its MJCF."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RobotSpec:
    """A robot as the pipeline sees it. Registered through ``register_robots``."""

    name: str
    """Registry name, e.g. ``q1``."""
    mjcf: Path
    """Path of the MJCF file (may be swapped by an environment variable or ``--robot-xml``)."""
    joint_names: tuple[str, ...]
    """Actuated joints in policy order (the order of actions and motion ``joint_pos`` columns)."""
    description: str = ""
    extra: dict = field(default_factory=dict)
