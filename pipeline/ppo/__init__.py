"""PPO in the rsl_rl shape: algorithm (verbs), storage (buffers), networks, normaliser.

NPU-safe by construction (docs/architecture.md §4): no ``torch.distributions``; Gaussian
log-prob, entropy and KL are closed-form (``gaussian``); exploration noise
arrives from the host with the observations unless the device RNG is chosen.
"""

from __future__ import annotations

from .algorithm import PPO
from .config import PolicyConfig, PPOConfig
from .networks import ActorCritic
from .normalizer import EmpiricalNormalizer
from .storage import RolloutStorage

__all__ = [
    "PPO",
    "ActorCritic",
    "EmpiricalNormalizer",
    "PPOConfig",
    "PolicyConfig",
    "RolloutStorage",
]
