"""The physics step a robot trains at: twice its model's where the robot moves the same at it.

Physics is most of a training iteration on a CPU. At twice the model's timestep (10 ms for the
5 ms `robots new` gives every model: 100 Hz physics, 2 steps per 50 Hz control step instead of 4)
training collects 1.3-1.5 × as many iterations a minute, while sim2sim and the stress test still
judge the policy at the model's own step (docs/tasks.md, "Training at 100 Hz physics"). That is
worth it only where the robot moves at the coarse step as it does at the fine one: a servo much
faster than the coarse step, or contacts stiffer than it resolves, behave differently there, and a
policy trained on that behaviour meets another robot in sim2sim.

The test (``kick_both_steps``): the robot standing in its pose under its servos, no policy, is
kicked horizontally by ``KICK_LEVEL``·√(g·L) (L its root's standing height; 0.07 m/s on q1)
forward, left, backward and right in turn, and simulated for ``KICK_SECONDS`` at both steps.
Wherever it stays up at the fine step it must stay up at the coarse one, its anchor's path within
``PATH_TOLERANCE`` of the fine step's (``agrees``). `robots new` writes the coarse step into the
spec's ``training_overrides`` where it agrees (``choose_training_step``); `robots check` reports
the same kicks.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from .stance import FALLEN_HEIGHT, FALLEN_TILT_COS
from .statics import push_speed_unit

COARSE_FACTOR = 2
"""The training step tried: this × the model's timestep."""
CONTROL_DT = 0.02
"""s: the policy's control step (50 Hz), where the two paths are compared."""
KICK_LEVEL = 0.03
"""The kicks' speed in units of √(g·L): gentle, so that the servos alone ride them out and the
paths compare the step's dynamics, not how near the robot came to tipping over (kicked at 0.05,
a quarter of the stress test's standard push, the Menagerie's H1 nearly tips forward and its paths
part by 2.7 cm; from 0.02 to 0.035 every robot tried is judged alike)."""
KICK_SECONDS = 2.0
"""Simulated time after each kick: the servos settle the robot within it."""
PATH_TOLERANCE = 0.01
"""m: the most the anchor's path at the coarse step may stray from the fine step's. About the
tracking verdict's error limit on a standing motion (q1's wave: 8.5 mm); q1 keeps within 1 mm."""
SIDES = {"forward": 0.0, "left": 90.0, "backward": 180.0, "right": 270.0}
"""Kick directions, degrees from the robot's heading."""


@dataclass(frozen=True)
class Kick:
    """One kick played at both steps."""

    side: str
    speed: float
    """m/s."""
    fell_fine: bool
    """It fell at the model's step (or the simulation diverged there): not compared."""
    fell_coarse: bool
    diverged_coarse: bool
    """MuJoCo reset the simulation at the coarse step (its warning of a non-finite or huge
    acceleration): unstable there."""
    gap: float
    """m: the largest distance between the anchor's paths at the two steps, at control steps."""


def coarse_timestep(model: mujoco.MjModel) -> float | None:
    """The training step tried for ``model``: ``COARSE_FACTOR`` × its timestep, or None where that
    does not divide the control step (the policy's rate would change)."""
    step = COARSE_FACTOR * float(model.opt.timestep)
    substeps = CONTROL_DT / step
    return step if substeps >= 1 and abs(substeps - round(substeps)) < 1e-6 else None


def training_overrides(step: float) -> tuple[str, ...]:
    """The ``--set`` pairs that train at ``step`` (a ``coarse_timestep``) with the same control
    rate."""
    return (f"task.physics_dt={step:g}", f"task.decimation={round(CONTROL_DT / step)}")


def overridden_timestep(overrides: tuple[str, ...]) -> float | None:
    """The physics step that ``training_overrides`` set (``task.physics_dt``), or None."""
    for pair in overrides:
        key, _, value = pair.partition("=")
        if key.strip() == "task.physics_dt":
            return float(value)
    return None


def kick_both_steps(model: mujoco.MjModel, standing: mujoco.MjData, anchor: int, root: int,
                    coarse_dt: float) -> list[Kick]:
    """Kick the robot in ``standing`` (its state, and ``ctrl`` its servos' targets; ``model``'s
    actuators the servos) from each of ``SIDES`` and play ``KICK_SECONDS`` at the model's step and
    at ``coarse_dt``."""
    mujoco.mj_forward(model, standing)
    coarse = copy.copy(model)
    coarse.opt.timestep = coarse_dt
    kicks = []
    for side, velocity in kick_velocities(standing, root).items():
        fine_path, fell_fine, diverged_fine = _kicked_path(model, standing, anchor, root, velocity)
        coarse_path, fell_coarse, diverged = _kicked_path(coarse, standing, anchor, root, velocity)
        gap = float(np.linalg.norm(fine_path - coarse_path, axis=1).max())
        kicks.append(Kick(side, float(np.linalg.norm(velocity)), fell_fine or diverged_fine,
                          fell_coarse, diverged, gap))
    return kicks


