"""The robot spec: what the pipeline needs to know about a robot besides its MJCF (the compiled
model: ``robot.model``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from ..errors import RobotError

PER_JOINT_FIELDS = ("default_joint_pos", "stiffness", "damping", "effort_limit", "action_scale")
"""RobotSpec fields that hold one value per joint, in ``joint_names`` order."""


@dataclass(frozen=True)
class RobotSpec:
    """A robot as the pipeline sees it. Registered through ``register_robots``.

    Per-joint arrays are in ``joint_names`` order, which is the policy's
    action order and the column order of a motion's ``joint_pos``.
    """

    name: str
    """Registry name, e.g. ``q1``."""
    mjcf: Path = None
    """The MJCF file. May be swapped (e.g. ``--robot-xml``); joints are then checked by name."""
    joint_names: tuple[str, ...] = None
    """Actuated hinge joints in policy order."""
    default_joint_pos: np.ndarray = None
    """[J] rad, the standing pose actions are offsets from."""
    stiffness: np.ndarray = None
    """[J] PD kp, N·m/rad."""
    damping: np.ndarray = None
    """[J] PD kd, N·m·s/rad."""
    effort_limit: np.ndarray = None
    """[J] N·m."""
    action_scale: np.ndarray = None
    """[J] rad per unit action (≈ 0.25·effort/kp)."""
    anchor_body: str = None
    """Body whose pose anchors tracking (usually the torso)."""
    tracked_bodies: tuple[str, ...] = None
    """Bodies whose poses and velocities the tracking rewards compare."""
    end_effector_bodies: tuple[str, ...] = None
    """Bodies checked by the end-effector height termination (hands, feet)."""
    feet: tuple[str, ...] = None
    self_collision_geoms: tuple[tuple[str, str], ...] = ()
    """Geom pairs (by name) whose contact counts as self-collision; empty means any two robot
    geoms."""
    root_body: str = ""
    """The floating-base body (first body with a free joint) when different from the anchor."""
    description: str = ""
    training_overrides: tuple[str, ...] = ()
    """``KEY=VALUE`` training settings, written as for ``--set``, that this robot trains with unless
    a flag, the motion file or ``--set`` says otherwise (q1: 100 Hz physics); a ``task.`` key its
    task does not have is left out (docs/training.md, "Settings")."""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a spec with a missing field or a per-joint array of the wrong length, naming
        each."""
        missing = [f.name for f in fields(self) if getattr(self, f.name) is None]
        if missing:
            raise RobotError(
                f"robot spec {self.name!r} is missing field(s): {', '.join(missing)}",
                fix="pass every field to RobotSpec(...) (docs/robots.md lists them); "
                "`primebot robots new NAME --mjcf FILE` writes a complete spec",
            )
        object.__setattr__(self, "mjcf", Path(self.mjcf))
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        object.__setattr__(self, "training_overrides", tuple(self.training_overrides))
        count, wrong = len(self.joint_names), []
        for name in PER_JOINT_FIELDS:
            values = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            object.__setattr__(self, name, values)
            if len(values) != count:
                wrong.append(f"{name} has {len(values)} value(s)")
            elif not np.all(np.isfinite(values)):
                wrong.append(f"{name} has non-finite values")
        if "armature" in self.extra and np.size(self.extra["armature"]) != count:
            wrong.append(f"extra['armature'] has {np.size(self.extra['armature'])} value(s)")
        if wrong:
            raise RobotError(
                f"robot spec {self.name!r}: {'; '.join(wrong)} for {count} joint(s) in joint_names",
                fix=f"give one finite value per joint, in joint_names order ({count} values)",
            )

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)


def pd_gains(
    armature: np.ndarray, natural_frequency_hz: float | np.ndarray = 10.0,
    damping_ratio: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """PD gains from reflected inertia, as mjlab derives them.

    Treating each joint as a second-order system of inertia ``armature``:
    stiffness = armature·ω², damping = 2·ζ·armature·ω, ω = 2π·f (one f for all joints, or one per
    joint).
    """
    armature = np.asarray(armature, dtype=np.float64)
    omega = 2.0 * np.pi * np.asarray(natural_frequency_hz, dtype=np.float64)
    return armature * omega**2, 2.0 * damping_ratio * armature * omega


def with_mjcf(spec: RobotSpec, mjcf: str | Path | None) -> RobotSpec:
    """``spec`` with another model file (``--robot-xml``); unchanged when ``mjcf`` is None."""
    if mjcf is None:
        return spec
    return replace(spec, mjcf=Path(mjcf))


def get_robot(registry, name: str, robot_xml: str | Path | None = None) -> RobotSpec:
    """The registered spec ``name``, with its MJCF swapped for ``robot_xml`` when given
    (``--robot-xml``)."""
    return with_mjcf(registry.get("robots", name), robot_xml)
