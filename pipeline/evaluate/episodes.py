"""Evaluation of tasks that score their own episodes (``TaskSpec.episode_metrics``), e.g. walk.

The core plays one episode per environment slot with the deterministic
policy and records what every MuJoCo task has: the return, the length,
whether the episode ended by a failure (``terminated``) or by its time limit,
and the generalised positions it started and ended in. Tasks reset finished
envs inside ``step``, so the end state is taken just before that reset
(``PreResetTap``). The task turns the records into its metrics (a walker's
speed and distance, say); ``evaluate_episodes`` returns them for eval.json
and, with ``video``, renders one slot's episode through the camera the robot
names in ``extra["video_camera"]`` (else a camera trailing the root).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from ..errors import ConfigError
from ..sim.task import EpisodeRecord


class PreResetTap:
    """Shows ``capture(ids)`` the state of envs the task is about to reset, before the reset.

    Wraps the env's reset of finished envs (``_reset_envs(ids)``, which the
    built-in tasks call from ``step`` and ``reset``) until ``close``.
    """

    def __init__(self, env: Any) -> None:
        if not callable(getattr(env, "_reset_envs", None)):
            raise ConfigError(
                f"{type(env).__name__} has no _reset_envs(ids): eval cannot see the state episodes "
                "end in",
                fix="the task's env must reset finished envs through _reset_envs (or offer a "
                    "pre-reset hook)",
            )
        self.env = env
        self._original = env._reset_envs
        env._reset_envs = self._reset_envs

    def capture(self, ids: np.ndarray) -> None:
        """Called with the ids about to be reset (override)."""

    def clear(self) -> None:
        """Forget what the last step captured (override)."""

    def _reset_envs(self, ids: np.ndarray) -> None:
        self.capture(np.asarray(ids))
        self._original(ids)

    def close(self) -> None:
        self.env._reset_envs = self._original


class _FinalQpos(PreResetTap):
    """Keeps the qpos of every env reset after ``armed`` is set (the first reset is the start)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.armed = False
        self.final: dict[int, np.ndarray] = {}

    def capture(self, ids: np.ndarray) -> None:
        if self.armed:
            for i in ids:
                self.final[int(i)] = self.env.sim.qpos[i].copy()

    def clear(self) -> None:
        self.final.clear()


def play_each_slot_once(
    env: Any,
    act: Callable[[np.ndarray], np.ndarray],
    tap: PreResetTap,
    on_step: Callable[[Any, np.ndarray, np.ndarray], None],
    on_reset: Callable[[], None] = lambda: None,
) -> None:
    """Step ``env`` with ``act`` until every env slot has finished one episode, then close ``tap``.

    ``on_reset()`` runs after the first reset; ``on_step(result, running, finished)`` after every
    step, with the slots still playing before that step and those whose episode that step ended (the
    tap holds the state they ended in, taken before the task reset them).
    """
    try:
        obs, _ = env.reset()
        on_reset()
        running = np.ones(env.num_envs, bool)
        while running.any():
            tap.clear()
            result = env.step(act(obs))
            obs = result.obs
            finished = np.flatnonzero((result.terminated | result.truncated) & running)
            on_step(result, running, finished)
            running[finished] = False
    finally:
        tap.close()


def play_episodes(
    env: Any, act: Callable[[np.ndarray], np.ndarray], trace_slot: int | None = None
) -> tuple[list[EpisodeRecord], list[np.ndarray]]:
    """One episode per env slot with ``act``; returns the records (slot order) and ``trace_slot``'s
    qpos per step.

    The trace starts with the reset state and ends with the state the episode
    ended in (not the fresh episode the task resets it to).
    """
    n = env.num_envs
    tap = _FinalQpos(env)
    trace: list[np.ndarray] = []
    records: dict[int, EpisodeRecord] = {}
    returns = np.zeros(n)
    lengths = np.zeros(n, dtype=np.int64)
    start: list[np.ndarray] = []

    def on_reset() -> None:
        tap.armed = True
        start.append(env.sim.qpos.copy())
        if trace_slot is not None:
            trace.append(env.sim.qpos[trace_slot].copy())

    def on_step(result: Any, running: np.ndarray, finished: np.ndarray) -> None:
        returns[running] += result.reward[running]
        lengths[running] += 1
        if trace_slot is not None and running[trace_slot]:
            trace.append(tap.final.get(trace_slot, env.sim.qpos[trace_slot]).copy())
        for i in finished:
            records[int(i)] = EpisodeRecord(
                slot=int(i), episode_return=float(returns[i]), length=int(lengths[i]),
                terminated=bool(result.terminated[i]), start_qpos=start[0][i],
                final_qpos=tap.final.get(int(i), env.sim.qpos[i]).copy(),
            )

    play_each_slot_once(env, act, tap, on_step, on_reset)
    return [records[i] for i in range(n)], trace


def evaluate_episodes(
    env: Any,
    act: Callable[[np.ndarray], np.ndarray],
    episode_metrics: Callable[[Any, list[EpisodeRecord]], dict[str, Any]],
    *,
    video: Path | None = None,
) -> dict[str, Any]:
    """``episode_metrics`` of one episode per env slot, with ``episode_records``; ``video`` renders
    slot 0.

    The video's path lands under ``"video"`` when it was written (``None`` without OpenGL).
    """
    records, trace = play_episodes(env, act, trace_slot=0 if video is not None else None)
    summary = {**episode_metrics(env, records), "episode_records": [r.to_json() for r in records]}
    if video is not None:
        written = render_episode(env, trace, video)
        if written is not None:
            summary["video"] = str(written)
    return summary


def render_episode(env: Any, trace: list[np.ndarray], path: Path) -> Path | None:
    """An H.264 video of the qpos ``trace`` at the control rate (``None``, logged, without
    OpenGL)."""
    from ..render.ghost import render_ghost_video

    robot = env.robot
    model = env.sim.model
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, robot.root_body or robot.anchor_body)
    return render_ghost_video(model, trace, None, root, path, 1.0 / env.step_dt,
                              title=f"eval {robot.name}",
                              camera_name=robot.extra.get("video_camera"))
