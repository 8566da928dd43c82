"""``--set key=value`` parsing: numbers as YAML 1.1 misreads them, and open task sections."""

from __future__ import annotations

import pytest

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.config import parse_set
from primebot.pipeline.train.session import TrainRequest, resolve_config


def test_exponent_without_a_dot_is_a_number():
    assert parse_set(["ppo.lr=3e-4", "ppo.clip_param=0.1", "runner.experiment=wave"]) == [
        ("ppo.learning_rate", 3e-4),
        ("ppo.clip_param", 0.1),
        ("runner.experiment", "wave"),
    ]


@pytest.fixture(scope="module")
def registry():
    return load_plugins(entry_points_=[]).registry


def resolve(registry, *sets):
    return resolve_config(registry, TrainRequest(motion="motions/wave.npz", sets=list(sets)), "cpu")


def test_learning_rate_in_exponent_form_is_accepted(registry):
    assert resolve(registry, "ppo.learning_rate=3e-4").ppo.learning_rate == pytest.approx(3e-4)


def test_a_new_reward_term_can_be_switched_on_from_the_command_line(registry):
    cfg = resolve(registry, "task.rewards.feet_air_time.weight=0.5", "task.rewards.feet_air_time.params={std: 0.2}")
    assert cfg.task_config["rewards"]["feet_air_time"] == {"weight": 0.5, "params": {"std": 0.2}}


def test_a_typo_outside_open_sections_is_refused_with_a_suggestion(registry):
    with pytest.raises(ConfigError, match="did you mean 'rewards'"):
        resolve(registry, "task.rewardz.anchor_pos.weight=1.0")
