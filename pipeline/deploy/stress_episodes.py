"""The stress test's episodes: one physics rate's cells × controllers × starts run side by side.

``run_group`` plays them in one ``sim.physics.BatchSim`` (docs/deploy.md, "Before you deploy:
the stress report"): each env runs one cell's perturbation (``perturbations.Conditions``) with one
controller (the policy, replaying the reference, the statue) from one start frame, whose push and
encoder bias signs (``draw_starts``) are the same in every cell and for every controller.
``stress.run_stress`` builds the groups and turns the episode records into the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..evaluate.metrics import (
    PHYSICS_FAULT,
    EpisodeMetrics,
    failure_checks,
    first_failure,
    step_errors,
)
from ..evaluate.push_direction import PUSH_DIRECTIONS, push_sector
from ..rotations import yaw_angle
from ..sim.physics import BatchSim
from .observation import SensedState
from .onnx_policy import NON_FINITE_ACTION, initial_last_action, joint_targets, replay_targets
from .perturbations import Cell, Conditions, ServoCommand, apply_to_model
from .reference_state import reference_states
from .sim2sim import Sim2SimSetup, batch_snapshot

CONTROLLERS = ("policy", "replay", "statue")
PUSH_WINDOW = (0.25, 0.5)
"""A push lands at a time in this fraction of the episode window (then it has at least half of it to
recover)."""


@dataclass
class Episodes:
    """The envs of one physics rate: which cell, controller and start each runs."""

    cells: list[Cell] = field(default_factory=list)
    controllers: list[str] = field(default_factory=list)
    start_index: list[int] = field(default_factory=list)


def start_steps(num_steps: int, window: int, count: int) -> np.ndarray:
    """``count`` start steps spread evenly so that a ``window``-step episode from each fits in the
    motion."""
    last_start = max(num_steps - 1 - window, 0)
    return np.round(np.linspace(0, last_start, count)).astype(np.int64)


def draw_starts(count: int, num_steps: int, window: int, num_joints: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``count`` start steps and each one's disturbances, shared by every cell and controller that
    runs it: push directions and times stratified (evenly spread, at a random offset, paired with
    the starts at random) so that few starts cover every direction; encoder bias signs."""
    spread = (np.arange(count) + rng.uniform(size=2)[:, None]) / count
    low, high = PUSH_WINDOW
    return start_steps(num_steps, window, count), {
        "push_angle": 2 * np.pi * rng.permutation(spread[0]),
        "push_step": np.round(window * (low + (high - low) * rng.permutation(spread[1]))).astype(
            np.int64
        ),
        "bias_sign": rng.choice([-1.0, 1.0], size=(count, num_joints)),
    }


