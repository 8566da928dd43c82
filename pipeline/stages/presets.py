"""Pipeline presets (quick / default / full) and the settings of one pipeline run.

A preset sizes every stage at once: training environments and iterations,
evaluation episodes, whether videos are rendered, and the smoke test.
``--iterations``/``--num-envs`` override the preset; the resolved settings
are stored in pipeline.json so ``--resume`` continues with the same ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..registry import DEFAULT_TASK


@dataclass(frozen=True)
class Preset:
    """How big each stage is."""

    name: str
    description: str
    num_envs: int
    """Training environments."""
    iterations: int
    """PPO iterations (each collects ``steps_per_env`` steps per environment)."""
    eval_episodes: int
    """Episodes per evaluation (evaluate and sim2sim)."""
    video: bool
    """Render replay / evaluation / sim2sim videos (needs OpenGL; skipped with a warning without
    it)."""
    steps_per_env: int = 24
    """``ppo.num_steps_per_env``: steps per environment per iteration."""
    smoke_num_envs: int = 4
    """Environments of the smoke test."""
    smoke_iterations: int = 2
    """PPO iterations of the smoke test."""
    train_sets: tuple[str, ...] = ()
    """Extra ``--set key=value`` training overrides this preset implies."""
    stress_starts: int = 16
    """Start frames per perturbation cell of the stress test (docs/deploy.md, "Before you
    deploy")."""
    stress_standard_only: bool = False
    """Run only each perturbation family's standard levels (enough for the verdict, not for the
    plot)."""
    stress_confirm: bool = True
    """Run more starts for a standard level whose success is too near 0.9 to call (docs/deploy.md,
    "How many starts"); off in quick, whose few starts never could."""


LONG_TRAINING_MIN = 55
"""The ``long`` preset's time limit, in minutes (``longer_budget``)."""


def longer_budget() -> tuple[float, str]:
    """The longest training a preset offers, and how to ask for it: the train stage's warning of a
    run its time limit cut short names it to runs with less (``TrainRequest.longer_budget``)."""
    return float(LONG_TRAINING_MIN), "--preset long"


LAPTOP_TRAINING = (
    # A 256-128-64 MLP costs a third of the 512-256-128 default per update and tracks wave as well.
    "policy.actor_hidden=[256,128,64]",
    "policy.critic_hidden=[256,128,64]",
    # 4 passes over each rollout instead of mjlab's 5: a fifth less update time, and wave, squat,
    # dance and bow tracked as well in the same session (docs/pipeline.md, "Presets").
    "ppo.num_learning_epochs=4",
)
"""Training overrides of the CPU presets (see docs/pipeline.md, "Presets")."""

UNTIL_TRACKED = ("runner.check_interval=25", "runner.stop_when_tracked=true")
"""Train until the verdict holds (two checks in a row), not for a fixed number of iterations."""

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            name="quick",
            description="a few minutes on a laptop: checks every stage end to end; the policy will "
                        "not track yet",
            num_envs=64,
            iterations=20,
            eval_episodes=4,
            video=True,
            train_sets=(*LAPTOP_TRAINING, "runner.save_interval=10"),
            stress_starts=4,
            stress_standard_only=True,
            stress_confirm=False,
        ),
        Preset(
            name="default",
            description="sized for a 2-core laptop CPU: trains until the policy tracks its motion "
                        "and survives its stress test (checked every 25 iterations), at most 2500 "
                        "iterations or 25 "
                        "minutes; every stage in about 30 min",
            num_envs=256,
            iterations=2500,
            eval_episodes=32,
            video=True,
            train_sets=(*LAPTOP_TRAINING, *UNTIL_TRACKED, "runner.time_limit_min=25"),
        ),
        Preset(
            name="long",
            description="the default's training for up to an hour on a 2-core laptop CPU: motions "
                        "on the floor "
                        "(getup) and others that are still improving when the default's 25 minutes "
                        "end",
            num_envs=256,
            iterations=6000,
            eval_episodes=32,
            video=True,
            train_sets=(*LAPTOP_TRAINING, *UNTIL_TRACKED,
                        f"runner.time_limit_min={LONG_TRAINING_MIN}"),
        ),
        Preset(
            name="full",
            description="the seed's run: 1024 envs x 3000 iterations x 24 steps (hours on a CPU, "
                        "~45 min with an NPU/GPU)",
            num_envs=1024,
            iterations=3000,
            eval_episodes=64,
            video=True,
            train_sets=("runner.check_interval=100", "runner.stop_when_tracked=true"),
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a typed error lists the presets."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"no preset named {name!r}", fix=f"use one of: {', '.join(PRESETS)}"
        ) from None


@dataclass
class PipelineSettings:
    """The fully resolved settings of one pipeline run (stored in pipeline.json)."""

    motion: str
    """Path of the reference motion (.npz), as given."""
    robot: str | None = None
    """Registered robot; None means the task's default robot."""
    task: str = DEFAULT_TASK
    """Registered task."""
    device: str | None = None
    """Requested device (cpu, cuda, npu:0 …); None resolves per docs/devices.md."""
    preset: str = "default"
    num_envs: int = PRESETS["default"].num_envs
    iterations: int = PRESETS["default"].iterations
    eval_episodes: int = PRESETS["default"].eval_episodes
    video: bool = PRESETS["default"].video
    steps_per_env: int = PRESETS["default"].steps_per_env
    smoke_num_envs: int = PRESETS["default"].smoke_num_envs
    smoke_iterations: int = PRESETS["default"].smoke_iterations
    stress_starts: int = PRESETS["default"].stress_starts
    stress_standard_only: bool = PRESETS["default"].stress_standard_only
    stress_confirm: bool = PRESETS["default"].stress_confirm
    seed: int = 1
    train_sets: list[str] = field(default_factory=list)
    """``--set key=value`` overrides passed to training (preset's first, then the user's)."""
    resume_sets: list[str] = field(default_factory=list)
    """``--set`` of optimisation settings given on ``--resume`` (training applies and records them
    in args.yaml)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineSettings:
        """Inverse of ``to_dict``; unknown keys (a newer primebot's) are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def resolve_settings(
    motion: str,
    *,
    preset: str = "default",
    robot: str | None = None,
    task: str = DEFAULT_TASK,
    device: str | None = None,
    num_envs: int | None = None,
    iterations: int | None = None,
    eval_episodes: int | None = None,
    video: bool | None = None,
    seed: int = 1,
    train_sets: list[str] | tuple[str, ...] = (),
) -> PipelineSettings:
    """Settings from a preset, with explicit values taking precedence."""
    chosen = get_preset(preset)
    for name, value in (("num_envs", num_envs), ("iterations", iterations),
                        ("eval_episodes", eval_episodes)):
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be ≥ 1, got {value}")
    return PipelineSettings(
        motion=motion,
        robot=robot,
        task=task,
        device=device,
        preset=chosen.name,
        num_envs=chosen.num_envs if num_envs is None else num_envs,
        iterations=chosen.iterations if iterations is None else iterations,
        eval_episodes=chosen.eval_episodes if eval_episodes is None else eval_episodes,
        video=chosen.video if video is None else video,
        steps_per_env=chosen.steps_per_env,
        smoke_num_envs=chosen.smoke_num_envs,
        smoke_iterations=chosen.smoke_iterations,
        stress_starts=chosen.stress_starts,
        stress_standard_only=chosen.stress_standard_only,
        stress_confirm=chosen.stress_confirm,
        seed=seed,
        train_sets=[*chosen.train_sets, *train_sets],
    )
