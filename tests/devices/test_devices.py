"""Device resolution order (docs/architecture.md §4) and the backends' behaviour on a machine
without a GPU (a GPU machine is made to look like one where a test needs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from subprocess_env import pythonpath_with

from primebot.pipeline.api import Availability
from primebot.pipeline.cli import main
from primebot.pipeline.devices.backend import parse_device, resolve_device
from primebot.pipeline.errors import ConfigError, DeviceUnavailableError
from primebot.pipeline.hooks.host import load_plugins


@pytest.fixture
def registry(clean_env):
    return load_plugins(entry_points_=[]).registry


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine as CI sees it: no CUDA device, even where the tests run beside a GPU."""
    from primebot.plugins.backends.cuda import CudaBackend

    monkeypatch.setattr(CudaBackend, "availability",
                        lambda self: Availability(False, "no CUDA device is visible (test)"))


def test_default_is_cpu(registry):
    resolved = resolve_device(registry, environ={})
    assert (resolved.torch_device, resolved.source) == ("cpu", "default")


def test_flag_wins_over_every_variable(registry):
    environ = {"PRIMEBOT_DEVICE": "npu", "CUDA_VISIBLE_DEVICES": "0",
               "ASCEND_RT_VISIBLE_DEVICES": "0"}
    assert resolve_device(registry, "cpu", environ=environ).source == "--device"


def test_primebot_device_wins_over_visibility_variables(registry):
    environ = {"PRIMEBOT_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": "0",
               "ASCEND_RT_VISIBLE_DEVICES": "0"}
    assert resolve_device(registry, environ=environ).source == "PRIMEBOT_DEVICE"


def test_cuda_visible_devices_falls_back_to_cpu_with_one_log_line(registry, no_gpu, caplog):
    # No GPU: the inferred cuda request must fall back, not fail.
    environ = {"CUDA_VISIBLE_DEVICES": "0", "ASCEND_RT_VISIBLE_DEVICES": "0"}
    with caplog.at_level("WARNING"):
        resolved = resolve_device(registry, environ=environ)
    assert resolved.torch_device == "cpu" and resolved.source == "CUDA_VISIBLE_DEVICES (fallback)"
    assert len([r for r in caplog.records if "falling back to cpu" in r.message]) == 1


def test_empty_cuda_visible_devices_is_ignored(registry):
    resolved = resolve_device(registry,
                              environ={"CUDA_VISIBLE_DEVICES": "",
                                       "ASCEND_RT_VISIBLE_DEVICES": "1"})
    assert resolved.source == "ASCEND_RT_VISIBLE_DEVICES (fallback)"


def test_explicit_unavailable_device_says_what_to_install(registry, no_gpu):
    with pytest.raises(DeviceUnavailableError) as err:
        resolve_device(registry, "npu", environ={})
    assert "torch_npu" in str(err.value) and "CANN" in str(err.value)
    with pytest.raises(DeviceUnavailableError, match="CUDA build of torch"):
        resolve_device(registry, environ={"PRIMEBOT_DEVICE": "cuda:1"})


def test_unknown_backend_lists_the_registered_ones(registry):
    with pytest.raises(DeviceUnavailableError, match="registered: cpu, cuda, npu"):
        resolve_device(registry, "tpu", environ={})


def test_parse_device_rejects_garbage():
    assert parse_device("CUDA:2") == ("cuda", 2)
    with pytest.raises(ConfigError):
        parse_device("cuda:x")


def test_backends_report_collectives(registry):
    collectives = {name: b.collective for name, b in registry.items("backends").items()}
    assert collectives == {"cpu": "gloo", "cuda": "nccl", "npu": "hccl"}


BROKEN_TORCH_NPU = """
    raise ImportError("libascendcl.so: cannot open shared object file (CANN not installed)")
"""


def test_broken_torch_npu_leaves_torch_importable_and_npu_unavailable(tmp_path):
    # A stand-in for torch_npu: the one thing we cannot have here is an Ascend NPU
    # with CANN, so this module imitates a torch_npu whose CANN libraries are missing.
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text(textwrap.dedent(BROKEN_TORCH_NPU))
    script = textwrap.dedent(
        """
        import primebot.pipeline  # sets TORCH_DEVICE_BACKEND_AUTOLOAD=0 before torch
        import torch
        from primebot.pipeline.hooks.host import load_plugins
        npu = load_plugins().registry.get("backends", "npu")
        status = npu.availability()
        print(status.available, status.reason)
        """
    )
    env = {**os.environ, "PYTHONPATH": pythonpath_with(tmp_path)}
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("False importing torch_npu failed: ImportError: libascendcl.so")


def test_devices_probe_really_runs_on_cpu(clean_env, capsys):
    assert main(["devices", "--probe", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    for key in ("matmul_512_ms", "matmul_autocast_gflops", "h2d_GBps", "d2h_GBps",
                "mlp_train_step_ms",
                "[DONE] probe on cpu"):
        assert key in out


@pytest.mark.parametrize(("native", "line"), [
    ("avx512_bf16",
     "mixed precision: bfloat16 native (avx512_bf16): ppo.mixed_precision=auto turns it on"),
    ("", "mixed precision: no native bfloat16 here: ppo.mixed_precision=auto leaves it off"),
])
def test_devices_says_whether_the_cpu_has_native_bf16(clean_env, capsys, monkeypatch, native, line):
    from primebot.plugins.backends.cpu import CpuBackend

    monkeypatch.setattr(CpuBackend, "native_autocast", lambda self: native)
    assert main(["devices", "--device", "cpu"]) == 0
    assert line in capsys.readouterr().out
    assert main(["devices", "--device", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["resolved"]["native_autocast"] == native


def test_asking_for_npu_exits_non_zero_with_the_fix(clean_env, capsys):
    code = main(["devices", "--device", "npu"])
    err = capsys.readouterr().err
    assert code == DeviceUnavailableError.exit_code, err
    assert "torch_npu" in err
