"""Domain randomisation of the tracking task: friction, mass, payload, centre of mass, motor
strength, action delay, encoder bias, pushes, reset noise.

All of it hangs off ``randomization.enabled`` in the task config, so one
switch gives the evaluator a deterministic task. Ranges are uniform
``[low, high]``; the defaults follow mjlab's tracking task. Every part
scales with one strength in [0, 1]: 1 unless the opt-in curriculum
(``curriculum.py``) runs. The ``calm_envs`` share of the envs gets none of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import (
    BatchSim,
    ConfigError,
    ServoCommand,
    push_rate_unit,
    push_sector,
    push_speed_unit,
    quat_apply_inverse,
    yaw_angle,
)

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


def _sized_ranges(ranges: Mapping[str, Any], units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``uniform_ranges`` over ``AXES_LINEAR + AXES_ANGULAR``, each axis times its unit."""
    low, high = uniform_ranges(ranges, AXES_LINEAR + AXES_ANGULAR)
    return units * low, units * high


def sized_velocity_ranges(ranges: Mapping[str, Any],
                          root_height: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) over ``AXES_LINEAR + AXES_ANGULAR`` of root velocity ranges sized to the robot
    (docs/tasks.md, "Randomisation"): linear ones in units of √(g·L) m/s, angular ones in √(g/L)
    rad/s, L being the reference's highest root height (``root_height``)."""
    return _sized_ranges(ranges, np.array([push_speed_unit(root_height)] * 3
                                          + [push_rate_unit(root_height)] * 3))


def calm_envs(config: Mapping[str, Any], num_envs: int) -> np.ndarray:
    """[N] bool: the envs that train with no randomisation at all (``calm_envs``, a fraction of
    them: the last ones), so a policy learning to ride out the rest keeps practising the
    undisturbed motion it is judged on."""
    share = float(config.get("calm_envs") or 0.0)
    if not 0.0 <= share < 1.0:
        raise ConfigError(f"tracking task: randomization.calm_envs is {share}, not a fraction of "
                          "the envs", fix="set it in [0, 1): 0 randomises every env")
    calm = np.zeros(num_envs, bool)
    calm[num_envs - int(round(share * num_envs)):] = True
    return calm


