"""Exploration noise carried over from step to step (``ppo.noise_correlation``): standard normal at
every step, neighbouring steps correlated by ρ, on the host and on the device alike, and white
(the same draws as before the setting existed) at 0."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from primebot.pipeline.ppo.algorithm import PPO
from primebot.pipeline.ppo.config import PPOConfig
from primebot.pipeline.ppo.networks import ActorCritic


def _learner(noise: str, rho: float) -> PPO:
    torch.manual_seed(0)
    cfg = PPOConfig(num_steps_per_env=4, num_mini_batches=1, noise_correlation=rho)
    return PPO(ActorCritic(3, 3, 2, (8,), (8,)), cfg, 2000, 3, 3, "cpu", seed=1, noise=noise)


def _noise_series(ppo: PPO, steps: int) -> np.ndarray:
    """[steps, N·A] noise as the rollout draws it (the actions of a zero-mean policy with std 1)."""
    series = []
    out = np.empty((2000, 2), np.float32)
    for _ in range(steps):
        if ppo.noise == "host":
            ppo.sample_noise(out)
            series.append(out.ravel().copy())
        else:
            draw = torch.randn((2000, 2), generator=ppo.device_rng)
            series.append((ppo._correlated(draw) if ppo.cfg.noise_correlation else draw)
                          .numpy().ravel())
    return np.stack(series)


@pytest.mark.parametrize("where", ["host", "device"])
def test_correlated_noise_stays_standard_normal_and_carries_rho_to_the_next_step(where):
    series = _noise_series(_learner(where, 0.9), 40)
    assert series.std(axis=1) == pytest.approx(np.ones(40), abs=0.05)
    lag1 = np.mean([np.corrcoef(series[t], series[t + 1])[0, 1] for t in range(39)])
    assert lag1 == pytest.approx(0.9, abs=0.02)


def test_zero_correlation_draws_what_the_white_noise_always_drew():
    ppo = _learner("host", 0.0)
    expected = np.random.default_rng(1).standard_normal((3, 2000, 2), dtype=np.float32)
    assert np.array_equal(_noise_series(ppo, 3), expected.reshape(3, -1))


def test_the_carried_noise_is_part_of_the_learners_random_state():
    a, b = _learner("host", 0.9), _learner("host", 0.5)
    _noise_series(a, 5)
    b.set_rng_state(a.rng_state())
    b.cfg.noise_correlation = 0.9
    assert np.array_equal(_noise_series(a, 3), _noise_series(b, 3))
