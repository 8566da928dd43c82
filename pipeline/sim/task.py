"""The task spec: how a registered task builds its vectorised environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from .env import VecEnv

EXPORT_MOTION_TRACKING = "motion_tracking"
"""ONNX with the reference motion inside (docs/architecture.md §7): inputs obs, time_step; outputs actions + reference."""
ACTION_OFFSET_DEFAULT = "default_joint_pos"
ACTION_OFFSET_REFERENCE = "reference_joint_pos"
ACTION_TARGET_FORMULA = {
    ACTION_OFFSET_DEFAULT: "joint_pos_target = default_joint_pos + action_scale * actions",
    ACTION_OFFSET_REFERENCE: "joint_pos_target = joint_pos + action_scale * actions "
                             "(joint_pos: the ONNX's reference output for the same time_step)",
}
"""What an action means (ONNX metadata ``action_offset``; docs/deploy.md): the joint targets a policy's
actions stand for. A file without the key was trained with ``default_joint_pos``."""
EXPORT_POLICY = "policy"
"""ONNX of the policy alone: input obs, output actions (tasks that track no motion, e.g. walk)."""
EXPORT_KINDS = (EXPORT_MOTION_TRACKING, EXPORT_POLICY)
TRACKING_ENV_ATTRIBUTES = ("state", "reference", "model_info", "observations", "time_steps")
"""What the environment of a ``motion_tracking`` task exposes beyond ``VecEnv``, read by evaluation and
export (the built-in task's ``TrackingEnv``): ``state`` (robot and reference of every env: joint, body and
anchor poses), ``reference`` (the motion on the robot, per step), ``model_info`` (model, indices, tracked
bodies, end effectors), ``observations`` (the observation terms, names and sizes) and ``time_steps`` (each
env's reference step)."""


@dataclass
class EpisodeRecord:
    """One finished episode of one env slot."""

    slot: int
    episode_return: float
    """Sum of the task's rewards (weights and dt applied, as in training's ``episode_return``)."""
    length: int
    """Control steps played, including the one that ended the episode."""
    terminated: bool
    """Ended by a failure (a fall); ``False``: reached the time limit."""
    start_qpos: np.ndarray
    final_qpos: np.ndarray
    """qpos at the end of the last step, before the task's reset."""

    def to_json(self) -> dict[str, Any]:
        """The scalar fields (eval.json's ``episode_records``)."""
        return {"slot": self.slot, "return": self.episode_return, "length": self.length,
                "terminated": self.terminated}


@dataclass(frozen=True)
class TaskSpec:
    """A task as registered through ``register_tasks``."""

    name: str
    make_env: Callable[..., VecEnv]
    """Builds the environment; keyword arguments are defined by the task family."""
    default_config: Mapping[str, Any] = field(default_factory=dict)
    """Task settings (YAML-able) that ``--set task.key=value`` may override."""
    description: str = ""
    needs_motion: bool = True
    """Whether the task tracks a reference motion (``primebot train MOTION``)."""
    default_robot: str | None = None
    open_config_sections: tuple[str, ...] = ()
    """Config sections whose keys are not fixed by ``default_config`` (e.g. ``rewards``:
    any registered reward term may be added as ``task.rewards.<term>={weight: ..}``)."""
    episode_metrics: Callable[[VecEnv, Sequence[EpisodeRecord]], dict[str, Any]] | None = None
    """How ``primebot eval`` scores this task: a summary of episodes the deterministic policy played
    (``evaluate.episodes``), written to eval.json. ``None``: the motion-tracking metrics."""
    verdict_probe: Callable[..., Any] | None = None
    """Training's stop rule for this task (``runner.check_interval``): ``verdict_probe(registry, cfg, motion,
    seed=…)`` returns a probe (``probe(policy)`` → the summary with the verdict, ``probe.close()``) or None.
    ``None``: training never checks the task's verdict (docs/architecture.md §3, §9)."""
    export_kind: str = EXPORT_MOTION_TRACKING
    """What ``primebot export`` writes: ``motion_tracking`` (inputs obs and time_step, outputs actions and
    the reference motion; docs/architecture.md §7, replayed by sim2sim) or ``policy`` (obs → actions only)."""

    def __post_init__(self) -> None:
        if self.export_kind not in EXPORT_KINDS:
            raise ConfigError(f"task {self.name!r}: export_kind {self.export_kind!r} is unknown",
                              fix=f"use one of: {', '.join(EXPORT_KINDS)}")



def require_tracking_env(env: Any, task: str) -> None:
    """Raise ``ConfigError`` unless ``env`` exposes what motion-tracking evaluation and export read."""
    missing = [name for name in TRACKING_ENV_ATTRIBUTES if not hasattr(env, name)]
    if missing:
        raise ConfigError(
            f"task {task!r} is not a motion-tracking task (its environment has no {', '.join(missing)}); "
            "eval, export and sim2sim measure and ship reference tracking",
            fix="train with --task tracking (the default) to get a deployable tracking policy",
        )
