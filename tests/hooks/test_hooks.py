"""One test per hook, each through a plugin loaded by the real loader, and a doc check.

The last two tests fail when a hook in ``hooks.specs`` has no section in
docs/plugin_hooks.md or no ``test_hook_<name>`` test here.
"""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import click
import click.testing
import numpy as np

from primebot.pipeline.cli import build_cli
from primebot.pipeline.hooks import specs as hookspecs
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.robot.spec import RobotSpec
from primebot.pipeline.sim.env import VecEnv
from primebot.pipeline.sim.observation_terms import ObservationTerm
from primebot.pipeline.sim.rewards import RewardTerm
from primebot.pipeline.sim.task import PlaySettings, TaskSpec
from primebot.pipeline.sim.termination_terms import TerminationTerm
from primebot.pipeline.stages.contract import Stage

HOOK_NAMES = sorted(
    name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
    if name.startswith("register_")
)


def load_with(name: str, **hooks):
    plugin = types.SimpleNamespace(**{hook: hookimpl(fn) for hook, fn in hooks.items()})
    return load_plugins(entry_points_=[], extra=[(name, plugin)])


def test_hook_register_robots(clean_env):
    spec = RobotSpec(
        name="toy", mjcf=Path("toy.xml"), joint_names=("a",), default_joint_pos=np.zeros(1),
        stiffness=np.ones(1), damping=np.ones(1), effort_limit=np.ones(1), action_scale=np.ones(1),
        anchor_body="torso", tracked_bodies=("torso",), end_effector_bodies=(), feet=(),
    )

    def register_robots(register):
        register(spec)

    host = load_with("toy-robots", register_robots=register_robots)
    assert host.registry.get("robots", "toy") is spec
    assert host.registry.registration("robots", "toy").plugin == "toy-robots"


def test_hook_register_reward_terms(clean_env):
    def upright(state, std=1.0):
        return np.exp(-state / std**2)

    def register_reward_terms(register):
        register(RewardTerm("upright", upright, "stay upright", {"std": 0.5}))

    host = load_with("toy-rewards", register_reward_terms=register_reward_terms)
    term = host.registry.get("reward_terms", "upright")
    assert term.func(np.zeros(2), **term.default_params).tolist() == [1.0, 1.0]


def test_hook_register_observation_terms(clean_env):
    def register_observation_terms(register):
        register(ObservationTerm("height", lambda state: state[:, None], 1, "base height"))

    host = load_with("toy-observations", register_observation_terms=register_observation_terms)
    term = host.registry.get("observation_terms", "height")
    assert term.func(np.ones(2)).shape == (2, 1) and term.width(None) == 1


def test_hook_register_termination_terms(clean_env):
    def register_termination_terms(register):
        register(TerminationTerm("too_low", lambda state, threshold: state < threshold, "fell"))

    host = load_with("toy-terminations", register_termination_terms=register_termination_terms)
    term = host.registry.get("termination_terms", "too_low")
    assert term.func(np.array([0.1, 0.5]), threshold=0.3).tolist() == [True, False]


def test_play_settings_are_checked_when_the_task_registers(clean_env):
    def register_tasks(register):
        register(TaskSpec("null", lambda **kw: None, {"noise": {"enabled": True}},
                          needs_motion=False,
                          play=PlaySettings(evaluation={"noise": {"enabeld": False}})))

    try:
        load_with("typo-tasks", register_tasks=register_tasks)
    except Exception as exc:  # noqa: BLE001
        assert (
            "plugin 'typo-tasks'" in str(exc)
            and "noise.enabeld" in str(exc)
            and "evaluation" in str(exc)
        )
    else:
        raise AssertionError("play settings naming a missing setting were accepted")


def test_hook_register_tasks(clean_env):
    class NullEnv(VecEnv):
        def reset(self):
            return np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)

        def step(self, actions):
            raise NotImplementedError

    def register_tasks(register):
        register(TaskSpec("null", lambda **kw: NullEnv(), {"horizon": 3}, needs_motion=False))

    host = load_with("toy-tasks", register_tasks=register_tasks)
    spec = host.registry.get("tasks", "null")
    assert spec.default_config["horizon"] == 3
    assert isinstance(spec.make_env(), NullEnv)


def test_hook_register_backends(clean_env):
    cpu_type = type(load_plugins(entry_points_=[]).registry.get("backends", "cpu"))

    class Cpu2(cpu_type):
        name = "cpu2"

    def register_backends(register):
        register(Cpu2())

    host = load_with("toy-backends", register_backends=register_backends)
    assert host.registry.registration("backends", "cpu2").plugin == "toy-backends"


def test_hook_register_stages(clean_env):
    def register_stages(register):
        register(Stage("tensorrt", run=lambda ctx: {"engine": "policy.plan"}, after=("export",)))

    host = load_with("toy-stages", register_stages=register_stages)
    assert host.registry.get("stages", "tensorrt").after == ("export",)


def test_hook_register_commands(clean_env):
    @click.command("hello")
    def hello():
        """Say hello."""
        click.echo("hello from a plugin")

    def register_commands(cli):
        cli.add_command(hello)

    host = load_with("toy-commands", register_commands=register_commands)
    cli = build_cli(host)
    result = click.testing.CliRunner().invoke(cli, ["hello"])
    assert result.output == "hello from a plugin\n"
    assert host.registry.registration("commands", "hello").plugin == "toy-commands"


def test_invalid_registration_names_the_plugin(clean_env):
    def register_robots(register):
        register("not a spec", name="bogus")

    try:
        load_with("sloppy", register_robots=register_robots)
    except Exception as exc:  # noqa: BLE001
        assert "plugin 'sloppy'" in str(exc) and "RobotSpec" in str(exc)
    else:
        raise AssertionError("an invalid robot was accepted")


def test_every_hook_has_a_doc_section(repo_root):
    doc = (repo_root / "docs" / "plugin_hooks.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^##\s+`?(register_\w+)", doc, flags=re.MULTILINE))
    missing = [name for name in HOOK_NAMES if name not in headings]
    assert not missing, f"hooks without a section in docs/plugin_hooks.md: {missing}"


def test_every_hook_has_a_test_of_its_own():
    tests = {name for name in globals() if name.startswith("test_hook_")}
    missing = [name for name in HOOK_NAMES if f"test_hook_{name}" not in tests]
    assert not missing, f"hooks without a test_hook_<name> test: {missing}"
