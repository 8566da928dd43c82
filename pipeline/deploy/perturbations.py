"""The perturbation families of the stress test: how the world may differ from the training model.

Each family has graded levels and one or more *standard* levels: what a
policy must survive to be called ROBUST (docs/deploy.md, "Before you deploy:
the stress report"; the standard levels cover at least what training's
randomisation covers, docs/tasks.md "Randomisation"). Every environment of
a stress batch runs one *cell* (a family at one level, or ``nominal``);
``Conditions`` holds each environment's values, ``apply_to_model`` puts the
physical ones into a batch's per-environment model and the stress loop
(``deploy.stress``) applies the rest at run time (pushes, latency, encoders).

Sized to the robot (the rule this test, the tracking task's training pushes and
`robots new`'s training-step kicks use: ``robot.statics.push_speed_unit``): a
push is a horizontal velocity kick on the root of Δv = k·√(g·L), with L the
reference's highest root height (the standing pelvis height, about the leg
length; q1: 0.50 m, so the standard k = 0.2 is 0.44 m/s, and 0.56 m/s for a
robot with a 0.79 m pelvis such as the G1). The levels are the
dimensionless k (a Froude number's square root): robots of any size are
pushed equally hard for their size. A payload is a fraction of the robot's
own mass, on its anchor body. Motor strength, dynamics and latency are
relative or in control steps, so they need no scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Family:
    """One way the world differs from training, at graded ``levels`` (mildest first)."""

    name: str
    description: str
    unit: str
    levels: tuple[Any, ...]
    standard: tuple[Any, ...]
    """The levels a ROBUST policy must survive (success ≥ 0.9 at each)."""

    def label(self, level: Any, push_unit: float = 1.0) -> str:
        """How a level reads in a table or a plot (a push in m/s for this robot)."""
        if self.name == "push":
            return f"{level * push_unit:.2f} m/s"
        if self.name == "friction":
            return f"μ {level:g}"
        if self.name == "payload":
            return f"+{level:.0%}"
        if self.name in ("motor", "dynamics"):
            return f"×{level:g}"
        if self.name == "latency":
            return f"{level} step{'s' if level != 1 else ''}"
        if self.name == "encoder":
            return f"±{level:g} rad"
        return str(level)


FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("push",
           "one horizontal velocity kick on the root, in a random direction at a random time in "
           "the "
           "episode's second quarter; level k: Δv = k·√(g·L), L = the reference's highest root "
           "height",
           "k", (0.1, 0.2, 0.3, 0.4), (0.2,)),
    Family("friction",
           "the sliding friction coefficient of every contact (the model's own: nominal)", "μ",
           (0.2, 0.3, 0.5, 1.2, 1.6), (0.3, 1.2)),
    Family("payload",
           "added mass on the anchor body, as a fraction of the robot's mass (inertia scaled "
           "alike)",
           "fraction", (0.05, 0.1, 0.2, 0.3), (0.1,)),
    Family("motor", "motor strength: kp, kd and the effort limit of every joint times the level",
           "×",
           (0.9, 0.8, 0.7, 0.6), (0.8,)),
    Family("latency", "the joint targets reach the motors this many control steps late",
           "control steps",
           (1, 2, 3), (1,)),
    Family("encoder",
           "joint encoders: a fixed bias of ±level per joint (random sign; the PD sees it too) and "
           "uniform noise of ±level on every reading the policy gets", "rad",
           (0.01, 0.02, 0.04, 0.08), (0.01,)),
    Family("dynamics",
           "model gap: every joint's armature, damping and friction loss times the level", "×",
           (0.5, 1.5, 2.0, 3.0), (0.5, 1.5)),
    Family("integrator",
           "model gap: another integrator or physics rate (euler: the other integrator at the "
           "stress rate; training_rate: training's physics step, the MJCF's own unless "
           "task.physics_dt set another; 1kHz: a 1 ms step)", "",
           ("euler", "training_rate", "1kHz"), ("euler", "training_rate", "1kHz")),
)}
"""Every family, in report order."""

NOMINAL = "nominal"


@dataclass(frozen=True)
class Cell:
    """One family at one level (``family == NOMINAL``: the undisturbed model, ``level`` None)."""

    family: str
    level: Any = None

    @property
    def standard(self) -> bool:
        return self.family != NOMINAL and self.level in FAMILIES[self.family].standard

    def label(self, push_unit: float = 1.0) -> str:
        return (
            NOMINAL
            if self.family == NOMINAL
            else FAMILIES[self.family].label(self.level, push_unit)
        )


def cells(families: tuple[str, ...] | None = None, standard_only: bool = False) -> list[Cell]:
    """``nominal`` then every level of ``families`` (all when None), in report order."""
    names = tuple(FAMILIES) if families is None else families
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown perturbation family {', '.join(unknown)}; families: "
                         f"{', '.join(FAMILIES)}")
    out = [Cell(NOMINAL)]
    for name in names:
        family = FAMILIES[name]
        out += [Cell(name, level) for level in family.levels
                if not standard_only or level in family.standard]
    return out


@dataclass
class Conditions:
    """Per-environment perturbation values of one batch (arrays of length N; neutral values where
    unperturbed)."""

    friction: np.ndarray
    """Sliding friction of every geom; NaN keeps the model's own."""
    payload: np.ndarray
    """Added anchor mass as a fraction of the robot's mass."""
    motor: np.ndarray
    """Factor on kp, kd and the effort limit."""
    dynamics: np.ndarray
    """Factor on joint armature, damping and friction loss."""
    euler: np.ndarray
    """bool: integrate with the other integrator (Euler, or implicitfast for a model that uses
    Euler)."""
    latency: np.ndarray
    """int: control steps the targets are late."""
    encoder: np.ndarray
    """Encoder bias magnitude and noise half-width, rad."""
    push: np.ndarray
    """Push level k (0: no push)."""

    @classmethod
    def of(cls, env_cells: list[Cell]) -> Conditions:
        n = len(env_cells)
        c = cls(friction=np.full(n, np.nan), payload=np.zeros(n), motor=np.ones(n),
                dynamics=np.ones(n),
                euler=np.zeros(n, bool), latency=np.zeros(n, np.int64), encoder=np.zeros(n),
                push=np.zeros(n))
        for i, cell in enumerate(env_cells):
            if cell.family == "integrator":
                c.euler[i] = cell.level == "euler"
            elif cell.family != NOMINAL:
                getattr(c, cell.family)[i] = cell.level
        return c


