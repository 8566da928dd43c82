"""``primebot eval``: the deterministic policy in the run's own task, scored with the tracking metrics.

Two groups of episodes, both with the mean action, no exploration noise, no
observation noise and no randomisation: one from the motion's first frame
(``from_start``) and ``episodes`` from start frames drawn uniformly
(``sampled``, seeded). Each environment slot plays exactly one episode; an
episode ends as in training (a failed termination check, the time-out, or
the motion's last frame). Errors are taken after every policy step,
including the step that ends the episode, with ``evaluate.metrics`` (the
code sim2sim uses too), and written to eval.json with the configuration
they came from.

A task that tracks no motion scores its own episodes: when its ``TaskSpec``
has ``episode_metrics``, ``evaluate_run`` plays ``episodes`` episodes with
``evaluate.episodes`` (same deterministic policy, same task overrides) and writes
the task's metrics under ``episodes`` instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write_text
from ..errors import ConfigError
from ..registry import Registry
from ..rundir import EVAL_FILE, VIDEO_DIR
from ..sim.task import TRACKING_ENV_ATTRIBUTES, require_tracking_env
from ..train.config import TrainConfig
from ..train.policy import (
    EVAL_TASK_OVERRIDES,
    TrainedPolicy,
    load_trained_policy,
    make_eval_env,
    make_run_env,
    one_torch_thread,
)
from .episodes import PreResetTap, evaluate_episodes, play_each_slot_once
from .metrics import (
    PHYSICS_FAULT,
    EpisodeMetrics,
    FailureThresholds,
    TrackingSnapshot,
    failure_checks,
    first_failure,
    step_errors,
    summarise,
    threshold,
)


def thresholds_of(env: Any) -> FailureThresholds:
    """The env's termination thresholds in the shared metrics' terms (a disabled check never fails)."""
    given = getattr(env, "termination_thresholds", {}) or {}
    return FailureThresholds(
        anchor_height=threshold(given, "anchor_height", FailureThresholds.anchor_height),
        anchor_ori=threshold(given, "anchor_orientation", FailureThresholds.anchor_ori),
        ee_height=threshold(given, "end_effector_height", FailureThresholds.ee_height),
    )


def env_snapshot(env: Any, rows: np.ndarray) -> TrackingSnapshot:
    """Robot and reference of envs ``rows`` from the tracking env's state (copies)."""
    s, tm, ref = env.state, env.model_info, env.reference
    k, ee = tm.num_tracked, tm.end_effector_index
    root = slice(tm.indices.root_qpos_adr, tm.indices.root_qpos_adr + 3)
    t = s.time_steps[rows]
    return TrackingSnapshot(
        joint_pos=s.joint_pos[rows].copy(), joint_vel=s.joint_vel[rows].copy(),
        body_pos_w=s.all_body_pos_w[rows, :k].copy(), root_pos_w=env.sim.qpos[rows, root].copy(),
        ee_pos_w=s.all_body_pos_w[rows][:, ee].copy(), anchor_pos_w=s.anchor_pos_w[rows].copy(),
        anchor_quat_w=s.anchor_quat_w[rows].copy(),
        ref_joint_pos=s.ref_joint_pos[rows].copy(), ref_joint_vel=s.ref_joint_vel[rows].copy(),
        ref_body_pos_w=s.all_ref_body_pos_w[rows, :k].copy(), ref_root_pos_w=ref.root_pos_w[t].copy(),
        ref_ee_pos_w=s.all_ref_body_pos_w[rows][:, ee].copy(), ref_anchor_pos_w=s.ref_anchor_pos_w[rows].copy(),
        ref_anchor_quat_w=s.ref_anchor_quat_w[rows].copy(),
    )


