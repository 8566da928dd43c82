"""The cuda backend: NVIDIA GPUs through torch.cuda; nccl for torch.distributed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from primebot.pipeline.api import Availability, Backend, hookimpl

if TYPE_CHECKING:  # torch is imported when a backend is used, not when it is registered
    import torch


class CudaBackend(Backend):
    name = "cuda"
    collective = "nccl"
    install_hint = (
        "install a CUDA build of torch (see https://pytorch.org/get-started/locally/) "
        "and an NVIDIA driver, then check `nvidia-smi`"
    )

    def availability(self) -> Availability:
        import torch

        if not torch.backends.cuda.is_built():
            return Availability(False, f"this torch ({torch.__version__}) was built without CUDA")
        if not torch.cuda.is_available():
            return Availability(False,
                                "no CUDA device is visible (driver missing or CUDA_VISIBLE_DEVICES "
                                "hides them)")
        return Availability(True)

    def device_count(self) -> int:
        import torch

        return torch.cuda.device_count() if self.availability().available else 0

    def device_name(self, index: int = 0) -> str:
        import torch

        return torch.cuda.get_device_name(index)

    def autocast_dtype(self) -> torch.dtype | None:
        import torch

        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()


@hookimpl
def register_backends(register):
    register(CudaBackend())
