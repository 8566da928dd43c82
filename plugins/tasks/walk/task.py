"""The ``walk`` task, declared in one place: a planar biped learns to walk forward (seed 000).

Read top to bottom: its settings (what the policy sees and is rewarded for
is in ``mdp.py``, weighted by these settings; a fall ends an episode), how
a trained policy is played to judge it, and the trainer's defaults for this
task: seed 000's PPO preset (256-256-128 MLP, one shared log-std, Adam
3e-4, 2048-step rollouts, 10 epochs, clip 0.2, γ 0.99, λ 0.95), which
replace the trainer's tracking-oriented defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primebot.pipeline.api import (
    EXPORT_POLICY,
    PlaySettings,
    RobotSpec,
    TaskSpec,
    available_cores,
    hookimpl,
)

from . import mdp
from .env import WalkEnv
from .metrics import walk_metrics

PHYSICS_DT = 0.005
"""biped4.xml's timestep, s (the threshold of another robot follows its own
``env.walking_threshold``)."""

ENVS_PER_THREAD = 64
"""Physics threads: one per this many envs (see ``make_walk_env``)."""

NUM_ENVS = 16
"""Parallel walkers; NUM_ENVS × ``ppo.num_steps_per_env`` = seed 000's 2048-step rollout."""

DEFAULT_CONFIG: dict[str, Any] = {
    "decimation": 4,
    "episode_length": 1000,
    "direction": [1.0, 0.0],
    "forward_weight": 2.0,
    "sideways_weight": 2.0,
    "alive_bonus": 1.0,
    "posture_weight": 1.0,
    "min_height": 0.3,
    "max_pitch": 1.0,
    "randomization": {"enabled": True, "joint_pos": 0.05, "velocity": 0.05},
    "walking_speed": 0.5,
}
"""Task settings (``--set task.<key>=value``).

decimation: physics substeps (0.005 s each) per control step: 50 Hz control.
episode_length: control steps per episode (20 s at 50 Hz); then ``truncated``.
direction: walking direction in the ground plane (x, y); normalised.
forward_weight: reward per m/s of torso velocity along ``direction`` (negative backwards).
sideways_weight: penalty per m/s of torso velocity across ``direction`` (0 for the planar biped).
alive_bonus: reward per second for not having fallen.
posture_weight: penalty per rad² of torso pitch, per second.
min_height, max_pitch: the fall: torso origin below min_height m or |pitch| above max_pitch rad.
randomization: reset noise, uniform with these half-widths: joint_pos (rad) on the joints,
    velocity (rad/s or m/s) on every velocity; enabled: false resets every episode to exactly the
    standing pose (deterministic evaluation; ``primebot eval`` sets it, as for tracking).
walking_speed: the speed the "walking" return threshold is defined by (m/s).
"""

TRAINER_DEFAULTS: dict[str, Any] = {
    # 16 envs × 128 steps = seed 000's 2048-step rollout; 150 iterations ≈ 307k env steps
    "train": {"num_envs": NUM_ENVS, "iterations": 150},
    "ppo": {
        "num_steps_per_env": 2048 // NUM_ENVS,
        "num_learning_epochs": 10,
        "num_mini_batches": 4,
        "clip_param": 0.2,
        "gamma": 0.99,
        "lam": 0.95,
        "learning_rate": 3e-4,
        "schedule": "fixed",
        "entropy_coef": 0.0,
    },
    "policy": {
        "actor_hidden": [256, 256, 128],
        "critic_hidden": [256, 256, 128],
        "shared_log_std": True,
    },
    # 512-row mini-batches through 256-wide layers are too small to split:
    # extra OpenMP threads only spin against MuJoCo and other processes.
    "runner": {"update_threads": 1},
}
"""Seed 000's PPO preset, in place of the trainer's defaults for this task."""

PLAY = PlaySettings(
    # every episode from exactly the standing pose
    evaluation={"randomization": {"enabled": False}},
    # export records its parity observations from walkers with reset noise
    spread={"randomization": {"enabled": True}},
)


def task_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``DEFAULT_CONFIG`` updated by ``config``; unknown keys are a ``ConfigError``."""
    return WALK_TASK.settings(config)


def walking_threshold(config: Mapping[str, Any] | None = None,
                      physics_dt: float = PHYSICS_DT) -> float:
    """The return of walking upright at ``walking_speed`` (0.5 m/s) for a whole episode.

    With the defaults: 1000 steps × 0.02 s × (1 alive + 2 × 0.5 m/s) = 40.0.
    """
    settings = task_settings(config)
    return mdp.walking_return(
        settings["walking_speed"],
        episode_length=settings["episode_length"],
        dt=physics_dt * settings["decimation"],
        forward_weight=settings["forward_weight"],
        alive_bonus=settings["alive_bonus"],
    )


def make_walk_env(
    *,
    robot: RobotSpec,
    motion: Any = None,
    num_envs: int,
    seed: int = 0,
    config: Mapping[str, Any] | None = None,
    registry: Any = None,
    num_threads: int | None = None,
) -> WalkEnv:
    """Build the walk environment (the ``make_env`` of the ``walk`` TaskSpec); ``motion`` is
    unused."""
    del motion  # walking needs no reference motion
    if num_threads is None:
        # One biped substep costs ~7 µs: below ~64 envs per thread, handing work
        # to another thread costs more than it saves (16 envs: 0.59 ms per step
        # on one thread, 0.68 ms on two).
        num_threads = max(1, min(available_cores(), num_envs // ENVS_PER_THREAD))
    return WalkEnv(robot, num_envs, task_settings(config), seed=seed, num_threads=num_threads,
                   registry=registry)


WALK_TASK = TaskSpec(
    name="walk",
    make_env=make_walk_env,
    default_config=DEFAULT_CONFIG,
    description="seed 000: a 4-joint planar biped learns to walk forward (14-dim obs, 4 actions, "
    "velocity + alive - posture reward, fall termination, 1000-step episodes)",
    needs_motion=False,
    default_robot="biped4",
    episode_metrics=walk_metrics,
    # No reference motion to ship, and sim2sim's deploy loop is written for a free-joint base.
    export_kind=EXPORT_POLICY,
    play=PLAY,
    trainer_defaults=TRAINER_DEFAULTS,
)


@hookimpl
def register_reward_terms(register) -> None:
    """Register the walk reward terms ``velocity``, ``alive`` and ``posture``
    (``mdp.REWARD_TERMS``)."""
    for term in mdp.REWARD_TERMS:
        register(term)


@hookimpl
def register_tasks(register) -> None:
    """Register ``walk``."""
    register(WALK_TASK)
