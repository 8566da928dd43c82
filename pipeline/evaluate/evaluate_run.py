"""``primebot eval``: the deterministic policy in the run's own task, scored with the tracking
metrics.

Two groups of episodes, both with the mean action, no exploration noise, no
observation noise and no randomisation: one from the motion's first frame
(``from_start``) and ``episodes`` from start frames drawn uniformly
(``sampled``, seeded). Each environment slot plays exactly one episode; an
episode ends as in training (a failed termination check, the time-out, or
the motion's last frame). Errors are taken after every policy step,
including the step that ends the episode, with ``evaluate.metrics`` (the
code sim2sim uses too), and written to eval.json with the configuration
they came from.

The task gives what the metrics read of its environment through its
``TaskSpec.evaluation_view`` hook (an ``evaluate.view.TrackingView``), and
how it is played (no randomisation, where episodes start) through
``TaskSpec.play``; this module names no task. A task that tracks no motion scores its own episodes:
when its ``TaskSpec`` has ``episode_metrics``, ``evaluate_run`` plays ``episodes`` episodes with
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
from ..sim.task import merge_settings, not_a_tracking_task
from ..success_rates import ROBUST_SUCCESS
from ..train.provenance import identity_of
from ..train.train_config import TrainConfig
from ..train.trained_policy import (
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
    pooled_summary,
    step_errors,
    threshold,
)
from .push_direction import PUSH_DIRECTIONS, by_push_direction
from .view import TrackingView

EVAL_VIDEO = "eval.mp4"
"""In ``VIDEO_DIR``: the from-start episode with the reference as a ghost."""


def thresholds_of(env: Any) -> FailureThresholds:
    """The env's termination thresholds in the shared metrics' terms (a disabled check never
    fails)."""
    given = getattr(env, "termination_thresholds", {}) or {}
    return FailureThresholds(
        anchor_height=threshold(given, "anchor_height", FailureThresholds.anchor_height),
        anchor_ori=threshold(given, "anchor_orientation", FailureThresholds.anchor_ori),
        ee_height=threshold(given, "end_effector_height", FailureThresholds.ee_height),
    )


class _FinalStateTap(PreResetTap):
    """Keeps the state of the envs the task is about to reset, taken before the reset.

    The task resets finished envs inside ``step``, so the state an episode
    ended in is gone by the time ``step`` returns. Before each reset of
    finished envs this keeps a snapshot for the metrics, and qpos and
    reference step for the video.
    """

    def __init__(self, view: TrackingView) -> None:
        super().__init__(view.env)
        self.view = view
        self.snapshots: dict[int, TrackingSnapshot] = {}
        self.final: dict[int, tuple[np.ndarray, int]] = {}

    def capture(self, ids: np.ndarray) -> None:
        if ids.size and self.view.episode_steps()[ids].max() > 0:  # not the initial reset
            snap = self.view.snapshot(ids)
            steps = self.view.reference_steps()
            for row, i in enumerate(ids):
                self.snapshots[int(i)] = _row(snap, row)
                self.final[int(i)] = (self.env.sim.qpos[i].copy(), int(steps[i]))

    def clear(self) -> None:
        self.snapshots.clear()
        self.final.clear()


def _row(snap: TrackingSnapshot, row: int) -> TrackingSnapshot:
    return TrackingSnapshot(**{k: v[row:row + 1] for k, v in vars(snap).items()})


def _stack(snaps: list[TrackingSnapshot]) -> TrackingSnapshot:
    return TrackingSnapshot(**{k: np.concatenate([vars(s)[k] for s in snaps])
                               for k in vars(snaps[0])})


@dataclass
class EpisodeTrace:
    """Per-step robot qpos and reference step of one env slot (for videos)."""

    qpos: list
    time_steps: list


def episode_metrics_of(view: TrackingView, num_envs: int) -> EpisodeMetrics:
    """Metrics for ``num_envs`` episodes of the viewed env, with its statue baseline and body
    names."""
    return EpisodeMetrics(num_envs, view.env.step_dt, reference_body_pos=view.reference_body_pos,
                          max_episode_steps=view.env.max_episode_length, body_names=view.body_names)


class VerdictProbe:
    """Training's stop rule (``runner.check_interval``): the deterministic policy on ``episodes``
    episodes.

    A tracking env of the run's task as evaluation plays it (no randomisation,
    no observation noise), start frames spread over the motion (``TaskSpec.play.spread``),
    one episode per slot, and, as in eval and sim2sim, one more episode from the
    motion's first frame (``TaskSpec.play.from_start``), played as the env's last
    slot where the task declares ``start_in_last_slot``; ``probe(policy)`` returns their
    pooled summary with the verdict (``evaluate.metrics.pooled_summary``:
    the first-frame episode must reach its end). Cheaper and noisier than
    ``primebot eval``; the evaluate and sim2sim stages still give the
    verdict that counts.

    When the task declares ``TaskSpec.play.robustness``, a second env
    plays ``robust_episodes`` episodes under them (tracking: the stress
    test's standard push, once per 4-second episode); the summary then carries ``robust`` (their
    success rate at least ``ROBUST_SUCCESS``), ``robust_success_rate`` and ``robust_episodes``,
    which training's best check and stop rule read (``train.verdict_checks``), and
    ``robust_by_direction``, their success by where the kick pointed (``push_direction``; empty
    where the view does not say), which train.csv logs (``verdict/robust_<side>``).
    The stress stage still gives the robustness verdict that counts.
    """

    def __init__(self, view: TrackingView, perturbed: TrackingView | None = None,
                 first: TrackingView | None = None, first_slot: int | None = None) -> None:
        self.view, self.perturbed, self.first = view, perturbed, first
        self.first_slot = first_slot
        """The slot of ``view``'s env whose episode starts at the first frame (the task's
        ``PlaySettings.start_in_last_slot``), else None (``first`` plays it)."""
        self.env = view.env

    @classmethod
    def for_run(cls, registry: Registry, cfg: TrainConfig, motion: Any, *, episodes: int = 16,
                robust_episodes: int = 32, seed: int = 0) -> VerdictProbe | None:
        """The probe of a training configuration, or None when its task tracks no motion.
        ``robust_episodes``: how many episodes the robustness check plays (more than the nominal
        ones: a success rate near ``ROBUST_SUCCESS`` needs them)."""
        spec = registry.get("tasks", cfg.task)
        if motion is None or spec.evaluation_view is None:  # no reference (walk): nothing to track
            return None
        spread = spec.play.spread
        first = first_slot = None
        if spec.play.start_in_last_slot is not None:
            # the first-frame episode as one more slot: a 1-env batch cost about a fifth of a check
            env = make_eval_env(registry, cfg, motion, episodes + 1, seed=seed,
                                overrides=merge_settings(spread, spec.play.start_in_last_slot))
            first_slot = episodes
        else:
            env = make_eval_env(registry, cfg, motion, episodes, seed=seed, overrides=spread)
            first = spec.evaluation_view(make_eval_env(registry, cfg, motion, 1, seed=seed,
                                                       overrides=spec.play.from_start))
        perturbed = None
        if spec.play.robustness is not None:
            overrides = merge_settings(spread, spec.play.robustness)
            perturbed = spec.evaluation_view(make_eval_env(registry, cfg, motion, robust_episodes,
                                                           seed=seed + 1,
                                                           overrides=overrides))
        return cls(spec.evaluation_view(env), perturbed, first, first_slot)

    def __call__(self, policy: Any) -> dict[str, Any]:
        metrics, _ = play_episodes(self.view, policy)
        slots = metrics.slots
        groups = {"sampled": {"episode_records": [
            r for r, slot in zip(metrics.episodes, slots, strict=True) if slot != self.first_slot]}}
        if self.first_slot is not None:
            groups["from_start"] = {"episode_records": [
                r for r, slot in zip(metrics.episodes, slots, strict=True)
                if slot == self.first_slot]}
        elif self.first is not None:
            first, _ = play_episodes(self.first, policy)
            groups["from_start"] = {"episode_records": first.episodes}
        summary = pooled_summary(groups, metrics.step_dt, metrics.body_names)
        if self.perturbed is not None:
            pushed = play_episodes(self.perturbed, policy)[0]
            success = pushed.summary().get("success_rate") or 0.0
            summary.update(robust_success_rate=success, robust=success >= ROBUST_SUCCESS,
                           robust_episodes=self.perturbed.env.num_envs,
                           robust_by_direction=by_push_direction(pushed.episodes))
        return summary

    def confirm_robust(self, policy: Any, sets: int = 4) -> tuple[int, int] | None:
        """Successes and episodes of ``sets`` fresh sets of the perturbed episodes (4 × 32: the 128
        of a stress test's confirmed standard cell), which training's stop rule reads before it
        stops (``train.verdict_checks``); None when the probe measures no robustness."""
        if self.perturbed is None:
            return None
        successes = episodes = 0
        for _ in range(sets):
            records = play_episodes(self.perturbed, policy)[0].episodes
            successes += sum(r.get("failure") is None for r in records)
            episodes += len(records)
        return successes, episodes

    def close(self) -> None:
        self.env.close()
        for view in (self.perturbed, self.first):
            if view is not None:
                view.env.close()


def play_episodes(view: TrackingView, policy: TrainedPolicy,
                  trace_slot: int | None = None) -> tuple[EpisodeMetrics, EpisodeTrace]:
    """One episode per env slot of ``view.env`` with the deterministic policy; returns their metrics
    (and one slot's trace)."""
    env = view.env
    n = env.num_envs
    thresholds = thresholds_of(env)
    metrics = episode_metrics_of(view, n)
    tap = _FinalStateTap(view)
    trace = EpisodeTrace([], [])
    starts: list[np.ndarray] = []

    def on_reset() -> None:
        starts.append(np.asarray(view.reference_steps()).copy())
        if trace_slot is not None:
            trace.qpos.append(env.sim.qpos[trace_slot].copy())
            trace.time_steps.append(int(view.reference_steps()[trace_slot]))

    def on_step(result: Any, running: np.ndarray, finished: np.ndarray) -> None:
        ids = np.arange(n)
        snap = view.snapshot(ids)
        if tap.snapshots:  # the finished envs' final state, not their fresh episode
            snap = _stack([tap.snapshots.get(int(i), _row(snap, int(i))) for i in ids])
        if trace_slot is not None and running[trace_slot]:
            qpos, step = tap.final.get(trace_slot, (env.sim.qpos[trace_slot].copy(),
                                                    int(view.reference_steps()[trace_slot])))
            trace.qpos.append(qpos)
            trace.time_steps.append(step)
        metrics.add_step(step_errors(snap), running)
        if finished.size:
            reasons = first_failure(failure_checks(snap, thresholds))
            sides = None if view.push_sides is None else view.push_sides()
            for i in finished:
                why = (reasons[i] or PHYSICS_FAULT) if result.terminated[i] else None
                metrics.finish([i], why, [starts[0][i]])
                if sides is not None and sides[i] >= 0:
                    metrics.episodes[-1]["push_direction"] = PUSH_DIRECTIONS[sides[i]]

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
    spec = registry.get("tasks", policy.config.task)
    report: dict[str, Any] = {
        "run_dir": str(run_dir), "checkpoint": str(policy.checkpoint),
        "iteration": policy.iteration,
        # what the results were made from (train/provenance.py)
        "policy": identity_of(policy).to_dict(),
        "settings": {"policy": "deterministic (mean action)", "seed": seed,
                     "task_overrides": spec.play.evaluation},
        "config": policy.config.to_dict(),
    }
    with one_torch_thread():
        if spec.episode_metrics is not None:  # the task scores its own episodes (walk)
            _evaluate_task_episodes(registry, policy, spec.episode_metrics, report, episodes, seed,
                                    video)
        elif spec.evaluation_view is not None:
            _evaluate_tracking(registry, policy, report, episodes, seed, video)
        else:
            raise not_a_tracking_task(spec.name)
    report["wall_s"] = time.perf_counter() - t0
    atomic_write_text(run_dir / EVAL_FILE, json.dumps(report, indent=2))
    if "video" not in report:  # an earlier evaluation's video would otherwise pass for this one's
        (run_dir / VIDEO_DIR / EVAL_VIDEO).unlink(missing_ok=True)
    return report


def _evaluate_tracking(registry: Registry, policy: TrainedPolicy, report: dict[str, Any],
                       episodes: int, seed: int,
                       video: bool) -> None:
    """Adds the from-start, sampled and overall tracking metrics (and the ghost video) to
    ``report``."""
    report["settings"]["episodes_sampled"] = episodes
    body_names: tuple[str, ...] | None = None
    spec = registry.get("tasks", policy.config.task)
    groups = (("from_start", 1, spec.play.from_start), ("sampled", episodes, spec.play.spread))
    for name, count, starts in groups:
        if count == 0:
            continue
        env = make_run_env(registry, policy, count, seed=seed, overrides=starts)
        try:
            view = spec.evaluation_view(env)
            trace_slot = 0 if (video and name == "from_start") else None
            metrics, trace = play_episodes(view, policy, trace_slot)
            body_names = metrics.body_names
            report["settings"].update(control_dt=env.step_dt,
                                      max_episode_steps=env.max_episode_length)
            if trace_slot is not None:
                video_path = view.render(trace.qpos, trace.time_steps,
                                         policy.run_dir / VIDEO_DIR / EVAL_VIDEO)
                if video_path is not None:
                    report["video"] = str(video_path)
        finally:
            env.close()
        report[name] = {**metrics.summary(), "episode_records": metrics.episodes}
    report["overall"] = pooled_summary(
        {name: report[name] for name, _, _ in groups if name in report},
        report["settings"].get("control_dt", 0.02), body_names)


def _evaluate_task_episodes(registry: Registry, policy: TrainedPolicy, episode_metrics: Any,
                            report: dict[str, Any], episodes: int, seed: int, video: bool) -> None:
    """Adds the task's metrics of ``episodes`` episodes (one per env slot) to ``report`` under
    ``episodes``."""
    if episodes < 1:
        raise ConfigError(f"--episodes must be ≥ 1 for task {policy.config.task!r}, got {episodes}")
    env = make_run_env(registry, policy, episodes, seed=seed)
    try:
        video_path = policy.run_dir / VIDEO_DIR / EVAL_VIDEO if video else None
        summary = evaluate_episodes(env, policy.act, episode_metrics, video=video_path)
        report["settings"].update(episodes=episodes, control_dt=env.step_dt,
                                  max_episode_steps=env.max_episode_length)
    finally:
        env.close()
    if "video" in summary:
        report["video"] = summary.pop("video")
    report["episodes"] = summary