class _FinalStateTap(PreResetTap):
    """Keeps the state of the envs the task is about to reset, taken before the reset.

    The task resets finished envs inside ``step``, so the state an episode
    ended in is gone by the time ``step`` returns. Before each reset of
    finished envs this keeps a snapshot for the metrics, and qpos and
    reference step for the video.
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.snapshots: dict[int, TrackingSnapshot] = {}
        self.final: dict[int, tuple[np.ndarray, int]] = {}

    def capture(self, ids: np.ndarray) -> None:
        if ids.size and self.env.episode_length[ids].max() > 0:  # not the initial reset
            snap = env_snapshot(self.env, ids)
            for row, i in enumerate(ids):
                self.snapshots[int(i)] = _row(snap, row)
                self.final[int(i)] = (self.env.sim.qpos[i].copy(), int(self.env.time_steps[i]))

    def clear(self) -> None:
        self.snapshots.clear()
        self.final.clear()


def _row(snap: TrackingSnapshot, row: int) -> TrackingSnapshot:
    return TrackingSnapshot(**{k: v[row:row + 1] for k, v in vars(snap).items()})


def _stack(snaps: list[TrackingSnapshot]) -> TrackingSnapshot:
    return TrackingSnapshot(**{k: np.concatenate([vars(s)[k] for s in snaps]) for k in vars(snaps[0])})


@dataclass
class EpisodeTrace:
    """Per-step robot qpos and reference step of one env slot (for videos)."""

    qpos: list
    time_steps: list


def tracked_body_names(env: Any) -> tuple[str, ...]:
    """Names of the tracking env's tracked bodies, in the order of the metrics' body axis."""
    tm = env.model_info
    return tuple(tm.indices.body_names[int(b) - 1] for b in tm.body_ids[: tm.num_tracked])


def episode_metrics_of(env: Any, num_envs: int) -> EpisodeMetrics:
    """Metrics for ``num_envs`` episodes of the tracking env, with its statue baseline and body names."""
    k = env.model_info.num_tracked
    return EpisodeMetrics(num_envs, env.step_dt, reference_body_pos=env.reference.body_pos_w[:, :k],
                          max_episode_steps=env.max_episode_length, body_names=tracked_body_names(env))


class VerdictProbe:
    """Training's stop rule (``runner.check_interval``): the deterministic policy on ``episodes`` episodes.

    A tracking env of the run's task as evaluation plays it (no randomisation,
    no observation noise), start frames drawn uniformly, one episode per slot;
    ``probe(policy)`` returns their summary with the verdict. Cheaper and
    noisier than ``primebot eval``; the evaluate and sim2sim stages still
    give the verdict that counts.
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    @classmethod
    def for_run(cls, registry: Registry, cfg: TrainConfig, motion: Any, *, episodes: int = 16,
                seed: int = 0) -> VerdictProbe | None:
        """The probe of a training configuration, or None when its task tracks no motion."""
        if motion is None:  # no reference (walk): nothing to build an env for
            return None
        env = make_eval_env(registry, cfg, motion, episodes, seed=seed, overrides={"sampling": {"mode": "uniform"}})
        if any(not hasattr(env, name) for name in TRACKING_ENV_ATTRIBUTES):
            env.close()
            return None
        return cls(env)

    def __call__(self, policy: Any) -> dict[str, Any]:
        metrics, _ = play_episodes(self.env, policy)
        return metrics.summary()

    def close(self) -> None:
        self.env.close()


def play_episodes(env: Any, policy: TrainedPolicy, trace_slot: int | None = None) -> tuple[EpisodeMetrics, EpisodeTrace]:
    """One episode per env slot with the deterministic policy; returns their metrics (and one slot's trace)."""
    n = env.num_envs
    thresholds = thresholds_of(env)
    metrics = episode_metrics_of(env, n)
    tap = _FinalStateTap(env)
    trace = EpisodeTrace([], [])
    starts: list[np.ndarray] = []

    def on_reset() -> None:
        starts.append(np.asarray(env.time_steps).copy())
        if trace_slot is not None:
            trace.qpos.append(env.sim.qpos[trace_slot].copy())
            trace.time_steps.append(int(env.time_steps[trace_slot]))

    def on_step(result: Any, running: np.ndarray, finished: np.ndarray) -> None:
        ids = np.arange(n)
        snap = env_snapshot(env, ids)
        if tap.snapshots:  # the finished envs' final state, not their fresh episode
            snap = _stack([tap.snapshots.get(int(i), _row(snap, int(i))) for i in ids])
        if trace_slot is not None and running[trace_slot]:
            qpos, step = tap.final.get(trace_slot, (env.sim.qpos[trace_slot].copy(), int(env.time_steps[trace_slot])))
            trace.qpos.append(qpos)
            trace.time_steps.append(step)
        metrics.add_step(step_errors(snap), running)
        if finished.size:
            reasons = first_failure(failure_checks(snap, thresholds))
            for i in finished:
                why = (reasons[i] or PHYSICS_FAULT) if result.terminated[i] else None
                metrics.finish([i], why, [starts[0][i]])

    play_each_slot_once(env, policy.act, tap, on_step, on_reset)
    return metrics, trace


