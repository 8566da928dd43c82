"""``--set key=value`` parsing: numbers as YAML 1.1 misreads them, and open task sections."""

from __future__ import annotations

import pytest

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.session import TrainRequest, resolve_config
from primebot.pipeline.train.train_config import parse_set


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
    cfg = resolve(registry, "task.rewards.feet_air_time.weight=0.5",
                  "task.rewards.feet_air_time.params={std: 0.2}")
    assert cfg.task_config["rewards"]["feet_air_time"] == {"weight": 0.5, "params": {"std": 0.2}}


def test_a_typo_outside_open_sections_is_refused_with_a_suggestion(registry):
    with pytest.raises(ConfigError, match="did you mean 'rewards'"):
        resolve(registry, "task.rewardz.anchor_pos.weight=1.0")


def _motion_with_overrides(tmp_path, *overrides):
    import dataclasses

    from primebot.pipeline.motion.format import load_motion, save_motion

    path = tmp_path / "carried.npz"
    save_motion(dataclasses.replace(load_motion("motions/wave.npz"), training_overrides=overrides),
                path)
    return str(path)


def test_a_motion_s_own_overrides_apply_and_a_set_of_the_same_key_wins(registry, tmp_path):
    motion = _motion_with_overrides(tmp_path, "task.terminations.end_effector_height=null",
                                    "task.rewards.anchor_pos_error_exp.params.std=0.15",
                                    "policy.init_action_gain=0.01",
                                    "task.actions.offset=servo_target")
    cfg = resolve_config(registry,
                         TrainRequest(motion=motion,
                                      sets=["task.rewards.anchor_pos_error_exp.params.std=0.2"]),
                         "cpu")
    assert cfg.task_config["terminations"]["end_effector_height"] is None
    assert cfg.task_config["rewards"]["anchor_pos_error_exp"]["params"]["std"] == pytest.approx(0.2)
    assert cfg.policy.init_action_gain == pytest.approx(0.01)
    assert cfg.task_config["actions"]["offset"] == "servo_target"  # its torques: the motion's own


@pytest.mark.parametrize("override",
                         ["num_envs=100000", "iterations=999999", "task=walk", "robot=biped4",
                                      "device=cuda", "ppo.gamma=0.95", "runner.save_interval=1",
                                      "task.observations.noise=false", "seed=7",
                                      "task.actions.scale=2.0"])
def test_a_motion_may_not_size_the_run_or_switch_its_task(registry, tmp_path, override):
    # a shared motion file is untrusted: only rewards, terminations, randomisation (its curriculum),
    # the action offset and the policy's initialisation travel in it; the rest is the user's
    motion = _motion_with_overrides(tmp_path, "task.terminations.end_effector_height=null",
                                    override)
    with pytest.raises(ConfigError) as err:
        resolve_config(registry, TrainRequest(motion=motion, num_envs=8, iterations=3), "cpu")
    key = override.partition("=")[0]
    assert (
        f"set {key}," in str(err.value) and "may not" in str(err.value) and motion in str(err.value)
    )
    assert "--set" in err.value.fix


def test_the_shipped_getup_still_carries_settings_a_motion_may_set(registry):
    cfg = resolve_config(registry, TrainRequest(motion="motions/getup.npz", num_envs=8), "cpu")
    assert cfg.task_config["terminations"]["end_effector_height"] is None
    assert cfg.task_config["randomization"]["curriculum"]["start"] == 0
    assert cfg.policy.init_action_gain == pytest.approx(0.01) and cfg.num_envs == 8


def test_a_bad_override_in_a_motion_names_the_file_and_the_fix(registry, tmp_path):
    motion = _motion_with_overrides(tmp_path, "task.terminashuns.end_effector_height=null")
    with pytest.raises(ConfigError) as err:
        resolve_config(registry, TrainRequest(motion=motion), "cpu")
    assert motion in str(err.value) and "training_overrides" in str(err.value)
    assert "regenerate" in err.value.fix


def test_q1_trains_at_100_hz_physics_by_its_own_overrides_and_a_set_wins(registry):
    sources: dict[str, str] = {}
    cfg = resolve_config(registry, TrainRequest(motion="motions/wave.npz"), "cpu", sources)
    assert (cfg.task_config["physics_dt"], cfg.task_config["decimation"]) == (0.01, 2)
    assert sources["task.physics_dt"] == sources["task.decimation"] == "robot q1"
    back = resolve(registry, "task.physics_dt=0.005", "task.decimation=4")
    assert (back.task_config["physics_dt"], back.task_config["decimation"]) == (0.005, 4)


def test_a_robot_s_override_of_a_setting_its_task_lacks_is_left_out_and_a_bad_one_named():
    from types import SimpleNamespace

    from primebot.pipeline.train.settings_layers import apply_robot_overrides
    from primebot.pipeline.train.train_config import TrainConfig

    cfg = TrainConfig(task="walk", task_config={"decimation": 4})
    robot = SimpleNamespace(name="stilts", training_overrides=("task.physics_dt=0.01",
                                                               "task.decimation=2",
                                                               "ppo.learning_rate=1e-4"))
    apply_robot_overrides(cfg, robot)
    assert cfg.task_config == {"decimation": 2}
    assert cfg.ppo.learning_rate == pytest.approx(1e-4)
    with pytest.raises(ConfigError, match="robot 'stilts'.*ppo.learnig_rate"):
        apply_robot_overrides(cfg, SimpleNamespace(name="stilts",
                                                   training_overrides=("ppo.learnig_rate=1",)))
