"""Shared fixtures. Tests use real MuJoCo, real files and real plugin discovery."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from pathlib import Path

import pytest
from fault_cases import pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401

# Before anything imports torch (docs/architecture.md §4): a torch_npu without CANN must not break
# it.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
os.environ.setdefault("MUJOCO_GL", "egl")

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def import_tool():
    """``import_tool("bench_motions")``: a module of tools/, imported with tools/ on ``sys.path``
    only while it loads (the tools import each other by name)."""
    def load(name: str):
        folder = str(REPO_ROOT / "tools")
        sys.path.insert(0, folder)
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(folder)
    return load


@pytest.fixture(scope="session")
def spec():
    """The bundled q1 robot spec, shared read-only by every test that needs it."""
    from primebot.plugins.robots.q1.spec import Q1_MJCF, q1_spec

    return q1_spec(Q1_MJCF)


@pytest.fixture(scope="session")
def model(spec):
    """The q1 MjModel compiled once per session; tests make their own MjData and never edit it."""
    from primebot.pipeline.robot.model import load_robot_model

    return load_robot_model(spec)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No device or plugin variables from the outer environment leak into the test."""
    for name in (
        "PRIMEBOT_DEVICE",
        "CUDA_VISIBLE_DEVICES",
        "ASCEND_RT_VISIBLE_DEVICES",
        "PRIMEBOT_DISABLE_PLUGINS",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def make_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install a real third-party plugin distribution for the duration of a test.

    Writes ``<module>.py`` and ``<dist>-<version>.dist-info`` (METADATA and
    entry_points.txt for group ``primebot``) into a folder on ``sys.path``, so
    ``importlib.metadata`` discovers it exactly as it would a pip-installed one.
    Returns the folder (put it on PYTHONPATH for subprocess tests).
    """
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def make(dist: str, module: str, source: str, *, version: str = "1.0.0",
             entry_name: str | None = None) -> Path:
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
                                       encoding="utf-8")
        (info / "entry_points.txt").write_text(f"[primebot]\n{entry_name or dist} = {module}\n",
                                               encoding="utf-8")
        sys.modules.pop(module, None)
        return site

    yield make
