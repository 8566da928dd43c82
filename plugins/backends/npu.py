"""The npu backend: Huawei Ascend through torch_npu; hccl for torch.distributed.

torch_npu is imported lazily and guarded: on a machine without Ascend CANN
its import fails (and, with torch's device-backend autoload on, would break
``import torch`` itself; primebot turns autoload off in its package init).
A failed import makes the backend unavailable with the reason, never a crash.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import version
from types import ModuleType
from typing import TYPE_CHECKING

from primebot.pipeline.api import Availability, Backend, hookimpl

if TYPE_CHECKING:  # torch is imported when a backend is used, not when it is registered
    import torch


class NpuBackend(Backend):
    name = "npu"
    collective = "hccl"
    install_hint = (
        "install Ascend CANN (toolkit + kernels) for your NPU, `source "
        "/usr/local/Ascend/ascend-toolkit/set_env.sh`, then `pip install primebot[npu]` "
        f"or torch_npu built for torch {version('torch').split('+')[0]} exactly"
    )

    def __init__(self) -> None:
        self._module: ModuleType | None = None
        self._import_error: str | None = None

    def _torch_npu(self) -> ModuleType | None:
        if self._module is None and self._import_error is None:
            try:
                self._module = importlib.import_module("torch_npu")
            # any failure means "unavailable", with the reason
            except Exception as exc:  # noqa: BLE001
                self._import_error = f"importing torch_npu failed: {type(exc).__name__}: {exc}"
        return self._module

    def availability(self) -> Availability:
        import torch

        if self._torch_npu() is None:
            return Availability(False, self._import_error or "torch_npu is not installed")
        npu = getattr(torch, "npu", None)
        try:
            if npu is None or not npu.is_available():
                hint = (
                    " (ASCEND_RT_VISIBLE_DEVICES may hide them)"
                    if os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
                    else ""
                )
                return Availability(False, "torch_npu is installed but no NPU is visible" + hint)
        except Exception as exc:  # noqa: BLE001 - a broken CANN raises here
            return Availability(False, f"torch.npu.is_available() failed: {exc}")
        return Availability(True)

    def device_count(self) -> int:
        import torch

        return torch.npu.device_count() if self.availability().available else 0

    def device_name(self, index: int = 0) -> str:
        import torch

        return torch.npu.get_device_name(index)

    def autocast_dtype(self) -> torch.dtype | None:
        import torch

        return torch.float16

    def synchronize(self) -> None:
        import torch

        torch.npu.synchronize()


@hookimpl
def register_backends(register):
    register(NpuBackend())
