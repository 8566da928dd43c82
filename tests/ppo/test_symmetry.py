"""Learning from mirror images (ppo/symmetry.py): the mirror of normalised observations, and the
policy loss over each sample and its mirror image."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.ppo.algorithm import PPO
from primebot.pipeline.ppo.config import PPOConfig
from primebot.pipeline.ppo.networks import ActorCritic
from primebot.pipeline.ppo.normalizer import EmpiricalNormalizer
from primebot.pipeline.ppo.storage import MiniBatch
from primebot.pipeline.ppo.symmetry import Mirror

# 4 observations: a left/right pair, a lateral value that changes sign, one that does not
OBS_MIRROR = (np.array([1, 0, 2, 3]), np.array([1.0, 1.0, -1.0, 1.0]))
# 3 actions: a left/right pair and a yaw that changes sign
ACTION_MIRROR = (np.array([1, 0, 2]), np.array([1.0, 1.0, -1.0]))


def test_normalised_observations_are_mirrored_in_physical_units():
    norm = EmpiricalNormalizer(4)
    norm.update(torch.tensor([[1.0, 5.0, 0.3, 2.0], [3.0, 9.0, -0.1, 4.0], [2.0, 4.0, 0.5, 3.0]]))
    mirror = Mirror(OBS_MIRROR, ACTION_MIRROR, 4, 3, norm, "cpu")
    raw = torch.tensor([[2.0, 6.0, 0.2, 3.5]])
    expected = norm(torch.tensor([[6.0, 2.0, -0.2, 3.5]]))
    torch.testing.assert_close(mirror.observations(norm(raw)), expected)
    torch.testing.assert_close(mirror.actions(torch.tensor([[0.1, 0.2, 0.3]])),
                               torch.tensor([[0.2, 0.1, -0.3]]))


@pytest.mark.parametrize("source", [np.array([1, 0, 2]), np.array([1, 2, 0, 3])])
def test_a_mirror_that_is_not_an_involution_of_the_observation_is_refused(source):
    with pytest.raises(ValueError, match="observation mirror"):
        Mirror((source, np.ones(len(source))), ACTION_MIRROR, 4, 3, torch.nn.Identity(), "cpu")


def _learner(mirror) -> PPO:
    torch.manual_seed(0)
    return PPO(ActorCritic(4, 4, 3, (16,), (16,)), PPOConfig(num_steps_per_env=2), 4, 4, 4, "cpu",
               seed=0, mirror=mirror)


def test_the_policy_loss_is_taken_over_each_sample_and_its_mirror_image():
    rng = np.random.default_rng(0)

    def tensor(*shape):
        return torch.from_numpy(rng.normal(size=shape).astype(np.float32))

    batch = MiniBatch(obs=tensor(6, 4), critic_obs=tensor(6, 4), actions=tensor(6, 3),
                      values=tensor(6), advantages=tensor(6), returns=tensor(6),
                      log_probs=tensor(6) - 3.0, mean=tensor(6, 3), log_std=torch.zeros(6, 3))
    with_mirror = _learner((OBS_MIRROR, ACTION_MIRROR)).losses(batch)
    # the same learner without a mirror, on the batch and its mirror image written out by hand
    obs_source, obs_sign = (torch.as_tensor(x) for x in OBS_MIRROR)
    act_source, act_sign = (torch.as_tensor(x) for x in ACTION_MIRROR)
    doubled = MiniBatch(
        obs=torch.cat([batch.obs, batch.obs[:, obs_source] * obs_sign.float()]),
        critic_obs=torch.cat([batch.critic_obs, batch.critic_obs]),
        actions=torch.cat([batch.actions, batch.actions[:, act_source] * act_sign.float()]),
        **{k: torch.cat([getattr(batch, k)] * 2)
           for k in ("values", "advantages", "returns", "log_probs", "mean", "log_std")},
    )
    by_hand = _learner(None).losses(doubled)
    torch.testing.assert_close(with_mirror["surrogate"], by_hand["surrogate"])
    torch.testing.assert_close(with_mirror["entropy"], by_hand["entropy"])
    # the value loss, the KL and the clip fraction are the original samples' alone
    plain = _learner(None).losses(batch)
    for key in ("value", "approx_kl", "clip_fraction"):
        torch.testing.assert_close(with_mirror[key], plain[key])
    assert not torch.allclose(with_mirror["surrogate"], plain["surrogate"])


def test_an_env_that_does_not_say_how_it_mirrors_refuses_symmetry_by_name():
    from pointmass_task import DEFAULT_CONFIG, make_env

    env = make_env(num_envs=2, seed=0, config=DEFAULT_CONFIG)
    with pytest.raises(ConfigError, match="PointMassEnv does not say how its observations"):
        env.mirror()
