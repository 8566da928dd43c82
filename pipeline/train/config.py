"""A training run's configuration, as written to args.yaml, and its ``--set`` overrides.

Sections map onto ``--set`` keys: ``ppo.<field>``, ``policy.<field>``,
``runner.<field>``, ``task.<key>``; a task's ``default_config`` may carry
``ppo``/``policy``/``runner`` sections that replace these defaults.
The learner's own sections (``PPOConfig``, ``PolicyConfig``) live with the learner, in ``ppo/config.py``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from ..ppo.config import PolicyConfig, PPOConfig
from ..registry import DEFAULT_TASK


@dataclass
class RunnerConfig:
    """The training loop around the algorithm."""

    save_interval: int = 50
    """Write model_<it>.pt every this many iterations."""
    noise: str = "host"
    """Where exploration noise is drawn: 'host' (numpy, NPU-safe) or 'device' (torch RNG on the device)."""
    collect_threads: int = 0
    """torch threads for the policy forward while collecting; 0 means all cores (MuJoCo's threads wait meanwhile)."""
    update_threads: int = 0
    """torch threads during the update; 0 means all cores."""
    plot_interval_s: float = 30.0
    """Seconds between redraws of the training-curve PNG."""
    check_interval: int = 0
    """Every this many iterations, play a few deterministic episodes without randomisation and log the
    verdict (``verdict/*`` columns); 0 never checks. Tasks that track a motion only."""
    stop_when_tracked: bool = False
    """Stop training (as finished) at the first check where the policy tracks its motion."""
    time_limit_min: float = 0.0
    """Stop training (as finished) after this many minutes; 0: no limit. With ``stop_when_tracked``: train
    until the verdict holds, at most this long."""


@dataclass
class TrainConfig:
    """Everything one training run needs, as written to args.yaml."""

    task: str = DEFAULT_TASK
    """Registered task name."""
    robot: str | None = None
    """Registered robot name (default: the task's default robot)."""
    motion: str | None = None
    """Path of the reference motion (.npz) for tasks that track one."""
    motion_sha256: str = ""
    """SHA-256 of the motion file, so a run names exactly what it trained on."""
    device: str = "cpu"
    """Resolved torch device string."""
    num_envs: int = 1024
    """Environments per rank."""
    iterations: int = 3000
    """Total PPO iterations of the run (a resume continues up to this)."""
    seed: int = 1
    """Seed of torch, numpy, python, the noise RNG and the environments (rank r adds r to the env seed)."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """Algorithm settings."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """Network settings."""
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    """Loop settings."""
    task_config: dict[str, Any] = field(default_factory=dict)
    """The task's settings after overrides (``task.<key>``)."""

    SECTIONS = ("ppo", "policy", "runner")

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), ready for YAML."""
        return _plain(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of ``to_dict``; unknown keys raise ``KeyError`` naming them."""
        data = dict(data)
        sections = {
            "ppo": PPOConfig, "policy": PolicyConfig, "runner": RunnerConfig,
        }
        kwargs: dict[str, Any] = {}
        for name, klass in sections.items():
            kwargs[name] = _build(klass, data.pop(name, {}) or {}, name)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise KeyError(f"unknown config keys: {', '.join(sorted(unknown))}")
        return cls(**data, **kwargs)

    def identity(self) -> dict[str, Any]:
        """The settings a checkpoint must agree with to be resumed (not device or length)."""
        data = self.to_dict()
        for key in ("device", "iterations", "motion"):
            data.pop(key)
        for key in ("plot_interval_s", "collect_threads", "update_threads"):
            data["runner"].pop(key)
        return data


RESUMABLE_SETTINGS = (
    "ppo.learning_rate", "ppo.schedule", "ppo.desired_kl", "ppo.max_grad_norm", "ppo.entropy_coef",
    "ppo.clip_param", "ppo.value_loss_coef", "ppo.num_learning_epochs", "ppo.compile_update",
    "runner.save_interval",
)
"""Settings ``--resume RUN --set key=value`` may change: the optimisation and how it runs, not what the
networks, the rollout or the environment are. Each such change is recorded in args.yaml."""


def resumable_identity(cfg: TrainConfig) -> dict[str, Any]:
    """``cfg.identity()`` without ``RESUMABLE_SETTINGS``: what a resumed run must still agree on."""
    data = cfg.identity()
    for key in RESUMABLE_SETTINGS:
        section, _, name = key.partition(".")
        data[section].pop(name, None)
    return data


def _build(klass: type, values: dict[str, Any], section: str) -> Any:
    names = {f.name: f for f in dataclasses.fields(klass)}
    unknown = set(values) - set(names)
    if unknown:
        raise KeyError(f"unknown {section} keys: {', '.join(sorted(unknown))}")
    converted = {}
    for key, value in values.items():
        if isinstance(value, list):
            value = tuple(value)
        converted[key] = value
    return klass(**converted)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- overrides: task sections, then --set key=value ---------------------------------
MOTION_POLICY_SETTINGS = ("policy.init_action_gain", "policy.init_noise_std")
"""Settings outside the task a motion file's ``training_overrides`` may carry: how the first policy starts
(docs/architecture.md §2). The task names the rest (``TaskSpec.motion_settings``)."""


