"""Reduced precision in the PPO update: on where the hardware runs it natively, recorded,
reproduced.

The CPU's own flags decide ``ppo.mixed_precision=auto`` on a real run; the tests that need one
answer or the other patch the cpu backend's ``native_autocast`` so they hold on any CI machine.
"""

from __future__ import annotations

import pointmass_task
import pytest
import torch
import yaml

from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.train.session import TrainRequest, resolve_mixed_precision, run_training
from primebot.pipeline.train.train_config import TrainConfig
from primebot.plugins.backends.cpu import CpuBackend, native_bf16_features

ZEN4_FLAGS = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_bf16 avx512_vnni\n"
OLDER_X86_FLAGS = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n"
ARM_FEATURES = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes bf16 i8mm\n"


def test_native_bf16_is_read_from_the_cpu_flags():
    assert native_bf16_features(ZEN4_FLAGS) == ["avx512_bf16"]
    assert native_bf16_features(ZEN4_FLAGS.replace("avx512_vnni", "amx_bf16 amx_tile")) == [
        "avx512_bf16",
        "amx_bf16",
    ]
    assert native_bf16_features(ARM_FEATURES) == ["bf16"]
    assert native_bf16_features(OLDER_X86_FLAGS) == []
    assert native_bf16_features("") == []


@pytest.mark.parametrize(("native", "settled"), [("avx512_bf16", "on"), ("", "off")])
def test_auto_settles_on_exactly_where_the_cpu_is_native(monkeypatch, native, settled):
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: native)
    cfg = TrainConfig(task="pointmass")
    why = resolve_mixed_precision(cfg, CpuBackend())
    assert cfg.ppo.mixed_precision == settled
    assert (native in why) if native else why.startswith("off")


def test_an_explicit_choice_is_kept(monkeypatch):
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "")
    cfg = TrainConfig(task="pointmass")
    cfg.ppo.mixed_precision = "on"
    resolve_mixed_precision(cfg, CpuBackend())
    assert cfg.ppo.mixed_precision == "on"


def test_accelerators_stay_native_by_default():
    class Accelerator(CpuBackend):
        name = "fake"

        def native_autocast(self) -> str:  # the Backend default, not the cpu override
            return super(CpuBackend, self).native_autocast()

    assert Accelerator().native_autocast() == "accelerator"


def _train(tmp_path, **request):
    host = plugins.load_plugins(extra=[("pointmass", pointmass_task)])
    return run_training(host.registry, TrainRequest(progress=False, **request))


def test_the_settled_choice_is_recorded_finite_and_reproduced_on_resume(monkeypatch, tmp_path):
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "avx512_bf16")
    first = _train(tmp_path, task="pointmass", num_envs=8, iterations=2, seed=5,
                   log_dir=str(tmp_path))
    assert first.runner.ppo.autocast_dtype == torch.bfloat16
    assert all(torch.isfinite(p).all() for p in first.runner.ppo.actor_critic.parameters())
    assert not first.runner.ppo.nonfinite
    args = yaml.safe_load((first.run_dir / "args.yaml").read_text())
    assert args["config"]["ppo"]["mixed_precision"] == "on"
    assert args["run"]["native_autocast"] == "avx512_bf16"

    # resumed on a machine without native bf16: the run keeps the precision it trained with
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "")
    resumed = _train(tmp_path, resume=str(first.run_dir), iterations=3)
    assert resumed.result.iteration == 3
    assert resumed.runner.ppo.autocast_dtype == torch.bfloat16


def test_a_cpu_without_native_bf16_trains_in_float32(monkeypatch, tmp_path):
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "")
    out = _train(tmp_path, task="pointmass", num_envs=8, iterations=1, seed=5,
                 log_dir=str(tmp_path))
    assert out.runner.ppo.autocast_dtype is None
    assert (
        yaml.safe_load((out.run_dir / "args.yaml").read_text())["config"]["ppo"]["mixed_precision"]
        == "off"
    )