class Actuation:
    """What the motors receive and what the encoders report, per env: action latency and encoder
    bias and noise.

    ``command(targets)`` keeps the targets chosen this control step and returns the motors' ``ctrl``
    (``perturbations.ServoCommand``: the targets of ``latency`` steps ago, the start pose before
    that, minus the encoder bias). ``sensed(q, rows)`` is what the policy reads: q + bias + uniform
    noise of ±level (the noise is not fed to the PD: at the servo rate it averages out).
    """

    def __init__(self, hold: np.ndarray, latency: np.ndarray, encoder: np.ndarray,
                 bias_sign: np.ndarray,
                 rng: np.random.Generator) -> None:
        self.rng = rng
        self.level = encoder[:, None]
        self.servos = ServoCommand(hold, latency, self.level * bias_sign)
        self.bias = self.servos.bias

    def sensed(self, joint_pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The encoder readings of envs ``rows`` whose joints are at ``joint_pos`` [len(rows),
        J]."""
        noise = self.rng.uniform(-1.0, 1.0, size=joint_pos.shape)
        return joint_pos + self.bias[rows] + self.level[rows] * noise

    def command(self, targets: np.ndarray) -> np.ndarray:
        return self.servos(targets)


def run_group(setup: Sim2SimSetup, group: Episodes, starts: np.ndarray, window: int,
               per_start: dict,
               unit: float, rng: np.random.Generator, video_cell: Cell | None, frames: dict,
               bar, watch_start: int = 0) -> list[tuple[Cell, str, dict]]:
    """Run one physics rate's episodes side by side; returns (cell, controller, episode record) per
    env. The policy's and the replay's episodes of ``video_cell`` from start ``watch_start`` keep
    their frames in ``frames``."""
    robot, meta, ref = setup.robot, setup.meta, setup.reference
    n = len(group.cells)
    substeps = int(round(setup.control_dt / robot.model.opt.timestep))
    sim = BatchSim(robot.model, n, decimation=substeps)
    conditions = Conditions.of(group.cells)
    apply_to_model(sim, conditions, robot)
    index = np.array(group.start_index)
    start = starts[index]
    controllers = np.array(group.controllers)
    policy, replay, statue = (np.flatnonzero(controllers == c) for c in CONTROLLERS)
    qpos0, qvel0 = reference_states(robot, ref, start, int(setup.index["root"][0]))
    hold = ref["joint_pos"][start]
    sim.reset(None, qpos=qpos0, qvel=qvel0, ctrl=hold)
    xpos, xquat = sim.bind("xpos"), sim.bind("xquat")
    actuation = Actuation(hold, conditions.latency, conditions.encoder,
                          per_start["bias_sign"][index], rng)
    pushed = np.flatnonzero(conditions.push > 0)
    push_step = per_start["push_step"][index]
    kick = (conditions.push * unit)[:, None] * np.stack(
        [np.cos(per_start["push_angle"][index]), np.sin(per_start["push_angle"][index])], axis=1)
    last_action = initial_last_action(meta, ref, start[policy])
    replayed = replay_targets(meta, ref)
    history = setup.observation.history(policy.size)
    targets = hold.copy()
    running = np.ones(n, bool)
    failure: list[str | None] = [None] * n
    metrics = EpisodeMetrics(n, setup.control_dt,
                             reference_body_pos=ref["body_pos_w"][:, setup.index["tracked"]],
                             max_episode_steps=window)
    last = ref["joint_pos"].shape[0] - 1
    watched = [i for i in range(n) if group.cells[i] == video_cell
               and group.start_index[i] == watch_start
               and group.controllers[i] in ("policy", "replay")]
    keep = np.zeros(n, bool)
    keep[watched] = True  # a video shows the whole window, the fall included
    d, a = robot.root_dof_adr, robot.root_qpos_adr
    push_direction = np.full(n, -1, np.int64)
    for k in range(window):
        t = np.minimum(start + k, last)
        for i in watched:
            frames.setdefault(group.controllers[i], []).append((sim.qpos[i].copy(), int(t[i])))
        if policy.size:
            qpos, qvel = sim.qpos[policy], sim.qvel[policy]
            state = SensedState.of(robot, qpos, qvel, xquat[policy])
            state.joint_pos = actuation.sensed(state.joint_pos, policy)
            obs = setup.observation.build_batch(state, ref, t[policy], last_action)
            if history is not None:
                obs = history.push(obs)
            actions = run_policy(setup, obs, t[policy])
            finite = np.isfinite(actions).all(axis=1)
            for i in policy[~finite & running[policy]]:
                failure[i], running[i] = NON_FINITE_ACTION, False
            actions = np.where(finite[:, None], actions, 0.0)
            targets[policy] = np.where(finite[:, None],
                                       joint_targets(meta, ref, t[policy], actions),
                                       targets[policy])
            last_action = actions
        targets[replay] = replayed[t[replay]]
        targets[statue] = hold[statue]
        sim.ctrl[:] = actuation.command(targets)
        due = pushed[push_step[pushed] == k]
        if due.size:
            sim.qvel[due, d:d + 2] += kick[due]
            heading = yaw_angle(sim.qpos[due, a + 3:a + 7])
            push_direction[due] = push_sector(per_start["push_angle"][index[due]] - heading)
        # a finished episode's robot stays where it ended
        faults = sim.step(np.flatnonzero(running | keep))
        after = np.minimum(t + 1, last)
        snap = batch_snapshot(setup, xpos, xquat, sim.qpos, sim.qvel, after)
        metrics.add_step(step_errors(snap), running)
        kinds = first_failure(failure_checks(snap, setup.thresholds))
        for i in np.flatnonzero(running):
            why = PHYSICS_FAULT if faults[i] else kinds[i]
            if why is not None:
                failure[i], running[i] = why, False
        if bar is not None:
            bar.update(n)
        if not (running | keep).any():
            break
    metrics.finish(np.arange(n), failure, start)
    for i in np.flatnonzero(push_direction >= 0):
        metrics.episodes[i]["push_direction"] = PUSH_DIRECTIONS[push_direction[i]]
    return [(group.cells[i], group.controllers[i], metrics.episodes[i]) for i in range(n)]


def run_policy(setup: Sim2SimSetup, obs: np.ndarray, time_step: np.ndarray) -> np.ndarray:
    """The policy's actions [N, J] for N observations, in chunks of the graph's batch size when it
    is fixed."""
    session = setup.session
    batch = session.get_inputs()[0].shape[0]
    chunk = batch if isinstance(batch, int) and batch > 0 else len(obs)
    out = []
    for begin in range(0, len(obs), chunk):
        part, steps = (
            obs[begin : begin + chunk],
            time_step[begin : begin + chunk].astype(np.float32)[:, None],
        )
        size = len(part)
        if size < chunk:  # a static batch: pad, then drop the padding
            part = np.concatenate([part, np.repeat(part[-1:], chunk - size, axis=0)])
            steps = np.concatenate([steps, np.repeat(steps[-1:], chunk - size, axis=0)])
        out.append(session.run(["actions"], {"obs": part, "time_step": steps})[0][:size])
    return np.concatenate(out).astype(np.float64)
