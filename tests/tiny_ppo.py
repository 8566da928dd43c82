"""A tiny PPO learner and a random rollout for it: the unit tests of the update share them."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from primebot.pipeline.ppo.algorithm import PPO
from primebot.pipeline.ppo.config import PPOConfig
from primebot.pipeline.ppo.networks import ActorCritic

NEEDS_CXX = pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++")),
                               reason="torch.compile (Inductor) needs a C++ compiler on a CPU")
"""For tests that really compile the update."""


def tiny_ppo(num_envs=4, steps=3, compile_update=False, **overrides) -> PPO:
    torch.manual_seed(0)
    cfg = PPOConfig(num_steps_per_env=steps, num_mini_batches=2, num_learning_epochs=3, **overrides)
    ac = ActorCritic(3, 3, 2, (16,), (16,))
    return PPO(ac, cfg, num_envs, 3, 3, "cpu", seed=0, compile_update=compile_update)


def fill_rollout(ppo: PPO, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = ppo.storage.num_envs
    with torch.inference_mode():
        for _ in range(ppo.storage.num_steps):
            obs = torch.from_numpy(rng.normal(size=(n, 3)).astype(np.float32))
            noise = torch.from_numpy(rng.normal(size=(n, 2)).astype(np.float32))
            ppo.act(obs, obs, noise)
            ppo.process_env_step(rng.normal(size=n).astype(np.float32), np.zeros(n, bool),
                                 np.zeros(n, bool))
        ppo.compute_returns(torch.zeros(n, 3))
