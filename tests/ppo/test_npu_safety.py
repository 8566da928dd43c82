"""NPU safety: the training step runs no torch random/distribution op with host noise,
and mixed precision touches the update only (and the rollout's forward where asked)."""

from __future__ import annotations

import pointmass_task
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from primebot.pipeline.train.on_policy_runner import OnPolicyRunner
from primebot.pipeline.train.settings_layers import apply_task_defaults
from primebot.pipeline.train.train_config import TrainConfig
from primebot.pipeline.train.transfer import StepTransfer

RANDOM_OPS = {
    "normal", "normal_", "randn", "randn_like", "rand", "rand_like", "uniform", "uniform_",
    "bernoulli",
    "bernoulli_", "multinomial", "randint", "randint_like", "randperm", "exponential_",
    "geometric_",
    "cauchy_", "log_normal_", "random_", "poisson", "native_dropout", "_standard_gamma",
    "_sample_dirichlet",
    "binomial",
}


class OpRecorder(TorchDispatchMode):
    """Records (op name, output dtypes) of every aten op dispatched."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, tuple[torch.dtype, ...]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        dtypes = tuple(o.dtype for o in outs if isinstance(o, torch.Tensor))
        self.ops.append((func.overloadpacket.__name__, dtypes))
        return out

    def names(self) -> set[str]:
        return {name for name, _ in self.ops}


def _runner(noise: str = "host", mixed_precision: str = "auto",
            rollout_mixed_precision: str = "auto") -> OnPolicyRunner:
    cfg = TrainConfig(task="pointmass", num_envs=8, iterations=1, seed=3)
    apply_task_defaults(cfg, pointmass_task.POINTMASS)
    cfg.runner.noise = noise
    cfg.ppo.mixed_precision = mixed_precision
    cfg.ppo.rollout_mixed_precision = rollout_mixed_precision
    env = pointmass_task.PointMassEnv(cfg.num_envs, seed=3)
    return OnPolicyRunner(env, cfg, autocast_dtype=torch.bfloat16, progress=False)


def _record_training_step(runner: OnPolicyRunner) -> tuple[OpRecorder, OpRecorder]:
    collect, update = OpRecorder(), OpRecorder()
    with collect:
        runner.collect()
    with update:
        runner.ppo.update()
    return collect, update


def test_host_noise_training_step_runs_no_random_or_distribution_op_on_the_device():
    collect, update = _record_training_step(_runner("host"))
    assert collect.ops and update.ops  # the recorder really saw the step
    assert not (collect.names() | update.names()) & RANDOM_OPS


def test_device_noise_draws_on_the_device_rng():
    # The switch works, and the recorder would catch a random op.
    collect, update = _record_training_step(_runner("device"))
    assert "randn" in collect.names() or "normal_" in collect.names()
    assert "randperm" in update.names()


def test_an_unsettled_auto_leaves_mixed_precision_off_on_cpu():
    # new runs settle auto from the CPU's flags (test_mixed_precision.py); a runner handed "auto"
    # directly, as runs recorded before that, keeps the old meaning
    runner = _runner("host", "auto")
    assert runner.ppo.autocast_dtype is None
    collect, update = _record_training_step(runner)
    assert all(torch.bfloat16 not in dtypes for _, dtypes in collect.ops + update.ops)


def test_mixed_precision_when_on_is_confined_to_the_update_unless_the_rollout_asks():
    collect, update = _record_training_step(_runner("host", "on", "off"))
    assert all(torch.bfloat16 not in dtypes for _, dtypes in collect.ops)
    assert any(torch.bfloat16 in dtypes for _, dtypes in update.ops)
    # the rollout's forward autocasts too; what it stores (actions, log-probs, values) stays float32
    runner = _runner("host", "on", "on")
    collect, _ = _record_training_step(runner)
    assert any(torch.bfloat16 in dtypes for _, dtypes in collect.ops)
    storage = runner.ppo.storage
    assert {storage.actions.dtype, storage.log_probs.dtype, storage.values.dtype} == {torch.float32}


class CopyCounter(TorchDispatchMode):
    """Counts copy_ ops that read the host staging buffer or write the host action buffer."""

    def __init__(self, stage_ptr: int, actions_ptr: int) -> None:
        super().__init__()
        self.stage_ptr, self.actions_ptr = stage_ptr, actions_ptr
        self.host_to_device = self.device_to_host = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ == "copy_":
            dst, src = args[0], args[1]
            self.host_to_device += src.data_ptr() == self.stage_ptr
            self.device_to_host += dst.data_ptr() == self.actions_ptr
        return func(*args, **(kwargs or {}))


def test_one_host_to_device_and_one_device_to_host_copy_per_step():
    runner = _runner("host")
    env = runner.env
    # Give the "device" its own buffer, as on cuda/npu, so that the copy is visible on cpu.
    runner.transfer = StepTransfer(env.num_envs, env.num_obs, env.num_critic_obs, env.num_actions,
                                   "cpu",
                                   share_host_buffer=False)
    runner.transfer.stage(*env.reset())
    counter = CopyCounter(runner.transfer.host.data_ptr(), runner.transfer.actions_host.data_ptr())
    with counter:
        runner.collect()
    steps = runner.cfg.ppo.num_steps_per_env
    assert counter.host_to_device == steps + 1  # + the last observations, for the bootstrap value
    assert counter.device_to_host == steps
