"""A third-party distribution adds a robot and a walking task through entry points, as docs/tasks.md
walks through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.session import TrainRequest, resolve_config, run_training

# Another robot (biped4's model under a new name and a deeper crouch) and a
# task asking for a faster walk, from outside the primebot package.
PLUGIN = '''
import dataclasses

import numpy as np

from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.sim.task import TaskSpec
from primebot.plugins.robots.biped4.spec import biped4_spec
from primebot.plugins.tasks.walk.task import DEFAULT_CONFIG, TRAINER_DEFAULTS, make_walk_env


@hookimpl
def register_robots(register):
    register(dataclasses.replace(biped4_spec(), name="crouchbot",
                                 default_joint_pos=np.array([0.5, 0.5, 1.0, 1.0])))


@hookimpl
def register_tasks(register):
    register(TaskSpec(
        name="walk_fast", make_env=make_walk_env, needs_motion=False, default_robot="crouchbot",
        default_config={**DEFAULT_CONFIG, "walking_speed": 1.0},
        trainer_defaults={**TRAINER_DEFAULTS, "train": {"num_envs": 8, "iterations": 1}},
        description="walk at 1 m/s",
    ))
'''


def test_a_plugin_distribution_adds_a_robot_and_a_walking_task(clean_env, make_distribution):
    make_distribution("primebot-crouchbot", "primebot_crouchbot", PLUGIN, version="0.1.0",
                      entry_name="crouchbot")
    host = load_plugins()
    assert host.plugins["crouchbot"].source == "primebot-crouchbot 0.1.0"
    assert host.registry.registration("robots", "crouchbot").plugin == "crouchbot"
    assert host.registry.registration("tasks", "walk_fast").plugin == "crouchbot"
    cfg = resolve_config(host.registry, TrainRequest(task="walk_fast"), "cpu")
    assert (cfg.robot, cfg.num_envs, cfg.ppo.num_learning_epochs) == ("crouchbot", 8, 10)
    env = host.registry.get("tasks", "walk_fast").make_env(
        robot=host.registry.get("robots", "crouchbot"), motion=None, num_envs=2, seed=0,
        config=cfg.task_config, registry=host.registry, num_threads=1,
    )
    assert env.walking_threshold == 1000 * 0.02 * (1.0 + 2.0 * 1.0)
    # Targets centre on the plugin robot's own standing pose.
    env.reset()
    env.step(np.zeros((2, 4), dtype=np.float32))
    assert list(env.sim.ctrl[0]) == [0.5, 0.5, 1.0, 1.0]


def test_primebot_trains_the_plugin_task_with_its_robot(clean_env, make_distribution,
                                                        tmp_path: Path):
    make_distribution("primebot-crouchbot", "primebot_crouchbot", PLUGIN, entry_name="crouchbot")
    request = TrainRequest(
        task="walk_fast", log_dir=str(tmp_path), progress=False,
        sets=["policy.actor_hidden=[32]", "policy.critic_hidden=[32]", "ppo.num_steps_per_env=16",
              "ppo.num_mini_batches=2"],
    )  # fmt: skip
    outcome = run_training(load_plugins().registry, request)
    assert outcome.result.status == "finished" and outcome.result.iteration == 1
    args = yaml.safe_load((outcome.run_dir / "args.yaml").read_text())
    assert args["config"]["task"] == "walk_fast" and args["config"]["robot"] == "crouchbot"
    assert args["config"]["task_config"]["walking_speed"] == 1.0