def physics_hz_of(cell: Cell, stress_hz: float, model_timestep: float) -> float:
    """The physics rate ``cell`` runs at: the stress rate, or the integrator family's other rate."""
    if cell.family == "integrator" and cell.level == "training_rate":
        return 1.0 / model_timestep
    if cell.family == "integrator" and cell.level == "1kHz":
        return 1000.0
    return stress_hz


def apply_to_model(sim: Any, conditions: Conditions, robot: Any) -> None:
    """Put the physical conditions into ``sim``'s per-environment model (a
    ``sim.physics.BatchSim``).

    ``robot``: the ``DeployRobot`` (its actuators are PD servos, ``joint_hal.setup_servo_loop``).
    Only the fields some environment changes are expanded.
    """
    import mujoco  # late: the stress command's options read FAMILIES at start-up

    model = sim.model
    robot_bodies = np.flatnonzero(model.body_rootid == robot.root_body)
    if np.isfinite(conditions.friction).any():
        friction = sim.expand("geom_friction")
        rows = np.flatnonzero(np.isfinite(conditions.friction))
        friction[rows, :, 0] = conditions.friction[rows, None]
    if (conditions.payload != 0).any():
        mass, inertia = sim.expand("body_mass"), sim.expand("body_inertia")
        nominal = model.body_mass[robot.anchor_body]
        added = conditions.payload * model.body_mass[robot_bodies].sum()
        mass[:, robot.anchor_body] = nominal + added
        inertia[:, robot.anchor_body] = (
            model.body_inertia[robot.anchor_body] * ((nominal + added) / nominal)[:, None]
        )
    if (conditions.motor != 1).any():
        acts, s = robot.actuator_ids, conditions.motor[:, None]
        gain, bias, force = sim.expand("actuator_gainprm"), sim.expand("actuator_biasprm"), \
            sim.expand("actuator_forcerange")
        gain[:, acts, 0] = model.actuator_gainprm[acts, 0] * s
        bias[:, acts, 1] = model.actuator_biasprm[acts, 1] * s
        bias[:, acts, 2] = model.actuator_biasprm[acts, 2] * s
        force[:, acts] = model.actuator_forcerange[acts] * s[..., None]
    if (conditions.dynamics != 1).any():
        dofs, s = robot.dof_adr, conditions.dynamics[:, None]
        for name in ("dof_armature", "dof_damping", "dof_frictionloss"):
            sim.expand(name)[:, dofs] = getattr(model, name)[dofs] * s
    if conditions.euler.any():
        other = (mujoco.mjtIntegrator.mjINT_IMPLICITFAST
                 if model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
                 else mujoco.mjtIntegrator.mjINT_EULER)
        sim.expand("opt.integrator")[conditions.euler] = int(other)
    if (conditions.payload != 0).any() or (conditions.dynamics != 1).any():
        sim.set_const()


class ServoCommand:
    """What N robots' servos receive, one control step at a time: the joint targets chosen
    ``delay[i]`` steps ago (the held targets before that), minus the encoder ``bias`` [N, J], since
    a servo closes its loop on its biased reading: kp·(target − (q + bias)). The stress test
    (latency, encoder families) and the tracking task's training randomisation (``action_delay``,
    ``encoder_bias``) both send targets through it; ``delay`` and ``bias`` may be changed between
    steps."""

    def __init__(self, hold: np.ndarray, delay: np.ndarray, bias: np.ndarray) -> None:
        self.delay = np.asarray(delay, dtype=np.int64)
        self.bias = np.asarray(bias, dtype=np.float64)
        self.history = np.repeat(np.asarray(hold, dtype=np.float64)[None],
                                 int(self.delay.max(initial=0)) + 1,
                                 axis=0)
        """history[d]: the targets chosen d steps ago."""

    def __call__(self, chosen: np.ndarray) -> np.ndarray:
        """The servo targets [N, J] of this step, given the targets [N, J] chosen now."""
        if len(self.history) > 1:
            self.history[1:] = self.history[:-1]
        self.history[0] = chosen
        delayed = (
            self.history[self.delay, np.arange(len(chosen))] if len(self.history) > 1 else chosen
        )
        return delayed - self.bias

    def reset(self, ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Robots ``ids`` start over holding ``targets`` [n, J]; returns their servo targets."""
        self.history[:, ids] = targets
        return targets - self.bias[ids]