def evaluate_run(
    registry: Registry,
    run_dir: str | Path,
    checkpoint: str | Path | None = None,
    *,
    episodes: int = 16,
    seed: int = 0,
    video: bool = False,
) -> dict[str, Any]:
    """Evaluate a run's policy and write ``eval.json`` in the run directory; returns its content."""
    if episodes < 0:
        raise ConfigError(f"--episodes must be ≥ 0, got {episodes}")
    t0 = time.perf_counter()
    run_dir = Path(run_dir)
    policy = load_trained_policy(run_dir, checkpoint)
    report: dict[str, Any] = {
        "run_dir": str(run_dir), "checkpoint": str(policy.checkpoint), "iteration": policy.iteration,
        "settings": {"policy": "deterministic (mean action)", "seed": seed, "task_overrides": EVAL_TASK_OVERRIDES},
        "config": policy.config.to_dict(),
    }
    episode_metrics = registry.get("tasks", policy.config.task).episode_metrics
    with one_torch_thread():
        if episode_metrics is not None:  # the task scores its own episodes (walk)
            _evaluate_task_episodes(registry, policy, episode_metrics, report, episodes, seed, video)
        else:
            _evaluate_tracking(registry, policy, report, episodes, seed, video)
    report["wall_s"] = time.perf_counter() - t0
    atomic_write_text(run_dir / EVAL_FILE, json.dumps(report, indent=2))
    return report


def _evaluate_tracking(registry: Registry, policy: TrainedPolicy, report: dict[str, Any], episodes: int, seed: int,
                       video: bool) -> None:
    """Adds the from-start, sampled and overall tracking metrics (and the ghost video) to ``report``."""
    report["settings"]["episodes_sampled"] = episodes
    all_records: list[dict] = []
    body_names: tuple[str, ...] | None = None
    groups = (("from_start", 1, "start"), ("sampled", episodes, "uniform"))
    for name, count, mode in groups:
        if count == 0:
            continue
        env = make_run_env(registry, policy, count, seed=seed, overrides={"sampling": {"mode": mode}})
        try:
            require_tracking_env(env, policy.config.task)
            trace_slot = 0 if (video and name == "from_start") else None
            metrics, trace = play_episodes(env, policy, trace_slot)
            body_names = metrics.body_names
            report["settings"].update(control_dt=env.step_dt, max_episode_steps=env.max_episode_length)
            if trace_slot is not None:
                video_path = _render(env, trace, policy.run_dir / VIDEO_DIR / "eval.mp4")
                if video_path is not None:
                    report["video"] = str(video_path)
        finally:
            env.close()
        report[name] = {**metrics.summary(), "episode_records": metrics.episodes}
        all_records += metrics.episodes
    report["overall"] = summarise(all_records, report["settings"].get("control_dt", 0.02), body_names)


def _evaluate_task_episodes(registry: Registry, policy: TrainedPolicy, episode_metrics: Any,
                            report: dict[str, Any], episodes: int, seed: int, video: bool) -> None:
    """Adds the task's metrics of ``episodes`` episodes (one per env slot) to ``report`` under ``episodes``."""
    if episodes < 1:
        raise ConfigError(f"--episodes must be ≥ 1 for task {policy.config.task!r}, got {episodes}")
    env = make_run_env(registry, policy, episodes, seed=seed)
    try:
        video_path = policy.run_dir / VIDEO_DIR / "eval.mp4" if video else None
        summary = evaluate_episodes(env, policy.act, episode_metrics, video=video_path)
        report["settings"].update(episodes=episodes, control_dt=env.step_dt,
                                  max_episode_steps=env.max_episode_length)
    finally:
        env.close()
    if "video" in summary:
        report["video"] = summary.pop("video")
    report["episodes"] = summary


def _render(env: Any, trace: EpisodeTrace, path: Path) -> Path | None:
    from ..render.ghost import reference_ghosts, render_ghost_video

    ref, idx = env.reference, env.model_info.indices
    ghosts = reference_ghosts(trace.qpos, trace.time_steps, idx, ref.root_pos_w, ref.root_quat_w, ref.joint_pos)
    return render_ghost_video(env.model_info.model, trace.qpos, ghosts, idx.root_body_id, path,
                              1.0 / env.step_dt, title="eval")
