"""The per-step host↔device traffic of the collection loop (docs/architecture.md §3).

One flat float32 host buffer holds observations | critic observations |
exploration noise, each a contiguous [N, ·] view, so a single copy moves all
three to the device; actions come back through one host buffer. Both host
buffers are page-locked when an accelerator runtime allows (asynchronous,
faster copies). On cpu the host buffer *is* the device buffer: no copy at all.
"""

from __future__ import annotations

import numpy as np
import torch


def host_buffer(numel: int, pinned: bool) -> torch.Tensor:
    """A float32 host buffer, page-locked when asked and possible."""
    if pinned:
        try:
            return torch.empty(numel, dtype=torch.float32, pin_memory=True)
        except RuntimeError:  # no accelerator runtime to pin with
            pass
    return torch.empty(numel, dtype=torch.float32)


class StepTransfer:
    """Preallocated staging for one environment step: write numpy in, get device tensors out."""

    def __init__(
        self,
        num_envs: int,
        num_obs: int,
        num_critic_obs: int,
        num_actions: int,
        device: str,
        *,
        host_noise: bool = True,
        share_host_buffer: bool | None = None,
    ) -> None:
        """``share_host_buffer`` defaults to True on cpu (the device can read host memory
        directly)."""
        n = num_envs
        self._shapes = ((n, num_obs), (n, num_critic_obs),
                        (n, num_actions) if host_noise else (n, 0))
        total = sum(a * b for a, b in self._shapes)
        on_host = torch.device(device).type == "cpu"
        share = on_host if share_host_buffer is None else share_host_buffer
        self.host = host_buffer(total, pinned=not on_host)
        self.device_buffer = self.host if share else torch.empty(total, dtype=torch.float32,
                                                                 device=device)
        host_views = self._split(self.host)
        self.obs: np.ndarray = host_views[0].numpy()
        """[N, O] host view: write the step's observations here."""
        self.critic_obs: np.ndarray = host_views[1].numpy()
        """[N, P] host view for the critic observations."""
        self.noise: np.ndarray | None = host_views[2].numpy() if host_noise else None
        """[N, A] host view for standard-normal noise (None when noise is drawn on the device)."""
        self._device_views = self._split(self.device_buffer)
        self.actions_host = host_buffer(n * num_actions, pinned=not on_host).view(n, num_actions)
        self.actions: np.ndarray = self.actions_host.numpy()
        """[N, A] host view of the last actions brought back."""

    def _split(self, flat: torch.Tensor) -> list[torch.Tensor]:
        views, offset = [], 0
        for rows, cols in self._shapes:
            views.append(flat[offset:offset + rows * cols].view(rows, cols))
            offset += rows * cols
        return views

    def stage(self, obs: np.ndarray, critic_obs: np.ndarray) -> None:
        """Copy the environment's observations into the host buffer."""
        self.obs[...] = obs
        self.critic_obs[...] = critic_obs

    def to_device(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The one host→device copy of a step: (obs, critic_obs, noise or None) on the device."""
        if self.device_buffer is not self.host:
            self.device_buffer.copy_(self.host, non_blocking=True)
        obs, critic_obs, noise = self._device_views
        return obs, critic_obs, (noise if self.noise is not None else None)

    def actions_to_host(self, actions: torch.Tensor) -> np.ndarray:
        """The one device→host copy of a step; returns the host view (valid until the next call)."""
        self.actions_host.copy_(actions)
        return self.actions