def kick_velocities(standing: mujoco.MjData, root: int) -> dict[str, np.ndarray]:
    """Each side's kick (m/s, world x and y): ``KICK_LEVEL``·√(g·L), L the root's height in
    ``standing`` (``mj_forward`` done), pointed ``SIDES`` degrees from the root's heading."""
    speed = KICK_LEVEL * push_speed_unit(standing.xpos[root, 2])
    heading = math.atan2(standing.xmat[root, 3], standing.xmat[root, 0])
    return {side: speed * np.array([math.cos(heading + math.radians(degrees)),
                                    math.sin(heading + math.radians(degrees))])
            for side, degrees in SIDES.items()}


def _kicked_path(model: mujoco.MjModel, standing: mujoco.MjData, anchor: int, root: int,
                 velocity: np.ndarray) -> tuple[np.ndarray, bool, bool]:
    """The anchor's positions at each control step after adding ``velocity`` to the root, simulated
    at ``model``'s step; whether the robot fell (``stance.holds_pose``'s rule); whether the
    simulation diverged."""
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = standing.qpos, standing.qvel, standing.ctrl
    base = int(model.jnt_dofadr[model.body_jntadr[root]])  # the free joint: world velocity first
    data.qvel[base:base + 2] += velocity
    mujoco.mj_forward(model, data)
    start = float(data.xpos[anchor, 2])
    substeps = max(1, round(CONTROL_DT / model.opt.timestep))
    path = []
    for _ in range(round(KICK_SECONDS / CONTROL_DT)):
        for _ in range(substeps):
            mujoco.mj_step(model, data)
        path.append(data.xpos[anchor].copy())
    upright = float(data.xmat[root].reshape(3, 3)[2, 2])
    fell = float(data.xpos[anchor, 2]) < FALLEN_HEIGHT * start or upright < FALLEN_TILT_COS
    diverged = data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0
    return np.array(path), fell, bool(diverged)


def agrees(kicks: list[Kick]) -> bool:
    """Whether the coarse step moves the robot as the fine one: at least one kick ridden out at the
    fine step, and every such kick ridden out at the coarse step within ``PATH_TOLERANCE``."""
    compared = [k for k in kicks if not k.fell_fine]
    return bool(compared) and all(
        not (k.fell_coarse or k.diverged_coarse) and k.gap <= PATH_TOLERANCE for k in compared)


def describe(kicks: list[Kick], fine_dt: float, coarse_dt: float) -> str:
    """One sentence on the kicks: how far the paths part on each side, and where only the coarse
    step falls."""
    compared = [k for k in kicks if not k.fell_fine]
    speed = kicks[0].speed if kicks else 0.0
    played = (f"kicked at {speed:.2f} m/s from 4 sides under its servos, {KICK_SECONDS:g} s at "
              f"{fine_dt * 1000:g} and at {coarse_dt * 1000:g} ms")
    if not compared:
        return f"{played}: it fell after every kick at {fine_dt * 1000:g} ms, nothing to compare"
    gaps = ", ".join(f"{k.side} {k.gap * 100:.1f}" for k in compared)
    result = (f"{played}: the anchor's paths part by {gaps} cm (within "
              f"{PATH_TOLERANCE * 100:g} cm agrees)")
    diverged = [k.side for k in compared if k.diverged_coarse]
    fell = [k.side for k in compared if k.fell_coarse and not k.diverged_coarse]
    if diverged:
        result += (f"; kicked {', '.join(diverged)} the simulation diverges at "
                   f"{coarse_dt * 1000:g} ms (MuJoCo reset it)")
    if fell:
        result += f"; kicked {', '.join(fell)} it falls only at {coarse_dt * 1000:g} ms"
    return result


def choose_training_step(model: mujoco.MjModel, standing: mujoco.MjData, anchor: int,
                         root: int) -> tuple[tuple[str, ...], str]:
    """The ``training_overrides`` for the robot in ``standing`` (as ``kick_both_steps`` takes it):
    the coarse step's where the kicks agree, else none; and the note that says why (the generated
    spec's ``REVIEW`` line)."""
    fine, coarse = float(model.opt.timestep), coarse_timestep(model)
    if coarse is None:
        return (), (f"the model's {fine * 1000:g} ms: {COARSE_FACTOR} × it does not divide the "
                    f"{CONTROL_DT * 1000:g} ms control step")
    kicks = kick_both_steps(model, standing, anchor, root, coarse)
    found = describe(kicks, fine, coarse)
    if agrees(kicks):
        return training_overrides(coarse), (
            f"{coarse * 1000:g} ms physics ({round(CONTROL_DT / coarse)} steps per control step), "
            f"faster to train than the model's {fine * 1000:g} ms, which sim2sim and the stress "
            f"test keep: {found}")
    return (), (f"the model's {fine * 1000:g} ms: {found}; a policy trained at "
                f"{coarse * 1000:g} ms would meet another robot in sim2sim")
