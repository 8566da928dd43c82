"""Multi-process training with torchrun and torch.distributed (docs/architecture.md §4).

``torchrun --nproc_per_node=K`` starts K ranks; each has its own environments
(env seed + rank) and device (index = LOCAL_RANK on accelerators). Gradients,
normaliser statistics and the KL of the adaptive learning rate are summed
with the backend's collective (gloo on cpu, nccl on cuda, hccl on npu), so
every rank holds the same parameters. Rank 0 alone writes files.
"""

from __future__ import annotations

import datetime
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in a (possibly single-process) job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that writes files, logs and shows progress."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over ranks in place and return it."""
        if self.enabled:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Copy rank 0's parameters and buffers to every rank."""
        if self.enabled:
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor.data, src=0)

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (tensors, numbers, strings, containers), in rank order, on every
        rank."""
        if not self.enabled:
            return [obj]
        # Serialised with torch.save and read back with weights_only: tensors inside
        # all_gather_object's own pickling fail to load in some torch releases.
        buf = io.BytesIO()
        torch.save(obj, buf)
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, buf.getvalue())
        return [torch.load(io.BytesIO(data), weights_only=True) for data in out]

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def context_from_env(environ: Mapping[str, str] | None = None) -> DistContext:
    """Read RANK / WORLD_SIZE / LOCAL_RANK as torchrun sets them (single process when absent)."""
    env = os.environ if environ is None else environ
    world = int(env.get("WORLD_SIZE", "1"))
    rank = int(env.get("RANK", "0"))
    local = int(env.get("LOCAL_RANK", str(rank)))
    return DistContext(rank, world, local)


def init_distributed(collective: str, environ: Mapping[str, str] | None = None) -> DistContext:
    """Join the process group torchrun described (env:// rendezvous); no-op for one process.

    ``PRIMEBOT_DIST_TIMEOUT_S`` (default 1800) bounds how long a collective waits for a lost rank.
    """
    env = os.environ if environ is None else environ
    ctx = context_from_env(env)
    if ctx.enabled and not dist.is_initialized():
        # A rank that died leaves the others waiting in a collective; this bounds the wait.
        timeout = datetime.timedelta(seconds=float(env.get("PRIMEBOT_DIST_TIMEOUT_S", "1800")))
        dist.init_process_group(backend=collective, init_method="env://", rank=ctx.rank,
                                world_size=ctx.world_size, timeout=timeout)
    return ctx


def shutdown_distributed() -> None:
    """Leave the process group; every rank must call this."""
    if dist.is_available() and dist.is_initialized():
        # Rank 0 hosts the rendezvous store: if it tears down and exits while another
        # rank is still talking to it, gloo aborts that rank ("terminate called ...").
        dist.barrier()
        dist.destroy_process_group()