def reset_noise_ranges(
    config: Mapping[str, Any], root_height: float
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(low, high) over ``AXES_LINEAR + AXES_ANGULAR`` of the reset noise on the root pose and
    velocity, sized to the robot as the pushes are: positions in units of L m (angles in rad),
    velocities as ``sized_velocity_ranges``."""
    pose = _sized_ranges(config["reset_pose"], np.array([root_height] * 3 + [1.0] * 3))
    return pose, sized_velocity_ranges(config["reset_velocity"], root_height)


class PhysicsRandomization:
    """Per-env friction, body masses, payload, anchor centre of mass and motor strength.

    A calm env (``calm``, [N] bool) keeps the model's own values at every strength.
    The centre-of-mass offsets are in units of L, the reference's highest root height
    (``root_height``), as the reset noise and the pushes are sized.

    Drawn once at start-up at full range; ``apply(strength)`` sets each value
    to ``nominal + strength × (drawn − nominal)``, so the curriculum
    (``curriculum.py``) can widen the spread without drawing anew and a
    resumed run gets the same physics back from its strength alone.
    """

    def __init__(
        self, sim: BatchSim, tm: TrackingModel, config: Mapping[str, Any], rng: np.random.Generator,
        root_height: float, calm: np.ndarray,
    ) -> None:
        n, model = sim.num_envs, tm.model
        self.sim, self._calm = sim, calm
        self._fields: list[tuple[np.ndarray, tuple, np.ndarray, np.ndarray]] = []
        """(expanded field, index, nominal, drawn) per randomised quantity."""
        friction_range = config.get("friction")
        if friction_range is not None:
            # Contacts take the larger friction of the two geoms, so every geom of an
            # env (floor included) gets the same sliding friction: that is the
            # friction every contact of that env then sees.
            friction = sim.expand("geom_friction")
            drawn = np.broadcast_to(rng.uniform(*friction_range, size=(n, 1)),
                                    friction[:, :, 0].shape)
            self._add(friction, (slice(None), slice(None), 0), model.geom_friction[:, 0], drawn)
        mass_range = config.get("mass_scale")
        com_ranges = config.get("anchor_com_offset")
        robot_bodies = np.flatnonzero(model.body_rootid == tm.indices.root_body_id)
        nominal_mass = model.body_mass[robot_bodies]
        mass = nominal_mass * (rng.uniform(*mass_range, size=(n, robot_bodies.size))
                               if mass_range is not None else 1.0)
        if com_ranges is not None:
            low, high = (root_height * r for r in uniform_ranges(com_ranges, AXES_LINEAR))
            ipos = sim.expand("body_ipos")
            anchor = tm.indices.anchor_body_id
            nominal = model.body_ipos[anchor]
            self._add(ipos, (slice(None), anchor), nominal,
                      nominal + rng.uniform(low, high, size=(n, 3)))
        # drawn after the others: their draws are those of before
        payload_range = config.get("payload")
        if payload_range is not None:
            mass = np.broadcast_to(mass, (n, robot_bodies.size)).copy()
            column = int(np.flatnonzero(robot_bodies == tm.indices.anchor_body_id)[0])
            mass[:, column] += rng.uniform(*payload_range, size=n) * nominal_mass.sum()
        if mass_range is not None or payload_range is not None:
            nominal_inertia = model.body_inertia[robot_bodies]
            self._add(sim.expand("body_mass"), (slice(None), robot_bodies), nominal_mass, mass)
            self._add(sim.expand("body_inertia"), (slice(None), robot_bodies), nominal_inertia,
                      nominal_inertia * (mass / nominal_mass)[..., None])
        motor_range = config.get("motor_strength")
        if motor_range is not None:
            acts = tm.indices.actuator_ids
            scale = rng.uniform(*motor_range, size=(n, 1))
            gain, bias = sim.expand("actuator_gainprm"), sim.expand("actuator_biasprm")
            # kp, -kp, -kd of a position servo
            for field, column in ((gain, 0), (bias, 1), (bias, 2)):
                nominal = (
                    model.actuator_gainprm[acts, column]
                    if field is gain
                    else model.actuator_biasprm[acts, column]
                )
                self._add(field, (slice(None), acts, column), nominal, nominal * scale)
            force = model.actuator_forcerange[acts]
            self._add(sim.expand("actuator_forcerange"), (slice(None), acts), force,
                      force * scale[..., None])
        self.strength = 1.0
        """The strength last applied."""
        self.apply(1.0)

    def _add(self, field: np.ndarray, index: tuple, nominal: np.ndarray, drawn: np.ndarray) -> None:
        drawn = np.array(drawn, dtype=np.float64)
        drawn[self._calm] = nominal  # drawn all the same, so the other envs' draws do not move
        self._fields.append((field, index, np.array(nominal, dtype=np.float64), drawn))

    def apply(self, strength: float) -> None:
        """Set every randomised quantity at ``strength`` (0: the model's own values, 1: the
        draws)."""
        self.strength = float(strength)
        for field, index, nominal, drawn in self._fields:
            field[index] = (
                drawn if self.strength == 1.0 else nominal + self.strength * (drawn - nominal)
            )
        if self._fields:
            self.sim.set_const()


class ActuationRandomization:
    """Per-env action delay (whole control steps) and joint-encoder bias, drawn once at start-up.

    ``servos`` (the core's ``ServoCommand``, which the stress test's latency and encoder families
    use too) turns the targets the policy chose into what reaches the servos: those of ``delay``
    steps ago, minus the encoder bias; the policy reads q + bias
    (``observations.joint_pos_sensed``). At ``strength`` s the bias is s × its draw and an env's
    delay is its draw rounded at s (none below s = 0.5). A calm env (``calm``) has neither.
    """

    def __init__(self, num_envs: int, num_joints: int, config: Mapping[str, Any],
                 rng: np.random.Generator, calm: np.ndarray) -> None:
        delay, bias = config.get("action_delay"), config.get("encoder_bias")
        self.drawn_delay = (rng.integers(int(delay[0]), int(delay[1]) + 1, size=num_envs)
                            if delay is not None
                            else np.zeros(num_envs, np.int64))
        self.drawn_bias = (rng.uniform(*bias, size=(num_envs, num_joints)) if bias is not None
                           else np.zeros((num_envs, num_joints)))
        self.drawn_delay[calm], self.drawn_bias[calm] = 0, 0.0
        self.servos = ServoCommand(np.zeros((num_envs, num_joints)), self.drawn_delay,
                                   self.drawn_bias)
        self.apply(1.0)

    @property
    def bias(self) -> np.ndarray:
        return self.servos.bias

    @property
    def delay(self) -> np.ndarray:
        return self.servos.delay

    def apply(self, strength: float) -> None:
        self.servos.delay = np.floor(strength * self.drawn_delay + 0.5).astype(np.int64)
        self.servos.bias = strength * self.drawn_bias


_NEVER = np.iinfo(np.int64).max // 2
"""A countdown that does not run out (a ``once`` pusher's env until its next episode)."""


class Pusher:
    """Adds a random root velocity to each env every ``interval_s`` (drawn per push), or with
    ``once`` exactly once per episode, ``interval_s`` after its start (``restart``), as the stress
    test's push lands once per episode.

    The velocity ranges are sized to the robot (docs/tasks.md, "Randomisation"): linear ones in
    units of √(g·L) m/s and angular ones in units of √(g/L) rad/s, L being the reference's highest
    root height (``root_height``; the stress test's push levels use the same unit,
    ``deploy.perturbations``). A calm env (``calm``) is never pushed. Each env's last kick is
    remembered by the side of the robot it pointed to (``side``: the stress test's
    ``PUSH_DIRECTIONS``), so a verdict check's pushed episodes split by it as the stress test's do.
    """

    def __init__(
        self, sim: BatchSim, tm: TrackingModel, config: Mapping[str, Any], rng: np.random.Generator,
        root_height: float, calm: np.ndarray,
    ) -> None:
        self.sim, self.rng, self._calm = sim, rng, calm
        self.interval_steps = np.array(config["interval_s"], dtype=np.float64) / sim.control_dt
        low, high = sized_velocity_ranges(config.get("velocity", {}), root_height)
        self.lin_low, self.lin_high = low[:3], high[:3]
        self.ang_low, self.ang_high = low[3:], high[3:]
        speed = config.get("speed")
        self.speed = (None if speed is None
                      else push_speed_unit(root_height) * np.asarray(speed, dtype=np.float64))
        """[low, high] m/s of a horizontal kick in a random direction (replaces the x and y ranges),
        or None."""
        self._quat, self._lin, self._ang = (
            tm.root_quat_qpos,
            tm.root_lin_vel_qvel,
            tm.root_ang_vel_qvel,
        )
        self.once = bool(config.get("once", False))
        """One push per episode, timed from its start; else a push every interval, episodes or
        not."""
        self.strength = 1.0
        """Factor on the push velocities (the curriculum's strength)."""
        self.countdown = self._draw_interval(sim.num_envs)
        """Control steps until each env's next push."""
        self.side = np.full(sim.num_envs, -1, np.int64)
        """The ``PUSH_DIRECTIONS`` index of each env's last kick, relative to the robot's heading
        when it landed (-1: not kicked yet)."""
        self.total = 0

    def _draw_interval(self, count: int) -> np.ndarray:
        return np.round(self.rng.uniform(*self.interval_steps, size=count)).astype(np.int64)

    def restart(self, ids: np.ndarray) -> None:
        """Envs ``ids`` start an episode: with ``once``, each is pushed ``interval_s`` from now."""
        if self.once:
            self.countdown[ids] = self._draw_interval(len(ids))

    def step(self) -> int:
        """Push the envs whose countdown ran out; return how many."""
        self.countdown -= 1
        due = np.flatnonzero(self.countdown <= 0)
        if due.size == 0:
            return 0
        qpos, qvel = self.sim.qpos, self.sim.qvel
        d_lin = self.strength * self.rng.uniform(self.lin_low, self.lin_high, size=(due.size, 3))
        d_ang_w = self.strength * self.rng.uniform(self.ang_low, self.ang_high, size=(due.size, 3))
        if self.speed is not None:
            direction = self.rng.uniform(0.0, 2 * np.pi, size=due.size)
            magnitude = self.strength * self.rng.uniform(*self.speed, size=due.size)
            d_lin[:, 0], d_lin[:, 1] = magnitude * np.cos(direction), magnitude * np.sin(direction)
        sides = push_sector(np.arctan2(d_lin[:, 1], d_lin[:, 0]) - yaw_angle(qpos[due, self._quat]))
        self.countdown[due] = _NEVER if self.once else self._draw_interval(due.size)
        # drawn for the calm envs too, so the other envs' pushes do not depend on which are calm
        kept = ~self._calm[due]
        due, d_lin, d_ang_w = due[kept], d_lin[kept], d_ang_w[kept]
        self.side[due] = sides[kept]
        qvel[due, self._lin] += d_lin
        # the free joint's angular velocity is in the body frame
        qvel[due, self._ang] += quat_apply_inverse(qpos[due, self._quat], d_ang_w)
        self.total += int(due.size)
        return int(due.size)