def motion_may_set(key: str, task_sections: tuple[str, ...]) -> bool:
    """Whether a motion file's ``training_overrides`` may set ``key`` (after ``KEY_ALIASES``)."""
    if key in MOTION_POLICY_SETTINGS:
        return True
    return any(key == f"task.{section}" or key.startswith(f"task.{section}.") for section in task_sections)


KEY_ALIASES = {"ppo.lr": "ppo.learning_rate", "ppo.epochs": "ppo.num_learning_epochs"}
"""Short spellings accepted by ``--set``."""


def parse_set(items: list[str] | tuple[str, ...]) -> list[tuple[str, Any]]:
    """``["ppo.lr=3e-4", "task.dims=3"]`` → [(key, value)], values parsed as YAML scalars/lists."""
    import yaml

    pairs = []
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set {item!r} is not key=value (e.g. --set ppo.learning_rate=3e-4)")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as exc:
            raise ValueError(f"--set {item!r}: value is not valid YAML ({exc})") from None
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            value = float(value)  # YAML 1.1 reads 3e-4 (no dot) as a string
        pairs.append((KEY_ALIASES.get(key, key), value))
    return pairs


_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


AUTO_OR_INTEGER = ("ppo.num_learning_epochs",)
"""Settings that take ``auto`` (settled per device when a run starts) or an integer."""


def _coerce(key: str, default: Any, value: Any) -> Any:
    """Check ``value`` against the field's default type; ints become floats where floats are expected."""
    if key in AUTO_OR_INTEGER:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise ValueError(f"{key} expects auto or an integer, got {value!r}")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{key} expects true or false, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key} expects a number, got {value!r}")
        return float(value)
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} expects an integer, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) for v in value):
            raise ValueError(f"{key} expects a list of integers such as [256, 256, 128], got {value!r}")
        return tuple(value)
    if isinstance(default, str) and isinstance(value, bool):
        return "on" if value else "off"  # YAML reads a bare on/off as a boolean
    if isinstance(default, str) and not isinstance(value, str):
        raise ValueError(f"{key} expects a string, got {value!r}")
    return value


def section_value(cfg: TrainConfig, key: str) -> Any:
    """The value of a section setting ``ppo.x`` / ``policy.x`` / ``runner.x`` as the config holds it."""
    section, _, name = key.partition(".")
    return getattr(getattr(cfg, section), name)


def set_value(cfg: TrainConfig, key: str, value: Any, open_sections: tuple[str, ...] = ()) -> None:
    """Apply one override: ``ppo.x`` / ``policy.x`` / ``runner.x`` / ``task.a.b`` / top-level field.

    Under a task section named in ``open_sections`` (e.g. ``rewards``) new keys
    may be added, so ``task.rewards.my_term.weight=0.5`` switches on a plugin's term.
    """
    import difflib

    section, _, name = key.partition(".")
    if section == "task" and name:
        target = cfg.task_config
        *parents, leaf = name.split(".")
        is_open = bool(parents) and parents[0] in open_sections
        for depth, part in enumerate(parents):
            if part not in target and not (is_open and depth > 0):
                close = difflib.get_close_matches(part, list(target), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"the task has no section {part!r} in {key!r}{hint}")
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ValueError(f"task.{part} is not a section")
        if leaf not in target and is_open:
            target[leaf] = value
            return
        if leaf not in target:
            close = difflib.get_close_matches(leaf, list(target), n=1)
            hint = f" (did you mean task.{'.'.join([*parents, close[0]])}?)" if close else ""
            raise ValueError(f"the task has no setting {key!r}{hint}; known: {', '.join(sorted(target)) or 'none'}")
        default = target[leaf]
        # null switches a task setting off where the task allows it (terminations, push, curriculum); the
        # task checks its own config when the env is built
        target[leaf] = value if default is None or value is None else _coerce(key, default, value)
        return
    if name and section in TrainConfig.SECTIONS:
        obj = getattr(cfg, section)
        field_name = name
    elif not name and section not in TrainConfig.SECTIONS and section != "task_config":
        obj, field_name = cfg, section
    else:
        raise ValueError(f"unknown setting {key!r}; use ppo.<field>, policy.<field>, runner.<field> or task.<key>")
    fields = {f.name for f in dataclasses.fields(obj)}
    if field_name not in fields:
        prefix = f"{section}." if name else ""
        close = difflib.get_close_matches(field_name, sorted(fields), n=1)
        hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
        raise ValueError(f"unknown setting {key!r}{hint}; {section if name else 'top-level'} fields: {', '.join(sorted(fields))}")
    default = getattr(obj, field_name)
    setattr(obj, field_name, value if default is None else _coerce(key, default, value))


def apply_task_defaults(cfg: TrainConfig, task_defaults: dict[str, Any]) -> None:
    """Split a task's ``default_config`` into training sections and the task's own settings."""
    import copy

    defaults = copy.deepcopy(dict(task_defaults))
    # A ``train`` section sets top-level fields (a task's preferred num_envs, iterations).
    for key, value in (defaults.pop("train", None) or {}).items():
        set_value(cfg, key, value)
    for section in TrainConfig.SECTIONS:
        for key, value in (defaults.pop(section, None) or {}).items():
            set_value(cfg, f"{section}.{key}", value)
    cfg.task_config = defaults
