"""``ppo.rollout_mixed_precision`` and ``ppo.compile_update``: settled from the device when a run
starts, recorded in args.yaml, reproduced on resume; accelerators keep their behaviour."""

from __future__ import annotations

import pointmass_task
import pytest
import torch
import yaml
from tiny_ppo import NEEDS_CXX

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.ppo.config import COMPILE_MIN_ROWS, ROLLOUT_AUTOCAST_MIN_ENVS, PPOConfig
from primebot.pipeline.train.session import TrainRequest, resolve_config, run_training
from primebot.plugins.backends.cpu import CpuBackend


@pytest.mark.parametrize(("device_type", "mixed_precision", "num_envs", "rollout", "compiled"), [
    ("cpu", "on", 1024, "on", "on"),     # 1024 × 24 / 4 = 6144 samples per mini-batch
    # the default preset: 1536 samples, a 256-row forward; gains nothing
    ("cpu", "on", 256, "off", "off"),
    ("cpu", "on", 512, "on", "off"),     # 3072 samples
    ("cpu", "off", 1024, "off", "on"),   # a CPU without native bf16 samples in float32
    ("cuda", "on", 4096, "off", "off"),  # accelerators: float32 sampling, eager update, as before
    ("npu", "on", 4096, "off", "off"),
])
def test_auto_settles_from_the_device_and_the_mini_batch(device_type, mixed_precision, num_envs,
                                                         rollout, compiled):
    cfg = PPOConfig(mixed_precision=mixed_precision)
    reasons = cfg.settle_auto_switches(device_type, num_envs)
    assert (cfg.rollout_mixed_precision, cfg.compile_update) == (rollout, compiled)
    assert len(reasons) == 2 and str(num_envs * 24 // 4) in reasons[1]
    assert (COMPILE_MIN_ROWS, ROLLOUT_AUTOCAST_MIN_ENVS) == (4096, 512)


def test_an_explicit_choice_is_kept():
    cfg = PPOConfig(mixed_precision="on", rollout_mixed_precision="off", compile_update="on")
    assert cfg.settle_auto_switches("cpu", 8) == []
    assert (cfg.rollout_mixed_precision, cfg.compile_update) == ("off", "on")


def _host():
    return plugins.load_plugins(extra=[("pointmass", pointmass_task)])


@pytest.mark.parametrize("key", ["rollout_mixed_precision", "compile_update", "mixed_precision"])
def test_a_bad_value_is_a_config_error_naming_the_key(key):
    with pytest.raises(ConfigError, match=f"ppo.{key} must be auto, on or off"):
        resolve_config(_host().registry, TrainRequest(task="pointmass", sets=[f"ppo.{key}=fast"]),
                       "cpu")


@NEEDS_CXX
def test_the_settled_switches_are_recorded_and_a_resume_keeps_them(monkeypatch, tmp_path):
    # 512 envs × 16 steps / 2 mini-batches = 4096 samples: both switch on by themselves; a real
    # compile of the pointmass networks (a few seconds), and the rollout samples in bf16
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "avx512_bf16")
    host = _host()
    first = run_training(host.registry, TrainRequest(
        task="pointmass", num_envs=512, iterations=2, seed=3, log_dir=str(tmp_path),
        progress=False))
    ppo = first.runner.ppo
    assert ppo.rollout_autocast_dtype == torch.bfloat16 and ppo.compile_failure is None
    assert ppo.nonfinite == [] and all(torch.isfinite(p).all()
                                       for p in ppo.actor_critic.parameters())
    settled = yaml.safe_load((first.run_dir / "args.yaml").read_text())["config"]["ppo"]
    assert (settled["rollout_mixed_precision"], settled["compile_update"]) == ("on", "on")

    # resumed where bf16 is not native: the run keeps what it started with
    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: "")
    resumed = run_training(host.registry,
                           TrainRequest(resume=str(first.run_dir), iterations=3, progress=False))
    assert resumed.result.iteration == 3
    assert resumed.runner.ppo.rollout_autocast_dtype == torch.bfloat16
    assert (
        resumed.runner.cfg.ppo.compile_update == "on" and resumed.runner.ppo.compile_failure is None
    )

    # how the update runs may change on resume (a machine without a C++ compiler): recorded
    again = run_training(host.registry,
                         TrainRequest(resume=str(first.run_dir), iterations=4, progress=False,
                                                     sets=["ppo.compile_update=off"]))
    assert again.result.iteration == 4 and again.runner.cfg.ppo.compile_update == "off"
    resumes = yaml.safe_load((first.run_dir / "args.yaml").read_text())["resumes"]
    assert "ppo.compile_update=off" in str(resumes[-1])


def test_a_small_run_on_a_cpu_settles_an_eager_update(tmp_path):
    out = run_training(_host().registry, TrainRequest(
        task="pointmass", num_envs=8, iterations=1, seed=3, log_dir=str(tmp_path), progress=False))
    assert (
        yaml.safe_load((out.run_dir / "args.yaml").read_text())["config"]["ppo"]["compile_update"]
        == "off"
    )
