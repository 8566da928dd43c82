"""The cpu backend: always available; gloo for torch.distributed."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path
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

    def native_autocast(self) -> str:
        """The CPU's bfloat16 instructions, if it has any (docs/devices.md, "Mixed precision")."""
        return ", ".join(native_bf16_features())

    def synchronize(self) -> None:
        """CPU work is synchronous."""


NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""x86 CPU flags (as /proc/cpuinfo spells them) under which bf16 matrix products run natively:
AVX512-BF16 dot products (AMD Zen 4+, Intel Cooper Lake+) and AMX tiles (Intel Sapphire Rapids+)."""

ARM_BF16_SYSCTL = "hw.optional.arm.FEAT_BF16"
"""macOS's name for the Armv8.6 BF16 extension (Apple M2 and later)."""


def native_bf16_features(cpuinfo: str | None = None) -> list[str]:
    """The CPU features that make bfloat16 matrix products native here; [] where they would be
    emulated.

    Linux reads the flags of ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features: bf16``), macOS asks
    ``sysctl``; elsewhere nothing is claimed. ``cpuinfo`` replaces the file's text (tests).
    """
    if cpuinfo is None and platform.system() == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", ARM_BF16_SYSCTL], capture_output=True, text=True,
                                 timeout=5)
        except (OSError, subprocess.SubprocessError):
            return []
        return ["FEAT_BF16"] if out.stdout.strip() == "1" else []
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return []
    words: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            words.update(value.split())
    found = [flag for flag in NATIVE_BF16_FLAGS if flag in words]
    return found or (["bf16"] if "bf16" in words else [])


@hookimpl
def register_backends(register):
    register(CpuBackend())
