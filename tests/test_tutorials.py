"""Every page of docs/tutorials/ runs: its files are written out of the page and exercised for real.

A page's fenced ``python`` and ``xml`` blocks whose first line names a file (``# name.py``,
``<!-- name.xml -->``) are written to a temporary folder on ``sys.path``; its ``try_*.py`` script
(the page's "in-process" section) runs there as a reader would run it, and each test then checks
what the page says the plugin does, cheaply: seconds, not minutes.
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from primebot.pipeline.hooks.host import load_plugins

TUTORIALS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
PAGES = ("robot", "reward_term", "observation_term", "task", "backend", "stage")
BLOCK = re.compile(r"^```(python|xml)\n(.*?)^```", re.S | re.M)
NAMED = re.compile(r"\A(?:# (\S+\.py)|<!-- (\S+\.xml) -->)\n")


def page_files(page: str) -> dict[str, str]:
    """The files a tutorial page holds: name → text."""
    files = {}
    for _, body in BLOCK.findall((TUTORIALS / f"{page}.md").read_text(encoding="utf-8")):
        named = NAMED.match(body)
        if named:
            files[named.group(1) or named.group(2)] = body
    return files


@pytest.fixture
def tutorial(tmp_path, monkeypatch, clean_env):
    """Write a page's files into ``tmp_path`` (on sys.path, the working directory) and run its
    ``try_*.py``; the plugin module, imported, and the script's globals."""
    loaded = []

    def write(page: str):
        files = page_files(page)
        for name, text in files.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.chdir(tmp_path)
        plugin = next(n for n in files if n.endswith(".py") and not n.startswith("try_"))
        script = next(n for n in files if n.startswith("try_"))
        loaded.append(plugin[:-3])
        namespace = runpy.run_path(str(tmp_path / script), run_name="__main__")
        return sys.modules[plugin[:-3]], namespace

    yield write
    for name in loaded:
        sys.modules.pop(name, None)


def test_every_tutorial_page_has_a_plugin_a_try_script_and_a_link():
    index = (TUTORIALS.parent / "index.md").read_text(encoding="utf-8")
    hooks = (TUTORIALS.parent / "plugin_hooks.md").read_text(encoding="utf-8")
    assert sorted(p.stem for p in TUTORIALS.glob("*.md")) == sorted(PAGES)
    for page in PAGES:
        names = page_files(page)
        assert any(n.startswith("try_") for n in names), page
        assert len([n for n in names if n.endswith(".py") and not n.startswith("try_")]) == 1, page
        assert f"tutorials/{page}.md" in index and f"tutorials/{page}.md" in hooks, page


def test_the_robot_loads_and_passes_every_check_robots_check_runs(tutorial):
    from primebot.pipeline.robot.checks import check_robot

    _, ran = tutorial("robot")
    robot = ran["robot"]
    findings = check_robot(robot, simulate=True)
    failed = [f"{f.check}: {f.detail} (fix: {f.fix})" for f in findings if f.status == "error"]
    assert not failed and len(findings) >= 8


def _tracking_env(registry, config):
    from primebot.pipeline.motion.format import load_motion

    spec = registry.get("tasks", "tracking")
    motion = load_motion(TUTORIALS.parents[1] / "motions" / "wave.npz")
    exact = {"randomization": {"enabled": False}, "log_reward_terms": False}
    return spec.make_env(robot=registry.get("robots", "q1"), motion=motion, num_envs=2, seed=0,
                         config=spec.settings({**exact, **config}), registry=registry,
                         num_threads=1)


def test_the_reward_term_is_summed_by_a_tracking_env_and_finite(tutorial):
    _, ran = tutorial("reward_term")
    env = _tracking_env(ran["registry"], {"rewards": {"upright": {"weight": 0.5,
                                                                  "params": {"std": 0.3}}}})
    try:
        env.reset()
        rng = np.random.default_rng(0)
        for _ in range(5):
            result = env.step(rng.uniform(-0.2, 0.2, (2, env.num_actions)).astype(np.float32))
            assert np.isfinite(result.reward).all()
        upright = env.rewards.episode_sums["upright"]
        # q1 standing under the wave: nearly level, so each step adds close to weight × dt
        assert np.isfinite(upright).all() and (upright > 0.5 * 0.02 * 5 * 0.8).all()
    finally:
        env.close()


def test_the_observation_term_extends_the_critic_with_the_end_effector_heights(tutorial):
    _, ran = tutorial("observation_term")
    registry = ran["registry"]
    env = _tracking_env(registry, {"observations": {"end_effector_height": {"group": "critic"}}})
    base = _tracking_env(registry, {})
    try:
        assert env.num_critic_obs == base.num_critic_obs + 4 and env.num_obs == base.num_obs
        env.reset()
        for _ in range(3):
            result = env.step(np.zeros((2, env.num_actions), np.float32))
            heights = env.state.all_body_pos_w[:, env.state.end_effectors, 2]
            np.testing.assert_allclose(result.critic_obs[:, -4:], heights, atol=1e-5)
            assert np.isfinite(result.critic_obs).all() and (heights > -0.05).all()
    finally:
        env.close()
        base.close()


def test_the_task_trains_two_tiny_iterations(tutorial):
    from primebot.pipeline.train.log import read_csv_rows

    _, ran = tutorial("task")
    header, rows = read_csv_rows(ran["out"].run_dir / "train.csv")
    assert [r["iteration"] for r in rows] == ["1", "2"]
    assert all(np.isfinite(float(r["reward_mean"])) for r in rows)
    assert "episode/upright" in header  # the env's info, from the short episodes the page sets


def test_the_backend_resolves_and_runs_a_tensor_op(tutorial):
    import torch

    from primebot.pipeline.devices.backend import resolve_device

    _, ran = tutorial("backend")
    device = ran["device"]
    assert device.backend.name == "cpu32" and device.torch_device == "cpu"
    assert ran["x"].device == torch.device("cpu")
    from_environment = resolve_device(ran["registry"], None, {"PRIMEBOT_DEVICE": "cpu32"})
    assert from_environment.backend is device.backend
    assert device.backend.autocast_dtype() is None


def test_the_stage_runs_in_a_small_pipeline(tutorial, tmp_path):
    import json

    from click.testing import CliRunner

    from primebot.pipeline.cli import build_cli

    module, _ = tutorial("stage")
    host = load_plugins(extra=[("motion-stats", module)])
    wave = TUTORIALS.parents[1] / "motions" / "wave.npz"
    result = CliRunner().invoke(build_cli(host), [
        "pipeline", "run", str(wave), "--only", "validate", "--only", "motion_stats",
        "--log-dir", str(tmp_path / "logs")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run_dir,) = [p.parent for p in (tmp_path / "logs").rglob("pipeline.json")]
    stats = json.loads((run_dir / "motion_stats.json").read_text(encoding="utf-8"))
    assert stats["fps"] == 50 and stats["frames"] > 100 and stats["root_travel_m"] < 0.1
    stages = {s["name"]: s for s in json.loads((run_dir / "pipeline.json").read_text())["stages"]}
    assert stages["motion_stats"]["status"] == "done"
    assert stages["motion_stats"]["outputs"] == {"stats": "motion_stats.json"}
