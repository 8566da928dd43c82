"""walk through the real trainer: seed 000's preset is what `primebot train --task walk` runs, and
it learns."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.session import TrainRequest, resolve_config


def test_train_walk_resolves_to_seed_000_hyper_parameters():
    cfg = resolve_config(load_plugins(environ={}).registry, TrainRequest(task="walk"), "cpu")
    assert cfg.robot == "biped4"
    assert cfg.num_envs * cfg.ppo.num_steps_per_env == 2048
    assert (cfg.ppo.num_learning_epochs, cfg.ppo.clip_param, cfg.ppo.gamma, cfg.ppo.lam) == (
        10,
        0.2,
        0.99,
        0.95,
    )
    assert (cfg.ppo.learning_rate, cfg.ppo.schedule) == (3e-4, "fixed")
    assert cfg.policy.actor_hidden == (256, 256, 128) and cfg.policy.shared_log_std
    assert "ppo" not in cfg.task_config and cfg.task_config["episode_length"] == 1000


def test_a_task_setting_can_be_overridden_from_the_command_line():
    request = TrainRequest(task="walk", sets=["task.forward_weight=3.0", "num_envs=32"])
    cfg = resolve_config(load_plugins(environ={}).registry, request, "cpu")
    assert cfg.task_config["forward_weight"] == 3.0 and cfg.num_envs == 32


@pytest.mark.slow
def test_a_short_training_run_improves_return_and_survival(tmp_path: Path):
    # A small network and 12 × 1024 steps: a few seconds. The random initial
    # policy falls after ~45 steps (return ~0.6); PPO quickly learns to stay up.
    rc = main([
        "train", "--task", "walk", "--iterations", "12", "--seed", "0", "--no-progress",
        "--log-dir", str(tmp_path),
        "--set", "ppo.num_steps_per_env=64", "--set", "ppo.num_learning_epochs=5",
        "--set", "ppo.learning_rate=0.001",
        "--set", "policy.actor_hidden=[64,64]", "--set", "policy.critic_hidden=[64,64]",
    ])  # fmt: skip
    assert rc == 0
    (train_csv,) = tmp_path.glob("walk/*/train.csv")
    rows = list(csv.DictReader(train_csv.open()))
    assert len(rows) == 12
    first, last = rows[0], rows[-1]
    assert float(last["episode_return"]) > float(first["episode_return"]) + 0.3
    assert float(last["episode_length"]) > float(first["episode_length"]) + 5
