"""One run's settings, layer over layer: the trainer's and the task's defaults, the flags, the
robot's and the motion's own training overrides, then ``--set`` (docs/training.md, "Settings").

``resolve_config`` is the one function that does it; ``train_config.py`` holds what it fills in
(``TrainConfig``), how one ``--set`` is read and applied, and the checks every resolved run passes.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..motion.format import load_motion
from ..registry import DEFAULT_TASK, Registry
from .train_config import TrainConfig, check_settings, parse_set, set_value

log = logging.getLogger(__name__)

MOTION_POLICY_SETTINGS = ("policy.init_action_gain", "policy.init_noise_std")
"""Settings outside the task a motion file's ``training_overrides`` may carry: how the first policy
starts (docs/architecture.md §2). The task names the rest (``TaskSpec.motion_settings``)."""


def motion_may_set(key: str, task_sections: tuple[str, ...]) -> bool:
    """Whether a motion file's ``training_overrides`` may set ``key`` (after ``KEY_ALIASES``)."""
    if key in MOTION_POLICY_SETTINGS:
        return True
    return any(key == f"task.{section}" or key.startswith(f"task.{section}.")
               for section in task_sections)


_ABSENT = object()


def _node(tree: dict[str, Any], parts: list[str]) -> Any:
    """The value at the key path ``parts`` in nested settings, or ``_ABSENT``."""
    node: Any = tree
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _is_section(config: dict, dotted: str) -> bool:
    """Whether ``dotted`` names a mapping of settings in ``config`` (not one setting)."""
    return isinstance(_node(config, dotted.split(".")), dict)


def apply_task_defaults(cfg: TrainConfig, spec: Any, sources: dict[str, str] | None = None) -> None:
    """The task's trainer defaults (``TaskSpec.trainer_defaults``) over the trainer's, and its
    settings (``default_config``) as ``cfg.task_config``; ``sources`` records each key the task
    set."""
    where = f"task {spec.name}"
    # A ``train`` section sets top-level fields (a task's preferred num_envs, iterations).
    for key, value in (spec.trainer_defaults.get("train") or {}).items():
        set_value(cfg, key, value)
        _record(sources, key, where)
    for section in TrainConfig.SECTIONS:
        for key, value in (spec.trainer_defaults.get(section) or {}).items():
            set_value(cfg, f"{section}.{key}", value)
            _record(sources, f"{section}.{key}", where)
    cfg.task_config = copy.deepcopy(dict(spec.default_config))


# -- one run's settings, resolved and checked --------------------------------------------

TRAIN_ON = "primebot train --resume {run_dir}"
"""How ``primebot train`` trains a run on (``TrainRequest.train_on``; ``{run_dir}`` is filled
in)."""


@dataclass
class TrainRequest:
    """What the user asked for; None means "the default" (or "unchanged" on resume)."""

    motion: str | None = None
    task: str | None = None
    robot: str | None = None
    device: str | None = None
    num_envs: int | None = None
    iterations: int | None = None
    seed: int | None = None
    run_name: str | None = None
    sets: list[str] = field(default_factory=list)
    resume: str | None = None
    tensorboard: bool = False
    log_dir: str = "logs"
    run_dir: str | None = None
    """Train into this directory (e.g. the pipeline's run directory) instead of a new
    logs/<name>/<time>."""
    progress: bool = True
    train_on: str = TRAIN_ON
    """How the caller trains this run on (``{run_dir}`` is filled in): what the warnings of a run
    that ended short advise, its summary's ``next_step``, and the runner's advice after a signal or
    a non-finite update. The pipeline's train stage gives its own command."""
    longer_budget: tuple[float, str] | None = None
    """A longer training budget the caller offers: its time limit in minutes and how to ask for it
    (the pipeline: ``--preset long``); advised only to a run whose own limit is shorter."""


