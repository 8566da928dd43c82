"""Device backends and device resolution (docs/architecture.md §4).

Resolution order: ``--device`` > ``PRIMEBOT_DEVICE`` > ``CUDA_VISIBLE_DEVICES``
(non-empty) > ``ASCEND_RT_VISIBLE_DEVICES`` (non-empty) > ``cpu``. A device
asked for explicitly (flag or PRIMEBOT_DEVICE) that is unavailable is an
error saying what to install; one inferred from the visibility variables
falls back to cpu with one log line.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, DeviceUnavailableError

if TYPE_CHECKING:
    import torch

    from ..registry import Registry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Availability:
    """Whether a backend can be used here, and why not when it cannot."""

    available: bool
    reason: str = ""


class Backend(ABC):
    """A device family the policy can run on. Subclasses are registered as instances."""

    name: str
    """Device type as in torch device strings: ``cpu``, ``cuda``, ``npu``."""
    collective: str
    """torch.distributed backend: ``gloo``, ``nccl`` or ``hccl``."""
    install_hint: str = ""
    """What to install when the backend is unavailable."""

    @abstractmethod
    def availability(self) -> Availability:
        """Whether the backend works here; never raises."""

    @abstractmethod
    def device_count(self) -> int:
        """Number of devices visible (0 when unavailable)."""

    @abstractmethod
    def device_name(self, index: int = 0) -> str:
        """Human-readable name of device ``index``."""

    def torch_device(self, index: int = 0) -> str:
        """The torch device string, e.g. ``cuda:0``."""
        return f"{self.name}:{index}"

    @abstractmethod
    def autocast_dtype(self) -> torch.dtype | None:
        """The dtype mixed precision uses on this backend, or None if it has none."""

    def native_autocast(self) -> str:
        """Why mixed precision runs natively here (the hardware feature), or '' where it would be
        emulated and slow. ``ppo.mixed_precision=auto`` turns it on exactly where this is non-empty;
        an accelerator with an autocast dtype is native unless its backend says otherwise."""
        return "accelerator" if self.autocast_dtype() is not None else ""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all queued work on the backend's devices."""


def dtype_name(dtype: torch.dtype | None) -> str:
    """``bfloat16`` for ``torch.bfloat16``; ``none`` for no dtype (tables, logs, args.yaml)."""
    return str(dtype).replace("torch.", "") if dtype is not None else "none"


@dataclass(frozen=True)
class ResolvedDevice:
    """The outcome of device resolution."""

    backend: Backend
    index: int
    source: str
    """Where the choice came from: ``--device``, ``PRIMEBOT_DEVICE``, ``CUDA_VISIBLE_DEVICES``, ...
    or ``default``."""

    @property
    def torch_device(self) -> str:
        return self.backend.torch_device(self.index)

    def __str__(self) -> str:
        return self.torch_device


def parse_device(text: str) -> tuple[str, int]:
    """Split ``cuda:1`` into (``cuda``, 1); a bare ``cuda`` means index 0."""
    kind, _, index = text.strip().lower().partition(":")
    if not kind:
        raise ConfigError(f"empty device string {text!r}",
                          fix="use cpu, cuda, cuda:1, npu or npu:0")
    if index and not index.isdigit():
        raise ConfigError(f"device index in {text!r} is not a number", fix="use e.g. cuda:0")
    return kind, int(index or 0)


def _requested(explicit: str | None, environ: Mapping[str, str]) -> tuple[str, str, bool]:
    """(device text, source, strict) in docs/architecture.md §4 order; strict means no fallback."""
    if explicit:
        return explicit, "--device", True
    if environ.get("PRIMEBOT_DEVICE", "").strip():
        return environ["PRIMEBOT_DEVICE"], "PRIMEBOT_DEVICE", True
    if environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return "cuda", "CUDA_VISIBLE_DEVICES", False
    if environ.get("ASCEND_RT_VISIBLE_DEVICES", "").strip():
        return "npu", "ASCEND_RT_VISIBLE_DEVICES", False
    return "cpu", "default", True


def resolve_device(
    registry: Registry,
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResolvedDevice:
    """Pick the device backend per docs/architecture.md §4 from the backends in ``registry``."""
    environ = os.environ if environ is None else environ
    text, source, strict = _requested(explicit, environ)
    kind, index = parse_device(text)
    backends = registry.items("backends")
    backend = backends.get(kind)
    if backend is None:
        raise DeviceUnavailableError(
            f"no device backend named {kind!r} (from {source}); registered: "
            f"{', '.join(backends) or 'none'}",
            fix="use one of the registered backends, or install the plugin that provides it",
        )
    status = backend.availability()
    if status.available and index < backend.device_count():
        return ResolvedDevice(backend, index, source)
    reason = status.reason if not status.available else (
        f"device index {index} requested but only {backend.device_count()} {kind} device(s) visible"
    )
    if strict:
        raise DeviceUnavailableError(
            f"device {text!r} (from {source}) is not available: {reason}",
            fix=backend.install_hint or "choose another device with --device",
        )
    log.warning("%s is set but %s is not available (%s); falling back to cpu", source, kind, reason)
    return ResolvedDevice(backends["cpu"], 0, f"{source} (fallback)")
