"""The task spec: how a registered task builds its vectorised environment."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, MotionError
from .env import VecEnv

EXPORT_MOTION_TRACKING = "motion_tracking"
"""ONNX with the reference motion inside (docs/architecture.md §7): inputs obs, time_step; outputs
actions + reference."""
ACTION_OFFSET_DEFAULT = "default_joint_pos"
ACTION_OFFSET_REFERENCE = "reference_joint_pos"
ACTION_OFFSET_SERVO_TARGET = "reference_servo_target"
ACTION_TARGET_FORMULA = {
    ACTION_OFFSET_DEFAULT: "joint_pos_target = default_joint_pos + action_scale * actions",
    ACTION_OFFSET_REFERENCE: "joint_pos_target = joint_pos + action_scale * actions "
                             "(joint_pos: the ONNX's reference output for the same time_step)",
    ACTION_OFFSET_SERVO_TARGET: "joint_pos_target = servo_target + action_scale * actions "
                                "(servo_target: the ONNX's output for the same time_step, the "
                                "reference joint_pos plus each servo's feedforward)",
}
REFERENCE_OFFSETS = {ACTION_OFFSET_REFERENCE: "joint_pos",
                     ACTION_OFFSET_SERVO_TARGET: "servo_target"}
"""The offsets read from the reference, and the ONNX output each reads (a zero action follows the
motion)."""
"""What an action means (ONNX metadata ``action_offset``; docs/deploy.md): the joint targets a
policy's actions stand for. A file without the key was trained with ``default_joint_pos``."""
EXPORT_POLICY = "policy"
"""ONNX of the policy alone: input obs, output actions (tasks that track no motion, e.g. walk)."""
EXPORT_KINDS = (EXPORT_MOTION_TRACKING, EXPORT_POLICY)
def metadata_threshold(value: float | None) -> str | float:
    """A threshold as ONNX metadata writes it: the number, or ``"none"`` for a check that is off."""
    return "none" if value is None else float(value)