def resolve_config(registry: Registry, request: TrainRequest, device: str,
                   sources: dict[str, str] | None = None) -> TrainConfig:
    """The run's settings, each layer over the one before (docs/training.md, "Settings"):

    1. the trainer's defaults (``TrainConfig``) and the task's settings
       (``TaskSpec.default_config``),
    2. the task's trainer defaults (``TaskSpec.trainer_defaults``),
    3. the flags (``--robot``, ``--num-envs``, ``--iterations``, ``--seed``), and the robot's own
       training overrides (``RobotSpec.training_overrides``; a ``task.`` key its task lacks is left
       out),
    4. the motion's own training overrides (``Motion.training_overrides``), limited to the settings
       its task names (``TaskSpec.motion_settings``) and ``MOTION_POLICY_SETTINGS``, never a flag's,
       so every explicit choice of the user wins,
    5. ``--set`` (a preset's, then the user's).

    ``sources`` (when given) receives, for every key a layer above the first set, where it came from
    (``primebot config show`` prints it)."""
    cfg = TrainConfig(task=request.task or DEFAULT_TASK)
    spec = registry.get("tasks", cfg.task)
    open_sections = tuple(spec.open_config_sections)
    try:
        apply_task_defaults(cfg, spec, sources)
        cfg.robot = request.robot or spec.default_robot
        _record(sources, "robot", "--robot" if request.robot else f"task {spec.name}")
        for name in ("num_envs", "iterations", "seed"):
            value = getattr(request, name)
            if value is not None:
                setattr(cfg, name, value)
                _record(sources, name, f"--{name.replace('_', '-')}")
    except ValueError as exc:
        raise ConfigError(str(exc), fix="see docs/training.md for every setting") from None
    if cfg.robot:
        apply_robot_overrides(cfg, registry.get("robots", cfg.robot), open_sections, sources)
    carried = motion_overrides(request.motion) if spec.needs_motion and request.motion else ()
    try:
        carried_pairs = parse_set(carried)
        refused = [key for key, _ in carried_pairs
                   if not motion_may_set(key, tuple(spec.motion_settings))]
        if refused:
            allowed = [*(f"task.{section}" + (".*" if _is_section(spec.default_config, section)
                                               else "")
                         for section in spec.motion_settings),
                       *MOTION_POLICY_SETTINGS]
            raise ConfigError(
                f"{request.motion}: its training_overrides set {', '.join(refused)}, which a "
                "motion file may not "
                "set (a motion may carry only "
                f"{', '.join(allowed) or 'nothing for task ' + repr(spec.name)}); "
                "nothing was trained",
                fix="only use motion files you trust; to apply such a setting, pass it yourself "
                    "with "
                    "--set KEY=VALUE, or remove it from the motion source's `training:` list and "
                    "regenerate "
                    "the file (docs/motions.md)",
            )
        if carried_pairs:  # no motion file, nothing carried
            _apply_layer(cfg, carried_pairs, open_sections, sources,
                         f"motion {Path(request.motion).name}")
    except ValueError as exc:
        raise ConfigError(f"{request.motion}: its training_overrides: {exc}",
                          fix="correct the `training:` list of the motion's source and regenerate "
                              "the file "
                              "(docs/motions.md)") from None
    try:
        _apply_layer(cfg, parse_set(request.sets), open_sections, sources, "--set")
    except ValueError as exc:
        raise ConfigError(str(exc), fix="see docs/training.md for every setting") from None
    cfg.device = device
    check_settings(cfg, spec)
    return cfg


def apply_robot_overrides(cfg: TrainConfig, robot: Any, open_sections: tuple[str, ...] = (),
                          sources: dict[str, str] | None = None) -> None:
    """The robot's own training settings (``RobotSpec.training_overrides``) over ``cfg``; a
    ``task.`` key the task does not have is left out (another task's setting). A bad one is a
    ``ConfigError`` naming the robot."""
    try:
        kept = []
        for key, value in parse_set(robot.training_overrides):
            if key.startswith("task.") and not _task_has(cfg.task_config, key):
                log.debug("robot %s: task %s has no %s; left out", robot.name, cfg.task, key)
                continue
            kept.append((key, value))
        _apply_layer(cfg, kept, open_sections, sources, f"robot {robot.name}")
    except ValueError as exc:
        raise ConfigError(f"robot {robot.name!r}: its training_overrides: {exc}",
                          fix="correct RobotSpec.training_overrides in the robot's plugin "
                              "(docs/robots.md)") from None


def _apply_layer(cfg: TrainConfig, pairs: list[tuple[str, Any]], open_sections: tuple[str, ...],
                 sources: dict[str, str] | None, source: str) -> None:
    """One layer's ``(key, value)`` pairs over ``cfg``, each recorded as coming from ``source``
    (a bad key or value raises ``ValueError``; the caller names the layer in its error)."""
    for key, value in pairs:
        set_value(cfg, key, value, open_sections=open_sections)
        _record(sources, key, source)


def _task_has(task_config: dict[str, Any], key: str) -> bool:
    """Whether the task's settings hold ``task.a.b``."""
    return _node(task_config, key.split(".")[1:]) is not _ABSENT


def task_default(spec: Any, name: str) -> Any:
    """A top-level training setting's default for task ``spec`` (its trainer defaults over the
    trainer's)."""
    cfg = TrainConfig(task=spec.name)
    apply_task_defaults(cfg, spec)
    return getattr(cfg, name)


def _record(sources: dict[str, str] | None, key: str, source: str) -> None:
    if sources is not None:
        sources[key] = source


def motion_overrides(path: str) -> tuple[str, ...]:
    """The training overrides the motion file at ``path`` carries (logged when there are any)."""
    carried = load_motion(path).training_overrides
    if carried:
        log.info("motion %s carries training overrides (any --set of the same key wins): %s",
                 Path(path).name, " ".join(carried))
    return carried
