"""How ``primebot eval`` scores a walk policy (the ``episode_metrics`` of the walk TaskSpec).

From the episodes the deterministic policy played (``evaluate.episodes``): the
mean return, how far and how fast the torso went along the walking
direction, how often the walker fell, how long episodes lasted, and whether
the mean return reaches the task's walking threshold (the return of walking
upright at ``walking_speed`` for a whole episode, ``mdp.walking_return``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from primebot.pipeline.api import EpisodeRecord

from .env import WalkEnv


def walk_metrics(env: WalkEnv, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Walk metrics over ``records`` (speed = distance / episode duration, per episode, then
    averaged)."""
    returns = np.array([r.episode_return for r in records])
    lengths = np.array([r.length for r in records])
    fell = np.array([r.terminated for r in records])
    distance = np.array([float(env.forward_distance(r.start_qpos, r.final_qpos)) for r in records])
    speed = distance / (lengths * env.step_dt)
    mean_return = float(returns.mean())
    return {
        "episodes": len(records),
        "mean_return": mean_return,
        "mean_forward_speed_m_s": float(speed.mean()),
        "mean_distance_m": float(distance.mean()),
        "fall_rate": float(fell.mean()),
        "mean_episode_length": float(lengths.mean()),
        "mean_episode_length_s": float(lengths.mean() * env.step_dt),
        "max_episode_steps": int(env.max_episode_length),
        "walking_speed_m_s": float(env.cfg["walking_speed"]),
        "walking_threshold": float(env.walking_threshold),
        "walking_threshold_reached": bool(mean_return >= env.walking_threshold),
        "per_episode": {"distance_m": distance.tolist(), "forward_speed_m_s": speed.tolist()},
    }
