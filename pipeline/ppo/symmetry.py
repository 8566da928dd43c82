"""Learning from each transition's mirror image too (``ppo.symmetry``, docs/training.md).

A left-right symmetric robot that does a motion's mirror image, mirrored, does the motion: the
mirrored state with the mirrored action is as good a sample of the task as the original, with the
same advantage. Each mini-batch's policy loss is taken over its samples and their mirror images
(data augmentation, as rsl_rl's symmetry module does it): twice the samples for the policy from the
same physics, and a policy pushed towards acting the same way on both sides. The mirrored samples
carry the original's old log-probability (exact for a symmetric policy, an approximation the clip
bounds otherwise); the value loss, the KL that adapts the learning rate and the clip fraction are
the original samples' alone.

The mirror itself is the env's (``VecEnv.mirror``): a signed permutation of the observation and
one of the action, ``sign · x[..., source]``. Stored observations are normalised; they are
mirrored in physical units (un-normalised, mirrored, normalised again with the same statistics).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .normalizer import EmpiricalNormalizer


class SignedPermutation:
    """``sign · x[..., source]`` on torch tensors."""

    def __init__(self, source: np.ndarray, sign: np.ndarray, device: str) -> None:
        self.source = torch.as_tensor(np.asarray(source, dtype=np.int64), device=device)
        self.sign = torch.as_tensor(np.asarray(sign, dtype=np.float32), device=device)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., self.source] * self.sign.to(x.dtype)


class Mirror:
    """The mirror images of stored (normalised) observations and of actions."""

    def __init__(self, observation: tuple[np.ndarray, np.ndarray],
                 action: tuple[np.ndarray, np.ndarray], num_obs: int, num_actions: int,
                 normalizer: nn.Module, device: str) -> None:
        for what, (source, sign), size in (("observation", observation, num_obs),
                                           ("action", action, num_actions)):
            source = np.asarray(source)
            if (len(source) != size or len(sign) != size
                    or not np.array_equal(np.sort(source), np.arange(size))):
                raise ValueError(f"the {what} mirror is not a permutation of its {size} values")
            if not np.array_equal(source[source], np.arange(size)):
                raise ValueError(f"the {what} mirror applied twice is not the identity")
        self.observation = SignedPermutation(*observation, device)
        self.action = SignedPermutation(*action, device)
        self.normalizer = normalizer

    def observations(self, obs: torch.Tensor) -> torch.Tensor:
        """The mirror image of normalised observations ``obs`` [B, O], normalised alike."""
        norm = self.normalizer
        if not isinstance(norm, EmpiricalNormalizer):
            return self.observation(obs)
        scale = torch.sqrt(norm.var) + norm.eps
        return (self.observation(obs * scale + norm.mean) - norm.mean) / scale

    def actions(self, actions: torch.Tensor) -> torch.Tensor:
        return self.action(actions)