@dataclass
class TaskExport:
    """What a task's ``export_metadata`` hook gives ``primebot export`` (docs/plugin_hooks.md)."""

    observation_terms: Sequence[tuple[str, int]]
    """The policy observation as consecutive ``(name, size)`` terms
    (``observation_names``/``_sizes``)."""
    metadata: dict[str, Any]
    """The task's ONNX metadata keys, in order; they follow the robot keys and may replace one of
    them (e.g. ``action_scale``). The run keys (task, checkpoint, …) follow them."""
    motion: dict[str, np.ndarray] | None = None
    """The reference motion put inside the graph (``motion_tracking``: arrays per control step),
    else None."""
    reference_steps: Callable[[], np.ndarray] | None = None
    """Each env's reference step now, [N] (the graph's ``time_step`` input when export checks parity
    on recorded observations); None for a graph without one."""
    observation_history: Sequence[int] | None = None
    """Per term, the steps of its values the observation holds (0: the current alone; ONNX
    ``observation_terms_history_length``); None: no term has a history."""


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
    """The sections (or dotted keys) of ``default_config`` that a motion file's own
    ``training_overrides`` may set (docs/architecture.md §2): what a motion legitimately needs, such
    as its rewards, terminations and randomisation. Anything else (the run's size, device, task or
    robot) only the user sets."""
    episode_metrics: Callable[[VecEnv, Sequence[EpisodeRecord]], dict[str, Any]] | None = None
    """How ``primebot eval`` scores this task: a summary of episodes the deterministic policy played
    (``evaluate.episodes``), written to eval.json. ``None``: the motion-tracking metrics, read
    through ``evaluation_view``."""
    verdict_probe: Callable[..., Any] | None = None
    """Training's stop rule for this task (``runner.check_interval``): ``verdict_probe(registry,
    cfg, motion, seed=…)`` returns a probe (``probe(policy)`` → the summary with the verdict,
    ``probe.close()``) or None. ``None``: training never checks the task's verdict
    (docs/architecture.md §3, §9)."""
    export_kind: str = EXPORT_MOTION_TRACKING
    """What ``primebot export`` writes: ``motion_tracking`` (inputs obs and time_step, outputs
    actions and the reference motion; docs/architecture.md §7, replayed by sim2sim) or ``policy``
    (obs → actions only)."""
    evaluation_view: Callable[[VecEnv], Any] | None = None
    """How motion-tracking evaluation (``primebot eval``, training's verdict probe) reads this
    task's env: ``evaluation_view(env)`` returns an ``evaluate.view.TrackingView`` (robot and
    reference snapshots, the reference's tracked bodies, the ghost video). ``None`` and no
    ``episode_metrics``: eval refuses the task."""
    export_metadata: Callable[..., TaskExport] | None = None
    """``export_metadata(env, motion, *, tracked_bodies_only)`` → ``TaskExport``: the task's
    observation layout, ONNX metadata keys and (``motion_tracking``) the motion inside the graph.
    ``None``: a ``policy`` export gets the generic keys (``export.metadata.policy_metadata``); a
    ``motion_tracking`` one is refused."""
    play: PlaySettings = field(default_factory=lambda: PlaySettings())
    """How the task is played to judge a trained policy rather than train it (``PlaySettings``)."""
    trainer_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The task's own trainer defaults by section (``train``: num_envs, iterations; ``ppo``,
    ``policy``, ``runner``): they replace the trainer's defaults for this task (docs/training.md,
    "Settings")."""
    setting_choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Task settings that take one of a few words (``"actions.offset": ("reference", "default")``),
    checked with the trainer's where every setting is checked (``train.train_config``)."""
    config_version: int = 1
    """The version of what ``default_config``'s settings mean. A task raises it when a setting
    that a run records is read differently from then on (a range now in other units, a key
    renamed): a run records the version it trained under (args.yaml ``run.task_config_version``;
    one that records none was written under 1), and ``--resume`` refuses a run of another version
    instead of continuing it under settings that now mean something else."""

    def __post_init__(self) -> None:
        if self.export_kind not in EXPORT_KINDS:
            raise ConfigError(f"task {self.name!r}: export_kind {self.export_kind!r} is unknown",
                              fix=f"use one of: {', '.join(EXPORT_KINDS)}")

    def settings(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The task's settings: ``default_config`` with ``overrides`` merged in
        (``merge_settings``)."""
        return merge_settings(self.default_config, overrides, self.open_config_sections,
                              f"task {self.name}")

    def open_loop_env(self, robot: Any, motion: Any, registry: Any,
                      *extra: Mapping[str, Any] | None, where: str = "") -> VecEnv:
        """One env replaying ``motion`` on ``robot`` with every action zero, for as long as the
        motion lasts: ``play.open_loop`` over ``evaluation``, then each of ``extra`` (``primebot
        motion record`` and ``pd-replay``). A task without the replay is a ``MotionError``
        (``where``, the file asked for, heads it)."""
        if self.play.open_loop is None:
            raise MotionError(f"{where}task {self.name!r} declares no open-loop replay "
                              "(play.open_loop)", fix="see docs/plugin_hooks.md (PlaySettings)")
        # the whole motion, however long (a task's time-out would cut a long get-up at 10 s)
        config = self.play.config({}, self.play.open_loop,
                                  {"episode_length_s": motion.duration + 1.0}, *extra)
        return self.make_env(robot=robot, motion=motion, num_envs=1, seed=0, config=config,
                             registry=registry, num_threads=1)

    def check(self) -> None:
        """Refuse play settings that name a setting the task does not have (run at registration)."""
        for what, overrides in self.play.named():
            try:
                self.settings(overrides)
            except ConfigError as exc:
                raise ValueError(
                    f"its play settings ({what}) do not fit its config: {exc}"
                ) from None
        unknown = sorted(set(self.trainer_defaults) - set(TRAINER_SECTIONS))
        if unknown:
            raise ValueError(f"trainer_defaults has unknown section(s) {', '.join(unknown)}; "
                             f"known: {', '.join(TRAINER_SECTIONS)}")


TRAINER_SECTIONS = ("train", "ppo", "policy", "runner")
"""Sections of ``TaskSpec.trainer_defaults``: ``train`` sets top-level fields (num_envs,
iterations)."""


@dataclass(frozen=True)
class PlaySettings:
    """Task settings a trained policy is judged under, declared by the task and checked at
    registration.

    Every one is a partial task config merged over the run's (``merge_settings``).
    """

    evaluation: Mapping[str, Any] = field(default_factory=dict)
    """Every env that judges a policy (``primebot eval``, training's verdict checks, the env export
    records its parity observations in): tracking's switch off randomisation and observation
    noise."""
    from_start: Mapping[str, Any] = field(default_factory=dict)
    """Then, eval's ``from_start`` group: episodes start where the task's first episode does."""
    spread: Mapping[str, Any] = field(default_factory=dict)
    """Or, eval's ``sampled`` group, training's verdict checks and export's recording: episodes
    start spread out (tracking: uniform start frames)."""
    start_in_last_slot: Mapping[str, Any] | None = None
    """Over ``spread``: the env's last slot starts where ``from_start``'s episodes do, so training's
    verdict checks play their first-frame episode beside the spread ones instead of in an env of its
    own (one env's steps cost about as much as a few more slots'); ``None``: in one of its own."""
    robustness: Mapping[str, Any] | None = None
    """Training's robustness check, over ``spread`` (tracking: the stress test's standard push);
    ``None``: the verdict checks judge tracking only."""
    open_loop: Mapping[str, Any] | None = None
    """A replay with every action zero from the motion's first frame, over ``evaluation``
    (``primebot motion record`` and ``pd-replay``): tracking's action then means the reference's
    joint angles and no termination ends the episode. ``None``: the task has no open-loop replay."""
    open_loop_feedforward: Mapping[str, Any] | None = None
    """Over ``open_loop``, for ``primebot motion pd-replay --feedforward``: a zero action also
    pushes the motion's own torques, so no servo sags (tracking: ``actions.offset:
    servo_target``). ``None``: the task has none."""

    def named(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Each set of overrides with its name, as ``check`` reports them."""
        sets = [
            ("evaluation", self.evaluation),
            ("from_start", self.from_start),
            ("spread", self.spread),
        ]
        optional = (("start_in_last_slot", self.start_in_last_slot),
                    ("robustness", self.robustness), ("open_loop", self.open_loop),
                    ("open_loop_feedforward", self.open_loop_feedforward))
        return sets + [(name, overrides) for name, overrides in optional if overrides is not None]

    def config(self, base: Mapping[str, Any], *extra: Mapping[str, Any] | None) -> dict[str, Any]:
        """``base`` (a run's task config) with ``evaluation`` and then each of ``extra`` merged
        in."""
        out = dict(base)
        for overrides in (self.evaluation, *extra):
            out = merge_settings(out, overrides)
        return out


