"""Empirical observation normalisation as a torch module (exportable into ONNX)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

Reducer = Callable[[torch.Tensor], torch.Tensor]
"""Sums a tensor over distributed ranks in place and returns it (identity in a single process)."""


class EmpiricalNormalizer(nn.Module):
    """y = (x − mean) / (std + eps), with mean/var the running statistics of every x seen.

    Statistics are buffers, so they travel in ``state_dict`` and in an ONNX
    graph as constants. ``update`` merges a batch with Chan's parallel formula;
    with ``reduce`` the batch sums of all ranks are merged, keeping every rank's
    normaliser identical.
    """

    def __init__(self, size: int, eps: float = 1e-2) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / (torch.sqrt(self.var) + self.eps)

    @torch.no_grad()
    def update(self, x: torch.Tensor, reduce: Reducer | None = None) -> None:
        """Fold the batch ``x`` [B, size] into the running mean and variance."""
        stats = torch.cat([x.sum(0), (x * x).sum(0)]).to(torch.float64)
        n = torch.tensor(float(x.shape[0]), dtype=torch.float64, device=x.device)
        if reduce is not None:
            stats, n = reduce(stats), reduce(n)
        size = self.mean.shape[0]
        batch_mean = stats[:size] / n
        batch_var = (stats[size:] / n - batch_mean * batch_mean).clamp_min(0.0)
        total = self.count + n
        delta = batch_mean - self.mean.to(torch.float64)
        new_mean = self.mean + (delta * n / total).to(self.mean.dtype)
        m2 = (
            self.var.to(torch.float64) * self.count
            + batch_var * n
            + delta * delta * self.count * n / total
        )
        self.mean.copy_(new_mean)
        self.var.copy_((m2 / total).to(self.var.dtype))
        self.count.copy_(total)
