"""walk MDP math: observation layout, reward signs and values, falls, the walking threshold."""

from __future__ import annotations

import numpy as np
import pytest

from primebot.pipeline.errors import ConfigError
from primebot.plugins.tasks.walk import mdp
from primebot.plugins.tasks.walk.task import task_settings, walking_threshold

WEIGHTS = {"forward_weight": 2.0, "sideways_weight": 2.0, "alive_bonus": 1.0, "posture_weight": 1.0}


def _total(forward, sideways=0.0, pitch=0.0, alive=True, dt=0.02):
    terms = mdp.step_reward(
        np.array([forward]), np.array([sideways]), np.array([pitch]), np.array([alive]), dt=dt,
        **WEIGHTS
    )
    return {name: float(v[0]) for name, v in terms.items()}


def test_observation_is_14_values_in_the_documented_order():
    default = np.array([0.35, 0.35, 0.7, 0.7])
    obs = mdp.policy_observation(
        pitch=np.array([0.1]),
        pitch_rate=np.array([-0.2]),
        joint_pos=np.array([[0.45, 0.25, 0.9, 0.6]]),
        joint_vel=np.array([[1.0, 2.0, 3.0, 4.0]]),
        last_action=np.array([[0.5, -0.5, 1.0, -1.0]]),
        default_joint_pos=default,
    )
    assert obs.shape == (1, 14) and obs.dtype == np.float32
    expected = [0.1, -0.2, 0.1, -0.1, 0.2, -0.1, 1, 2, 3, 4, 0.5, -0.5, 1, -1]
    np.testing.assert_allclose(obs[0], expected, atol=1e-6)
    assert len(mdp.OBSERVATION_NAMES) == mdp.NUM_OBS == 14
    assert mdp.OBSERVATION_NAMES[:2] == ("torso_pitch", "torso_pitch_rate")


def test_critic_observation_appends_forward_and_vertical_velocity_and_height():
    obs = np.zeros((2, 14), dtype=np.float32)
    critic = mdp.critic_observation(obs, np.array([0.5, 0.1]), np.array([0.0, -0.3]),
                                    np.array([0.59, 0.4]))
    assert critic.shape == (2, mdp.NUM_CRITIC_OBS) == (2, 17)
    np.testing.assert_allclose(critic[1, 14:], [0.1, -0.3, 0.4], atol=1e-6)


def test_forward_velocity_earns_and_backward_velocity_costs():
    assert _total(forward=0.5)["velocity"] == pytest.approx(0.02 * 2.0 * 0.5)
    assert _total(forward=-0.5)["velocity"] == pytest.approx(-0.02 * 2.0 * 0.5)


@pytest.mark.parametrize("sideways", [0.3, -0.3])
def test_sideways_velocity_costs_in_either_direction(sideways):
    assert _total(forward=0.0, sideways=sideways)["velocity"] == pytest.approx(-0.02 * 2.0 * 0.3)


def test_velocity_is_split_along_the_walking_direction():
    velocity = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    forward, sideways = mdp.split_velocity(velocity, np.array([0.0, 2.0]))  # walking towards +y
    np.testing.assert_allclose(forward, [0.0, 1.0, 0.0])
    np.testing.assert_allclose(sideways, [-1.0, 0.0, 1.0])  # +x is to the right of +y
    walking_y = mdp.velocity_reward(forward, sideways, forward_weight=2.0, sideways_weight=2.0)
    assert walking_y[1] > 0 > walking_y[0] and walking_y[2] < 0


def test_alive_bonus_is_paid_only_to_envs_still_standing():
    assert _total(forward=0.0, alive=True)["alive"] == pytest.approx(0.02)
    assert _total(forward=0.0, alive=False)["alive"] == 0.0


def test_posture_penalty_is_weighted_squared_pitch_times_dt():
    assert _total(forward=0.0, pitch=-0.3)["posture"] == pytest.approx(-0.02 * 1.0 * 0.09)
    assert _total(forward=0.0, pitch=0.0)["posture"] == 0.0


def test_fall_is_low_torso_or_large_pitch_either_way():
    fallen = mdp.has_fallen(np.array([0.59, 0.29, 0.59, 0.59]), np.array([0.0, 0.0, 1.1, -1.1]),
                            0.3, 1.0)
    np.testing.assert_array_equal(fallen, [False, True, True, True])


def test_actions_are_clipped_then_scaled_around_the_standing_pose_within_joint_range():
    default = np.array([0.35, 0.35, 0.7, 0.7])
    joint_range = np.array([[-1.2, 1.6], [-1.2, 1.6], [0.0, 2.2], [0.0, 2.2]])
    clipped, targets = mdp.actions_to_targets(np.array([[2.0, -0.5, -1.0, 0.5]]), default,
                                              np.full(4, 0.7), joint_range)
    np.testing.assert_allclose(clipped, [[1.0, -0.5, -1.0, 0.5]])
    np.testing.assert_allclose(targets, [[1.05, 0.0, 0.0, 1.05]])


def test_walking_threshold_is_an_upright_episode_at_half_a_metre_per_second():
    # 1000 steps × 0.02 s × (1.0 alive + 2.0 × 0.5 m/s) = 40.
    assert walking_threshold() == pytest.approx(40.0)
    assert walking_threshold({"walking_speed": 1.0}) == pytest.approx(1000 * 0.02 * (1.0 + 2.0))


def test_threshold_needs_ten_metres_walked_in_the_episode():
    threshold = walking_threshold()
    standing = mdp.walking_return(0.0, episode_length=1000, dt=0.02, forward_weight=2.0,
                                  alive_bonus=1.0)
    slower = mdp.walking_return(0.45, episode_length=1000, dt=0.02, forward_weight=2.0,
                                alive_bonus=1.0)
    # Falling after 400 steps (8 s) reaches it only at 2 m/s: return ≥ 40 always means ≥ 10 m
    # walked.
    sprint_and_fall = mdp.walking_return(1.5, episode_length=400, dt=0.02, forward_weight=2.0,
                                         alive_bonus=1.0)
    assert standing < slower < threshold and sprint_and_fall < threshold


def test_unknown_task_setting_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match="forward_wieght"):
        task_settings({"forward_wieght": 3.0})
    with pytest.raises(ConfigError, match="randomization.joint_noise"):
        task_settings({"randomization": {"joint_noise": 0.1}})
    with pytest.raises(ConfigError, match="'ppo'"):  # the trainer's settings are not the task's
        task_settings({"ppo": {"gamma": 0.9}})
    # A partial section keeps the other defaults of that section.
    assert task_settings({"randomization": {"enabled": False}})["randomization"] == {
        "enabled": False, "joint_pos": 0.05, "velocity": 0.05,
    }