def merge_settings(defaults: Mapping[str, Any], overrides: Mapping[str, Any] | None,
                   open_sections: Sequence[str] | None = None, owner: str = "") -> dict[str, Any]:
    """``defaults`` updated by ``overrides``, recursively (neither changed): the one merge of
    settings.

    With ``open_sections`` (a task's ``open_config_sections``) a key the defaults lack is a
    ``ConfigError`` naming it (``owner`` says whose settings), except directly under an open
    section, where any key may be added; without it, keys are added freely (``overrides`` already
    checked). A whole section of ``defaults`` (a top-level mapping: ``randomization``,
    ``rewards``) replaced by anything but a mapping is a ``ConfigError`` naming its keys; a part
    inside one may be null (a push, a termination).
    """
    return _merge(defaults, overrides or {}, open_sections, owner, "")


def _merge(defaults: Mapping[str, Any], overrides: Mapping[str, Any],
           open_sections: Sequence[str] | None,
           owner: str, path: str) -> dict[str, Any]:
    merged = copy.deepcopy(dict(defaults))
    for key, value in overrides.items():
        where = f"{path}{key}"
        if key not in merged:
            if open_sections is None or path.rstrip(".") in open_sections:
                merged[key] = copy.deepcopy(value)
                continue
            raise ConfigError(
                f"{owner}: unknown config key {where!r}",
                fix=f"known keys here: {', '.join(sorted(merged))} (see docs/tasks.md)",
            )
        if isinstance(merged[key], Mapping) and isinstance(value, Mapping):
            merged[key] = _merge(merged[key], value, open_sections, owner, f"{where}.")
        elif not path and isinstance(merged[key], Mapping):
            # a part inside a section may be null (a push, a termination); a whole section not
            raise ConfigError(
                f"{owner}: {where!r} is a section of settings and cannot be replaced by "
                f"{value!r}",
                fix=f"set its keys one at a time ({where}.KEY=VALUE; its keys: "
                    f"{', '.join(sorted(merged[key]))}; see docs/tasks.md)",
            )
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def not_a_tracking_task(task: str) -> ConfigError:
    """The error for evaluating or exporting, as motion tracking, a task without the hooks for
    it."""
    return ConfigError(
        f"task {task!r} is not a motion-tracking task (its TaskSpec has no evaluation_view / "
        "export_metadata); "
        "eval, export and sim2sim measure and ship reference tracking",
        fix="train with --task tracking (the default) to get a deployable tracking policy",
    )
