"""A real workout for a device: matmul, host↔device copies and a small MLP step."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from .backend import ResolvedDevice


def _median_seconds(fn: Callable[[], None], sync: Callable[[], None], repeats: int) -> float:
    fn()  # warm up (allocations, kernel selection)
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return samples[len(samples) // 2]


def probe(device: ResolvedDevice, *, repeats: int = 10, obs_dim: int = 119,
          batch: int = 1024) -> dict[str, float]:
    """Time the operations a training step depends on; raises if the device cannot do them."""
    dev = torch.device(device.torch_device)
    sync = device.backend.synchronize
    results: dict[str, float] = {}

    a = torch.randn(512, 512, device=dev)
    b = torch.randn(512, 512, device=dev)
    seconds = _median_seconds(lambda: torch.mm(a, b), sync, repeats)
    results["matmul_512_ms"] = seconds * 1e3
    results["matmul_gflops"] = 2 * 512**3 / seconds / 1e9
    dtype = device.backend.autocast_dtype()
    # the mixed-precision product: about twice the float32 rate where it is native
    if dtype is not None:
        a16, b16 = a.to(dtype), b.to(dtype)
        seconds = _median_seconds(lambda: torch.mm(a16, b16), sync, repeats)
        results["matmul_autocast_gflops"] = 2 * 512**3 / seconds / 1e9

    host = torch.randn(batch, obs_dim)
    if dev.type != "cpu":
        host = host.pin_memory()
    on_device = host.to(dev)
    nbytes = host.numel() * host.element_size()
    h2d = _median_seconds(lambda: on_device.copy_(host, non_blocking=True), sync, repeats)
    d2h = _median_seconds(lambda: host.copy_(on_device, non_blocking=True), sync, repeats)
    results["h2d_ms"] = h2d * 1e3
    results["h2d_GBps"] = nbytes / h2d / 1e9
    results["d2h_ms"] = d2h * 1e3
    results["d2h_GBps"] = nbytes / d2h / 1e9

    mlp = torch.nn.Sequential(
        torch.nn.Linear(obs_dim, 512), torch.nn.ELU(),
        torch.nn.Linear(512, 256), torch.nn.ELU(),
        torch.nn.Linear(256, 128), torch.nn.ELU(),
        torch.nn.Linear(128, 22),
    ).to(dev)
    optimizer = torch.optim.Adam(mlp.parameters(), lr=1e-3)

    def train_step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = mlp(on_device).square().mean()
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        results["mlp_forward_ms"] = _median_seconds(lambda: mlp(on_device), sync, repeats) * 1e3
    results["mlp_train_step_ms"] = _median_seconds(train_step, sync, repeats) * 1e3
    check = torch.mm(a, b).sum().item()
    if check != check:  # NaN: the device computed garbage
        raise RuntimeError(f"matmul on {dev} returned NaN")
    return results
