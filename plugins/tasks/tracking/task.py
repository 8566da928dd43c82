"""Registers the ``tracking`` task: its default config (config.yaml) and how to build its env."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from primebot.pipeline.api import (
    START_SPREAD,
    START_STEP,
    ConfigError,
    Motion,
    Registry,
    RobotSpec,
    TaskSpec,
    hookimpl,
)

from .env import TrackingEnv
from .evaluation import tracking_view
from .export import export_metadata

CONFIG_PATH = Path(__file__).with_name("config.yaml")
OPEN_SECTIONS = ("rewards",)
"""Sections whose keys are not fixed by the defaults (any registered reward term may be named)."""


def default_config() -> dict[str, Any]:
    """The task's defaults as a plain nested dict (a fresh copy each call)."""
    with open(CONFIG_PATH, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def merge_config(
    defaults: Mapping[str, Any], overrides: Mapping[str, Any] | None, path: str = ""
) -> dict[str, Any]:
    """``defaults`` updated by ``overrides`` recursively; unknown keys are a ``ConfigError`` naming them."""
    merged = copy.deepcopy(dict(defaults))
    for key, value in (overrides or {}).items():
        where = f"{path}{key}"
        if key not in merged:
            if path.rstrip(".") in OPEN_SECTIONS:
                merged[key] = copy.deepcopy(value)
                continue
            raise ConfigError(
                f"tracking task: unknown config key {where!r}",
                fix=f"known keys here: {', '.join(sorted(merged))} (see docs/tasks.md)",
            )
        if isinstance(merged[key], Mapping) and isinstance(value, Mapping):
            merged[key] = merge_config(merged[key], value, f"{where}.")
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def make_tracking_env(
    *,
    robot: RobotSpec,
    motion: Motion | None,
    num_envs: int,
    seed: int = 0,
    config: Mapping[str, Any] | None = None,
    registry: Registry,
    num_threads: int | None = None,
) -> TrackingEnv:
    """Build the tracking env; ``config`` is merged over the defaults (so a full or partial config works)."""
    if motion is None:
        raise ConfigError(
            "the tracking task needs a reference motion",
            fix="pass a motion: primebot train MOTION.npz",
        )
    cfg = merge_config(default_config(), config)
    return TrackingEnv(
        robot, motion, num_envs, cfg, registry=registry, seed=seed, num_threads=num_threads
    )


def verdict_probe(registry: Registry, cfg: Any, motion: Motion | None, *, seed: int):
    """The stop rule's probe: the deterministic policy on a few evaluation episodes (``VerdictProbe``)."""
    from primebot.pipeline.api import VerdictProbe

    return VerdictProbe.for_run(registry, cfg, motion, seed=seed)


_STILL = dict.fromkeys(("x", "y", "z", "roll", "pitch", "yaw"), [0.0, 0.0])
ROBUSTNESS_CHECK = {"randomization": {
    "enabled": True, "curriculum": {"start": None},
    "reset_pose": _STILL, "reset_velocity": _STILL, "reset_joint_pos": [0.0, 0.0],
    **dict.fromkeys(("friction", "mass_scale", "payload", "motor_strength", "action_delay", "encoder_bias",
                     "anchor_com_offset")),
    "push": {"interval_s": [1.0, 3.0], "velocity": _STILL, "speed": [0.2, 0.2]},
}}
"""Training's robustness checks (``TaskSpec.robustness_overrides``): the stress test's standard push (a horizontal
kick of 0.2·√(g·L) in a random direction, ``deploy.perturbations``), every 1-3 s, from exact reference starts,
and nothing else: the family the other standard levels rarely fail before it (docs/tasks.md, "Training for
robustness")."""

TRACKING = TaskSpec(
    name="tracking",
    make_env=make_tracking_env,
    default_config=default_config(),
    description="Track a reference motion (mjlab BeyondMimic): 9 reward terms, adaptive start frames",
    needs_motion=True,
    default_robot="q1",
    open_config_sections=OPEN_SECTIONS,
    # what a motion file's training_overrides may set: its rewards, terminations, randomisation and its
    # curriculum (docs/motions.md, "Training settings in the motion file")
    motion_settings=("rewards", "terminations", "randomization"),
    verdict_probe=verdict_probe,
    evaluation_view=tracking_view,
    export_metadata=export_metadata,
    # eval's from-start group; its sampled group, the verdict probe and export's recorded observations
    start_overrides={START_STEP: {"sampling": {"mode": "start"}}, START_SPREAD: {"sampling": {"mode": "uniform"}}},
    robustness_overrides=ROBUSTNESS_CHECK,
)


@hookimpl
def register_tasks(register) -> None:
    register(TRACKING)
