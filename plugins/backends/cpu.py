"""The cpu backend: always available; gloo for torch.distributed."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

from primebot.pipeline.api import Availability, Backend, hookimpl

if TYPE_CHECKING:  # torch is imported when a backend is used, not when it is registered
    import torch


class CpuBackend(Backend):
    name = "cpu"
    collective = "gloo"

    def availability(self) -> Availability:
        return Availability(True)

    def device_count(self) -> int:
        return 1

    def device_name(self, index: int = 0) -> str:
        return platform.processor() or platform.machine() or "cpu"

    def torch_device(self, index: int = 0) -> str:
        return "cpu"

    def autocast_dtype(self) -> torch.dtype | None:
        import torch

        return torch.bfloat16

    def synchronize(self) -> None:
        """CPU work is synchronous."""


@hookimpl
def register_backends(register):
    register(CpuBackend())
