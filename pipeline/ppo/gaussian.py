"""Closed-form diagonal Gaussian: log-probability, entropy and KL divergence.

Written out instead of ``torch.distributions.Normal`` because the Ascend
backend lacks several of the fused ops that class dispatches to (seed 000):
only elementwise arithmetic, ``log``/``exp`` and a sum over the last axis run
on the device here.
"""

from __future__ import annotations

import math

import torch

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
"""log √(2π), the per-dimension normalising constant of the Gaussian density."""


def log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log N(actions | mean, exp(log_std)²) summed over the action axis → [...]."""
    z = (actions - mean) * torch.exp(-log_std)
    return (-0.5 * z * z - log_std - LOG_SQRT_2PI).sum(dim=-1)


def entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Differential entropy Σ (½ + log √(2π) + log σ) over the action axis → [...]."""
    return (log_std + (0.5 + LOG_SQRT_2PI)).sum(dim=-1)


def kl_divergence(
    mean_p: torch.Tensor, log_std_p: torch.Tensor, mean_q: torch.Tensor, log_std_q: torch.Tensor
) -> torch.Tensor:
    """KL(p ‖ q) of two diagonal Gaussians, summed over the action axis → [...].

    Per dimension: log(σq/σp) + (σp² + (μp − μq)²) / (2σq²) − ½.
    """
    var_p = torch.exp(2.0 * log_std_p)
    var_q = torch.exp(2.0 * log_std_q)
    diff = mean_p - mean_q
    return (log_std_q - log_std_p + (var_p + diff * diff) / (2.0 * var_q) - 0.5).sum(dim=-1)
