"""The ``smoke`` stage: prove the chosen device really trains before the long run starts.

Seed 003's step 3 ("small run, confirm the device is npu:0, [DONE]"): the
device probe (matmul, host↔device copies, an MLP step), then two PPO
iterations with a few environments through the same ``run_training`` the
train stage uses, then a check that the policy, its optimiser state and the
rollout storage are on that device (an accelerator that silently fell back
to the CPU is the failure this catches).
"""

from __future__ import annotations

import logging
import tempfile
from typing import Any

from primebot.pipeline.api import DeviceUnavailableError, StageContext, StageResult

_QUIET_TASK_SETS = {"tracking": ("task.log_reward_terms=false",)}
"""Task settings that keep the smoke test's output short (the train stage prints the reward
table)."""


def _misplaced(tensors: dict[str, Any], device: Any) -> list[str]:
    """Names of tensors not on ``device`` (same type; same index when both say one)."""
    bad = []
    for name, tensor in tensors.items():
        where = tensor.device
        if where.type != device.type or (device.index is not None
                                         and where.index not in (None, device.index)):
            bad.append(f"{name} on {where}")
    return bad


def learner_tensors(ppo: Any) -> dict[str, Any]:
    """The tensors a PPO iteration works on: parameters, normaliser buffers, optimiser state,
    rollout storage."""
    import torch

    tensors: dict[str, Any] = {}
    for name, param in ppo.actor_critic.named_parameters():
        tensors[f"policy.{name}"] = param
    for name, buf in ppo.obs_normalizer.named_buffers():
        tensors[f"obs_normalizer.{name}"] = buf
    for i, state in enumerate(ppo.optimizer.state.values()):
        for key, value in state.items():
            # Adam's step counter may live on the host
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                tensors[f"optimizer.{i}.{key}"] = value
    for name, value in vars(ppo.storage).items():
        if isinstance(value, torch.Tensor):
            tensors[f"storage.{name}"] = value
    return tensors


def smoke(ctx: StageContext) -> StageResult:
    """Probe the device and train two iterations on it; fail with the fix if it cannot."""
    import torch

    from primebot.pipeline.api import TrainRequest, probe_device, run_training, shutdown_distributed

    s = ctx.settings
    resolved = ctx.resolve_device()  # DeviceUnavailableError carries what to install
    ctx.echo(f"      device {resolved.torch_device} "
             f"({resolved.backend.device_name(resolved.index)}, from {resolved.source})")
    timings = probe_device(resolved, repeats=3)
    ctx.echo(f"      probe: matmul {timings['matmul_gflops']:.1f} GFLOP/s, h2d "
             f"{timings['h2d_GBps']:.2f} GB/s, "
             f"MLP train step {timings['mlp_train_step_ms']:.2f} ms")
    with tempfile.TemporaryDirectory(prefix="primebot-smoke-") as scratch:
        request = TrainRequest(
            motion=ctx.motion_path(), task=s.task, robot=s.robot, device=resolved.torch_device,
            num_envs=s.smoke_num_envs, iterations=s.smoke_iterations, seed=s.seed,
            sets=[*s.train_sets, f"ppo.num_steps_per_env={s.steps_per_env}",
                  "ppo.num_mini_batches=1",
                  *_QUIET_TASK_SETS.get(s.task, ())],
            log_dir=scratch, run_name="smoke", progress=False,
        )
        # The scratch run's own "run directory: /tmp/…" line would only confuse.
        training_log = logging.getLogger(run_training.__module__)
        level = training_log.level
        training_log.setLevel(logging.WARNING)
        try:
            outcome = run_training(ctx.registry, request)
        finally:
            training_log.setLevel(level)
            shutdown_distributed()
    ppo = outcome.runner.ppo
    device = torch.device(resolved.torch_device)
    tensors = learner_tensors(ppo)
    misplaced = _misplaced(tensors, device)
    if misplaced:
        raise DeviceUnavailableError(
            f"training on {device} left {len(misplaced)} tensor(s) elsewhere: "
            f"{', '.join(misplaced[:5])}",
            fix="report this as a bug with 'primebot devices --probe' output; meanwhile use "
                "--device cpu",
        )
    if outcome.result.iteration != s.smoke_iterations:
        raise RuntimeError(f"smoke training stopped at iteration {outcome.result.iteration} of "
                           f"{s.smoke_iterations}")
    ctx.echo(f"[DONE] smoke on {resolved.torch_device}")
    return StageResult(
        summary={
            "device": resolved.torch_device,
            "device_name": resolved.backend.device_name(resolved.index),
            "iterations": s.smoke_iterations,
            "envs": s.smoke_num_envs,
            "tensors_checked": len(tensors),
            "matmul_gflops": round(timings["matmul_gflops"], 1),
            "mlp_train_step_ms": round(timings["mlp_train_step_ms"], 2),
            "probe": {key: round(value, 4) for key, value in timings.items()},
        },
        message=f"{s.smoke_iterations} PPO iterations x {s.smoke_num_envs} envs on "
                f"{resolved.torch_device}; "
                f"{len(tensors)} policy/optimiser/rollout tensors on the device",
    )
