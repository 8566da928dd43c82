"""The robot spec: what the pipeline needs to know about a robot besides its MJCF."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class RobotSpec:
    """A robot as the pipeline sees it. Registered through ``register_robots``.

    Per-joint arrays are in ``joint_names`` order, which is the policy's
    action order and the column order of a motion's ``joint_pos``.
    """

    name: str
    """Registry name, e.g. ``q1``."""
    mjcf: Path
    """The MJCF file. May be swapped (e.g. ``Q1_XML``/``--robot-xml``); joints are then checked by name."""
    joint_names: tuple[str, ...]
    """Actuated hinge joints in policy order."""
    default_joint_pos: np.ndarray
    """[J] rad, the standing pose actions are offsets from."""
    stiffness: np.ndarray
    """[J] PD kp, N·m/rad."""
    damping: np.ndarray
    """[J] PD kd, N·m·s/rad."""
    effort_limit: np.ndarray
    """[J] N·m."""
    action_scale: np.ndarray
    """[J] rad per unit action (≈ 0.25·effort/kp)."""
    anchor_body: str
    """Body whose pose anchors tracking (usually the torso)."""
    tracked_bodies: tuple[str, ...]
    """Bodies whose poses and velocities the tracking rewards compare."""
    end_effector_bodies: tuple[str, ...]
    """Bodies checked by the end-effector height termination (hands, feet)."""
    feet: tuple[str, ...]
    self_collision_geoms: tuple[tuple[str, str], ...] = ()
    """Geom pairs (by name) whose contact counts as self-collision; empty means any two robot geoms."""
    root_body: str = ""
    """The floating-base body (first body with a free joint) when different from the anchor."""
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)
