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
START_STEP = "start"
"""``TaskSpec.start_overrides`` key: every episode starts where the task's first episode does (the motion's
first frame)."""
START_SPREAD = "spread"
"""``TaskSpec.start_overrides`` key: episodes start spread out (uniform start frames, reset noise): eval's
sampled group, training's verdict probe and the observations export checks parity on."""


def metadata_threshold(value: float | None) -> str | float:
    """A threshold as ONNX metadata writes it: the number, or ``"none"`` for a check that is off."""
    return "none" if value is None else float(value)


@dataclass
class TaskExport:
    """What a task's ``export_metadata`` hook gives ``primebot export`` (docs/plugin_hooks.md)."""

    observation_terms: Sequence[tuple[str, int]]
    """The policy observation as consecutive ``(name, size)`` terms (``observation_names``/``_sizes``)."""
    metadata: dict[str, Any]
    """The task's ONNX metadata keys, in order; they follow the robot keys and may replace one of them
    (e.g. ``action_scale``). The run keys (task, checkpoint, …) follow them."""
    motion: dict[str, np.ndarray] | None = None
    """The reference motion put inside the graph (``motion_tracking``: arrays per control step), else None."""
    reference_steps: Callable[[], np.ndarray] | None = None
    """Each env's reference step now, [N] (the graph's ``time_step`` input when export checks parity on
    recorded observations); None for a graph without one."""


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
    motion_settings: tuple[str, ...] = ()
    """The sections (or dotted keys) of ``default_config`` that a motion file's own ``training_overrides`` may
    set (docs/architecture.md §2): what a motion legitimately needs, such as its rewards, terminations and
    randomisation. Anything else (the run's size, device, task or robot) only the user sets."""
    episode_metrics: Callable[[VecEnv, Sequence[EpisodeRecord]], dict[str, Any]] | None = None
    """How ``primebot eval`` scores this task: a summary of episodes the deterministic policy played
    (``evaluate.episodes``), written to eval.json. ``None``: the motion-tracking metrics, read through
    ``evaluation_view``."""
    verdict_probe: Callable[..., Any] | None = None
    """Training's stop rule for this task (``runner.check_interval``): ``verdict_probe(registry, cfg, motion,
    seed=…)`` returns a probe (``probe(policy)`` → the summary with the verdict, ``probe.close()``) or None.
    ``None``: training never checks the task's verdict (docs/architecture.md §3, §9)."""
    export_kind: str = EXPORT_MOTION_TRACKING
    """What ``primebot export`` writes: ``motion_tracking`` (inputs obs and time_step, outputs actions and
    the reference motion; docs/architecture.md §7, replayed by sim2sim) or ``policy`` (obs → actions only)."""
    evaluation_view: Callable[[VecEnv], Any] | None = None
    """How motion-tracking evaluation (``primebot eval``, training's verdict probe) reads this task's env:
    ``evaluation_view(env)`` returns an ``evaluate.view.TrackingView`` (robot and reference snapshots, the
    reference's tracked bodies, the ghost video). ``None`` and no ``episode_metrics``: eval refuses the task."""
    export_metadata: Callable[..., TaskExport] | None = None
    """``export_metadata(env, motion, *, tracked_bodies_only)`` → ``TaskExport``: the task's observation
    layout, ONNX metadata keys and (``motion_tracking``) the motion inside the graph. ``None``: a ``policy``
    export gets the generic keys (``export.metadata.policy_metadata``); a ``motion_tracking`` one is refused."""
    start_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Task config overrides that choose where episodes start, by ``START_STEP`` / ``START_SPREAD``
    (tracking: ``sampling.mode``); a key not given: the task's own config."""
    robustness_overrides: Mapping[str, Any] | None = None
    """Task config overrides under which training's verdict checks also measure robustness (tracking: its
    randomisation at full strength), merged over evaluation's; ``None``: the checks judge tracking only."""

    def __post_init__(self) -> None:
        if self.export_kind not in EXPORT_KINDS:
            raise ConfigError(f"task {self.name!r}: export_kind {self.export_kind!r} is unknown",
                              fix=f"use one of: {', '.join(EXPORT_KINDS)}")


def not_a_tracking_task(task: str) -> ConfigError:
    """The error for evaluating or exporting, as motion tracking, a task without the hooks for it."""
    return ConfigError(
        f"task {task!r} is not a motion-tracking task (its TaskSpec has no evaluation_view / export_metadata); "
        "eval, export and sim2sim measure and ship reference tracking",
        fix="train with --task tracking (the default) to get a deployable tracking policy",
    )
