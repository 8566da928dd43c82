"""PPO math against oracles: Gaussian formulas, GAE by hand, normaliser, one update."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny_ppo import fill_rollout, tiny_ppo

from primebot.pipeline.ppo import gaussian
from primebot.pipeline.ppo.networks import ActorCritic
from primebot.pipeline.ppo.normalizer import EmpiricalNormalizer
from primebot.pipeline.ppo.storage import RolloutStorage


def _normal_logpdf(x: float, mu: float, sigma: float) -> float:
    return -((x - mu) ** 2) / (2 * sigma**2) - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def test_gaussian_log_prob_matches_density_formula():
    mean = torch.tensor([[0.3, -1.0, 2.0]])
    log_std = torch.tensor([[math.log(0.5), 0.0, math.log(2.0)]])
    actions = torch.tensor([[0.1, 0.5, -1.0]])
    expected = sum(
        _normal_logpdf(a, m, math.exp(s))
        for a, m, s in zip(actions[0].tolist(), mean[0].tolist(), log_std[0].tolist(), strict=True)
    )
    assert gaussian.log_prob(actions, mean, log_std).item() == pytest.approx(expected, rel=1e-6)


def test_gaussian_entropy_matches_formula():
    log_std = torch.tensor([math.log(0.5), 0.0, math.log(3.0)])
    expected = sum(0.5 * math.log(2 * math.pi * math.e * math.exp(s) ** 2)
                   for s in log_std.tolist())
    assert gaussian.entropy(log_std).item() == pytest.approx(expected, rel=1e-6)


def test_gaussian_kl_matches_formula_and_vanishes_for_equal_distributions():
    mp, sp = torch.tensor([0.2, -0.4]), torch.tensor([0.5, 1.5])
    mq, sq = torch.tensor([0.0, 0.6]), torch.tensor([1.0, 0.7])
    expected = sum(
        math.log(b / a) + (a * a + (m1 - m2) ** 2) / (2 * b * b) - 0.5
        for m1, a, m2, b in zip(mp.tolist(), sp.tolist(), mq.tolist(), sq.tolist(), strict=True)
    )
    kl = gaussian.kl_divergence(mp, sp.log(), mq, sq.log())
    assert kl.item() == pytest.approx(expected, rel=1e-6)
    assert gaussian.kl_divergence(mp, sp.log(), mp, sp.log()).item() == pytest.approx(0.0, abs=1e-7)


def test_gae_matches_hand_computed_oracle():
    # Two envs, three steps, γ = 0.9, λ = 0.8. Env 0 ends (failure) after step 1.
    gamma, lam = 0.9, 0.8
    s = RolloutStorage(3, 2, 1, 1, 1, "cpu")
    s.rewards[:] = torch.tensor([[1.0, 0.0], [2.0, 1.0], [0.5, -1.0]])
    s.values[:] = torch.tensor([[0.5, 1.0], [1.0, 0.0], [2.0, 0.5]])
    s.dones[:] = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    last = torch.tensor([3.0, 2.0])
    s.compute_returns(last, gamma, lam)
    # env 0, by hand: δ2 = 0.5 + .9·3 − 2 = 1.2; A2 = 1.2
    #                 δ1 = 2 − 1 = 1 (done: no bootstrap); A1 = 1
    #                 δ0 = 1 + .9·1 − .5 = 1.4; A0 = 1.4 + .72·1 = 2.12
    # env 1:          δ2 = −1 + 1.8 − .5 = .3; A2 = .3
    #                 δ1 = 1 + .45 − 0 = 1.45; A1 = 1.45 + .72·.3 = 1.666
    #                 δ0 = 0 + 0 − 1 = −1; A0 = −1 + .72·1.666 = 0.19952
    expected = torch.tensor([[2.12, 0.19952], [1.0, 1.666], [1.2, 0.3]])
    assert torch.allclose(s.advantages, expected, atol=1e-5)
    assert torch.allclose(s.returns, expected + s.values, atol=1e-5)


def test_time_out_bootstraps_value_and_failure_does_not():
    ppo = tiny_ppo(num_envs=2, steps=1, normalize_advantage=False, gamma=0.5, lam=1.0)
    obs = torch.zeros(2, 3)
    ppo.act(obs, obs, torch.zeros(2, 2))
    v = ppo.storage.values[0].clone()
    # env 0 times out, env 1 fails; both get reward 1.
    ppo.process_env_step(np.array([1.0, 1.0], np.float32), np.array([False, True]),
                         np.array([True, False]))
    ppo.compute_returns(torch.ones(2, 3))
    s = ppo.storage
    assert s.rewards[0, 0].item() == pytest.approx(1.0 + 0.5 * v[0].item(), rel=1e-6)
    assert s.rewards[0, 1].item() == pytest.approx(1.0)
    assert s.returns[0].tolist() == pytest.approx([1.0 + 0.5 * v[0].item(), 1.0], rel=1e-6)


def test_normalizer_statistics_equal_numpy_over_all_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (n, 4)).astype(np.float32) for n in (5, 17, 40)]
    norm = EmpiricalNormalizer(4, eps=0.0)
    for b in batches:
        norm.update(torch.from_numpy(b))
    data = np.concatenate(batches).astype(np.float64)
    assert np.allclose(norm.mean.numpy(), data.mean(0), atol=1e-5)
    assert np.allclose(norm.var.numpy(), data.var(0), atol=1e-4)
    x = torch.from_numpy(batches[0])
    assert torch.allclose(norm(x), (x - norm.mean) / norm.var.sqrt(), atol=1e-6)


def test_update_reduces_the_surrogate_on_a_fixed_batch():
    ppo = tiny_ppo(num_envs=8, steps=4, schedule="fixed", learning_rate=3e-3, entropy_coef=0.0)
    fill_rollout(ppo)
    s = ppo.storage
    batch = next(s.mini_batches(1, [torch.arange(s.num_steps * s.num_envs)]))
    before = ppo.losses(batch)["surrogate"].item()
    step = s.step
    metrics = ppo.update()
    s.step = step  # the rollout's tensors are still in place; measure the same batch again
    after = ppo.losses(batch)["surrogate"].item()
    assert after < before
    assert set(metrics) >= {"surrogate", "value", "entropy", "approx_kl", "learning_rate",
                            "action_std"}
    assert all(isinstance(v, float) for v in metrics.values())
    assert ppo.nonfinite == []


def test_adaptive_schedule_lowers_the_learning_rate_when_kl_is_large():
    ppo = tiny_ppo(num_envs=8, steps=4, learning_rate=1e-1, desired_kl=1e-6)
    fill_rollout(ppo)
    ppo.update()
    assert ppo.learning_rate < 1e-1
    assert ppo.optimizer.param_groups[0]["lr"] == ppo.learning_rate


def test_update_logs_the_rates_its_steps_used_and_how_far_it_moved_the_policy():
    """The adaptive schedule's KL counts from the collecting policy, so it starts at 0 in every
    update and the rate ramps within one: the logged rate is the mean the steps used (not the one
    left at the end), and ``approx_kl_last`` the last mini-batch's KL (``approx_kl`` averages
    them all, the first of which has not moved)."""
    ppo = tiny_ppo(num_envs=8, steps=4, learning_rate=1e-2, desired_kl=1e-4)
    fill_rollout(ppo)
    used, kls = [], []
    step, adapt = ppo.optimizer.step, ppo._adapt_learning_rate

    def spy_step(*args, **kwargs):
        used.append(ppo.optimizer.param_groups[0]["lr"])
        return step(*args, **kwargs)

    def spy_adapt(kl):
        kls.append(float(kl))
        adapt(kl)

    ppo.optimizer.step, ppo._adapt_learning_rate = spy_step, spy_adapt
    metrics = ppo.update()
    assert len(used) == len(kls) == 6 and len(set(used)) > 1  # the rate moved within the update
    assert metrics["learning_rate"] == pytest.approx(np.mean(used))
    assert metrics["learning_rate"] != pytest.approx(ppo.learning_rate)
    assert kls[0] == pytest.approx(0.0, abs=1e-9)
    assert metrics["approx_kl_last"] == pytest.approx(kls[-1])
    assert metrics["approx_kl"] == pytest.approx(np.mean(kls))
    assert metrics["approx_kl"] < metrics["approx_kl_last"]


def test_update_names_a_non_finite_value_loss():
    ppo = tiny_ppo(num_envs=4, steps=2)
    fill_rollout(ppo)
    ppo.storage.returns[0, 0] = float("nan")
    ppo.update()
    assert "value loss" in ppo.nonfinite


def test_shared_log_std_has_one_parameter_broadcast_to_all_actions():
    ac = ActorCritic(3, 3, 4, (8,), (8,), init_noise_std=0.5, shared_log_std=True)
    assert ac.log_std.shape == (1,)
    assert torch.allclose(ac.action_log_std().exp(), torch.full((4,), 0.5))


def test_a_small_init_action_gain_starts_the_actor_near_zero_and_one_leaves_the_default_init():
    torch.manual_seed(0)
    default = ActorCritic(5, 5, 3, (16,), (16,))
    torch.manual_seed(0)
    same = ActorCritic(5, 5, 3, (16,), (16,), init_action_gain=1.0)
    torch.manual_seed(0)
    small = ActorCritic(5, 5, 3, (16,), (16,), init_action_gain=0.01)
    obs = torch.randn(64, 5)
    assert torch.equal(default.action_mean(obs), same.action_mean(obs))
    ratio = small.action_mean(obs).abs().max() / default.action_mean(obs).abs().max()
    assert 0 < ratio < 0.02  # weights scaled by 0.01 and the bias zeroed
    assert torch.equal(small.actor[-1].bias, torch.zeros(3))
    # only the last layer changes
    assert torch.equal(small.actor[0].weight, default.actor[0].weight)


def test_adam_runs_fused_on_a_cpu_and_keeps_it_over_a_checkpoint_of_the_per_tensor_loop():
    ppo = tiny_ppo()
    assert all(group["fused"] for group in ppo.optimizer.param_groups)
    fill_rollout(ppo)
    ppo.update()
    state = ppo.state_dict()
    for group in state["optimizer"]["param_groups"]:
        group["fused"] = None  # as a checkpoint written before the fused kernel says
    other = tiny_ppo()
    other.load_state_dict(state)
    assert all(group["fused"] for group in other.optimizer.param_groups)
    assert torch.equal(other.optimizer.state_dict()["state"][0]["exp_avg"],
                       ppo.optimizer.state_dict()["state"][0]["exp_avg"])
