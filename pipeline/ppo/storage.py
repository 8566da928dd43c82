"""Rollout storage: preallocated, contiguous buffers on the device; GAE; mini-batches.

Shapes are [T, N, ...] with T = steps per env and N = envs. Every buffer is
allocated once; a rollout only writes into it (seed 000: a list of Python
objects made the host→device copy re-layout the data and stall).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class MiniBatch:
    """One mini-batch, flattened over (T, N) → [B, ...]."""

    obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    log_probs: torch.Tensor
    mean: torch.Tensor
    log_std: torch.Tensor


class RolloutStorage:
    """The buffers one PPO iteration fills and the update consumes."""

    def __init__(
        self, num_steps: int, num_envs: int, num_obs: int, num_critic_obs: int, num_actions: int,
        device: str
    ) -> None:
        self.num_steps, self.num_envs = num_steps, num_envs
        self.device = device
        t, n = num_steps, num_envs

        def buf(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(t, n, *shape, dtype=dtype, device=device)

        self.obs = buf(num_obs)
        self.critic_obs = buf(num_critic_obs)
        self.actions = buf(num_actions)
        self.mean = buf(num_actions)
        self.log_std = buf(num_actions)
        self.log_probs = buf()
        self.values = buf()
        self.rewards = buf()
        self.dones = buf()
        """1 where the episode ended after this step (failure or time-out)."""
        self.truncated = buf()
        """1 where the episode hit its time limit after this step (value bootstrapped)."""
        self.returns = buf()
        self.advantages = buf()
        self.step = 0

    def clear(self) -> None:
        self.step = 0

    def add(
        self,
        obs: torch.Tensor,
        critic_obs: torch.Tensor,
        actions: torch.Tensor,
        mean: torch.Tensor,
        log_std: torch.Tensor,
        log_probs: torch.Tensor,
        values: torch.Tensor,
    ) -> None:
        """Record the device-side half of one transition (rewards arrive per rollout)."""
        if self.step >= self.num_steps:
            raise IndexError(f"rollout storage is full ({self.num_steps} steps); call clear()")
        i = self.step
        self.obs[i].copy_(obs)
        self.critic_obs[i].copy_(critic_obs)
        self.actions[i].copy_(actions)
        self.mean[i].copy_(mean)
        self.log_std[i].copy_(log_std)
        self.log_probs[i].copy_(log_probs)
        self.values[i].copy_(values)
        self.step += 1

    def compute_returns(self, last_values: torch.Tensor, gamma: float, lam: float) -> None:
        """GAE(γ, λ) into ``advantages`` and ``returns`` (= advantages + values).

        ``rewards`` must already include the time-out bootstrap γ·V(s)·truncated;
        ``dones`` cuts the recursion at every episode end.
        """
        gae = torch.zeros_like(last_values)
        next_values = last_values
        for t in reversed(range(self.num_steps)):
            not_done = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * next_values * not_done - self.values[t]
            gae = delta + gamma * lam * not_done * gae
            self.advantages[t] = gae
            next_values = self.values[t]
        self.returns.copy_(self.advantages + self.values)

    def mini_batches(self, num_mini_batches: int,
                     permutations: list[torch.Tensor]) -> Iterator[MiniBatch]:
        """Yield mini-batches; one permutation of T·N indices per epoch, made by the caller.

        The permutations come from outside so that the caller chooses the RNG
        (host by default: ``randperm`` on an NPU is one of seed 000's gaps).
        """
        total = self.num_steps * self.num_envs
        size = total // num_mini_batches
        flat = {
            name: getattr(self, name).flatten(0, 1)
            for name in ("obs", "critic_obs", "actions", "values", "advantages", "returns",
                         "log_probs", "mean", "log_std")
        }
        for perm in permutations:
            for k in range(num_mini_batches):
                idx = perm[k * size:(k + 1) * size]
                yield MiniBatch(**{name: tensor[idx] for name, tensor in flat.items()})
