"""The tracking task's env on q1 and motions/wave.npz, as the tracking tests build it."""

from __future__ import annotations

from pathlib import Path

WAVE = Path(__file__).resolve().parents[1] / "motions" / "wave.npz"
FULL_STRENGTH = {"randomization": {"curriculum": None}}
"""Every randomisation at full strength from the first step (no curriculum)."""
EXACT = {
    "randomization": {"enabled": False},
    "observations": {"noise": False},
    "log_reward_terms": False,
}
"""No randomisation and no observation noise: exact reference starts."""


def make_env(host, motion, num_envs=4, seed=0, config=None, registry=None):
    """The tracking env of q1 on ``motion``, ``config`` merged over the task's defaults."""
    spec = host.registry.get("tasks", "tracking")
    return spec.make_env(
        robot=host.registry.get("robots", "q1"),
        motion=motion,
        num_envs=num_envs,
        seed=seed,
        config={"log_reward_terms": False, **(config or {})},
        registry=registry or host.registry,
        num_threads=2,
    )
