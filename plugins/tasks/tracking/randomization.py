"""Domain randomisation of the tracking task: friction, mass, centre of mass, pushes, reset noise.

All of it hangs off ``randomization.enabled`` in the task config, so one
switch gives the evaluator a deterministic task. Ranges are uniform
``[low, high]``; the defaults follow mjlab's tracking task. Every part
scales with one strength in [0, 1]: 1 unless the opt-in curriculum
(``curriculum.py``) runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import BatchSim, quat_apply_inverse

from .model import TrackingModel

AXES_LINEAR = ("x", "y", "z")
AXES_ANGULAR = ("roll", "pitch", "yaw")


def uniform_ranges(
    ranges: Mapping[str, Any], axes: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) arrays over ``axes`` from ``{axis: [low, high]}``; missing axes are (0, 0)."""
    low = np.array([float(ranges.get(a, (0.0, 0.0))[0]) for a in axes])
    high = np.array([float(ranges.get(a, (0.0, 0.0))[1]) for a in axes])
    return low, high


class PhysicsRandomization:
    """Per-env friction, body masses and anchor centre of mass.

    Drawn once at start-up at full range; ``apply(strength)`` sets each value
    to ``nominal + strength × (drawn − nominal)``, so the curriculum
    (``curriculum.py``) can widen the spread without drawing anew and a
    resumed run gets the same physics back from its strength alone.
    """

    def __init__(
        self, sim: BatchSim, tm: TrackingModel, config: Mapping[str, Any], rng: np.random.Generator
    ) -> None:
        n, model = sim.num_envs, tm.model
        self.sim = sim
        self._fields: list[tuple[np.ndarray, tuple, np.ndarray, np.ndarray]] = []
        """(expanded field, index, nominal, drawn) per randomised quantity."""
        friction_range = config.get("friction")
        if friction_range is not None:
            # Contacts take the larger friction of the two geoms, so every geom of an
            # env (floor included) gets the same sliding friction: that is the
            # friction every contact of that env then sees.
            friction = sim.expand("geom_friction")
            drawn = np.broadcast_to(rng.uniform(*friction_range, size=(n, 1)), friction[:, :, 0].shape)
            self._add(friction, (slice(None), slice(None), 0), model.geom_friction[:, 0], drawn)
        mass_range = config.get("mass_scale")
        com_ranges = config.get("anchor_com_offset")
        if mass_range is not None:
            robot_bodies = np.flatnonzero(model.body_rootid == tm.indices.root_body_id)
            scale = rng.uniform(*mass_range, size=(n, robot_bodies.size))
            mass, inertia = sim.expand("body_mass"), sim.expand("body_inertia")
            nominal_mass = model.body_mass[robot_bodies]
            nominal_inertia = model.body_inertia[robot_bodies]
            self._add(mass, (slice(None), robot_bodies), nominal_mass, nominal_mass * scale)
            self._add(inertia, (slice(None), robot_bodies), nominal_inertia, nominal_inertia * scale[..., None])
        if com_ranges is not None:
            low, high = uniform_ranges(com_ranges, AXES_LINEAR)
            ipos = sim.expand("body_ipos")
            anchor = tm.indices.anchor_body_id
            nominal = model.body_ipos[anchor]
            self._add(ipos, (slice(None), anchor), nominal, nominal + rng.uniform(low, high, size=(n, 3)))
        self.strength = 1.0
        """The strength last applied."""
        self.apply(1.0)

    def _add(self, field: np.ndarray, index: tuple, nominal: np.ndarray, drawn: np.ndarray) -> None:
        self._fields.append((field, index, np.array(nominal, dtype=np.float64), np.array(drawn, dtype=np.float64)))

    def apply(self, strength: float) -> None:
        """Set every randomised quantity at ``strength`` (0: the model's own values, 1: the draws)."""
        self.strength = float(strength)
        for field, index, nominal, drawn in self._fields:
            field[index] = drawn if self.strength == 1.0 else nominal + self.strength * (drawn - nominal)
        if self._fields:
            self.sim.set_const()


class Pusher:
    """Adds a random root velocity to each env every ``interval_s`` (drawn per push)."""

    def __init__(
        self, sim: BatchSim, tm: TrackingModel, config: Mapping[str, Any], rng: np.random.Generator
    ) -> None:
        self.sim, self.rng = sim, rng
        self.interval_steps = np.array(config["interval_s"], dtype=np.float64) / sim.control_dt
        velocity = config.get("velocity", {})
        self.lin_low, self.lin_high = uniform_ranges(velocity, AXES_LINEAR)
        self.ang_low, self.ang_high = uniform_ranges(velocity, AXES_ANGULAR)
        self._quat, self._lin, self._ang = tm.root_quat_qpos, tm.root_lin_vel_qvel, tm.root_ang_vel_qvel
        self.strength = 1.0
        """Factor on the push velocities (the curriculum's strength)."""
        self.countdown = self._draw_interval(sim.num_envs)
        """Control steps until each env's next push."""
        self.total = 0

    def _draw_interval(self, count: int) -> np.ndarray:
        return np.round(self.rng.uniform(*self.interval_steps, size=count)).astype(np.int64)

    def step(self) -> int:
        """Push the envs whose countdown ran out; return how many."""
        self.countdown -= 1
        due = np.flatnonzero(self.countdown <= 0)
        if due.size == 0:
            return 0
        qpos, qvel = self.sim.qpos, self.sim.qvel
        d_lin = self.strength * self.rng.uniform(self.lin_low, self.lin_high, size=(due.size, 3))
        d_ang_w = self.strength * self.rng.uniform(self.ang_low, self.ang_high, size=(due.size, 3))
        qvel[due, self._lin] += d_lin
        # the free joint's angular velocity is in the body frame
        qvel[due, self._ang] += quat_apply_inverse(qpos[due, self._quat], d_ang_w)
        self.countdown[due] = self._draw_interval(due.size)
        self.total += int(due.size)
        return int(due.size)
