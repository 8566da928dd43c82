"""Reward terms against hand-computed values, and the reward manager's weighting and bookkeeping."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from primebot.pipeline.errors import ConfigError, UnknownNameError
from primebot.pipeline.registry import Registry
from primebot.pipeline.rotations import quat_from_axis_angle
from primebot.pipeline.sim.rewards import RewardManager, RewardTerm
from primebot.plugins.tasks.tracking import rewards as terms

E = np.e
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def _turn_z(angle: float) -> np.ndarray:
    return quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), angle)


def test_anchor_position_error_is_squared_distance_over_std_squared():
    state = SimpleNamespace(
        ref_anchor_pos_w=np.array([[0, 0, 1.0], [1, 1, 1.0]]),
        anchor_pos_w=np.array([[0.3, 0, 1.0], [1, 1, 1.0]]),
    )
    # 0.3 m off with std 0.3: exp(-0.09 / 0.09) = 1/e; on target: 1
    np.testing.assert_allclose(terms.anchor_pos_error_exp(state, std=0.3), [1 / E, 1.0])


def test_anchor_orientation_error_is_squared_angle_over_std_squared():
    state = SimpleNamespace(
        ref_anchor_quat_w=np.stack([_turn_z(0.4), IDENTITY]),
        anchor_quat_w=np.stack([IDENTITY, -IDENTITY]),
    )
    np.testing.assert_allclose(terms.anchor_ori_error_exp(state, std=0.4), [1 / E, 1.0])


def test_body_position_error_averages_over_bodies():
    # two bodies: one 0.3 m off, one on target → mean squared error 0.045 → exp(-0.5)
    ref = np.array([[[0.3, 0, 0], [0, 0, 1.0]]])
    state = SimpleNamespace(
        ref_body_pos_relative_w=ref, body_pos_w=np.array([[[0, 0, 0], [0, 0, 1.0]]])
    )
    np.testing.assert_allclose(terms.body_pos_error_exp(state, std=0.3), [np.exp(-0.5)])


def test_body_orientation_error_averages_squared_angles():
    state = SimpleNamespace(
        ref_body_quat_relative_w=np.stack([_turn_z(0.4), IDENTITY])[None],
        body_quat_w=np.stack([IDENTITY, IDENTITY])[None],
    )
    np.testing.assert_allclose(terms.body_ori_error_exp(state, std=0.4), [np.exp(-0.5)])


def test_body_velocity_errors_average_over_bodies():
    zero = np.zeros((1, 2, 3))
    state = SimpleNamespace(
        ref_body_lin_vel_w=np.array([[[1.0, 0, 0], [0, 0, 0]]]),
        body_lin_vel_w=zero,
        ref_body_ang_vel_w=np.array([[[0, 0, 0], [0, 3.14, 0]]]),
        body_ang_vel_w=zero,
    )
    np.testing.assert_allclose(terms.body_lin_vel_error_exp(state, std=1.0), [np.exp(-0.5)])
    np.testing.assert_allclose(terms.body_ang_vel_error_exp(state, std=3.14), [np.exp(-0.5)])


def test_action_rate_is_squared_change_of_action():
    state = SimpleNamespace(
        action=np.array([[1.0, 2.0], [0.5, 0.5]]), prev_action=np.array([[0.0, 0.0], [0.5, 0.5]])
    )
    np.testing.assert_allclose(terms.action_rate_l2(state), [5.0, 0.0])


def test_joint_limit_penalty_sums_excursions_beyond_soft_limits():
    state = SimpleNamespace(
        joint_pos=np.array([[1.2, -1.5], [0.0, 0.9]]),
        soft_joint_pos_limits=np.array([[-1.0, 1.0], [-1.0, 1.0]]),
    )
    np.testing.assert_allclose(terms.joint_pos_limits(state), [0.2 + 0.5, 0.0])


def test_self_collision_counts_contacts():
    state = SimpleNamespace(self_contacts=np.array([2.0, 0.0]))
    np.testing.assert_array_equal(terms.self_collision(state), [2.0, 0.0])


# -- the manager ------------------------------------------------------------------


def _registry(*extra: RewardTerm) -> Registry:
    registry = Registry()
    registry.declare("reward_terms")
    for term in (*terms.REWARD_TERMS, *extra):
        registry.add("reward_terms", term.name, term, "test")
    return registry


def test_manager_applies_weight_and_dt_and_keeps_episode_sums():
    state = SimpleNamespace(
        action=np.array([[1.0], [0.0]]),
        prev_action=np.zeros((2, 1)),
        self_contacts=np.array([0.0, 3.0]),
    )
    config = {
        "action_rate_l2": {"weight": -0.1},
        "self_collision": -10.0,
        "joint_pos_limits": {"weight": 0.0},
    }
    manager = RewardManager.from_config(config, _registry(), dt=0.02, num_envs=2)
    assert manager.names == ["action_rate_l2", "self_collision"]  # weight 0 is skipped
    reward = manager.compute(state)
    np.testing.assert_allclose(reward, [-0.1 * 0.02 * 1.0, -10 * 0.02 * 3.0], rtol=1e-6)
    assert reward.dtype == np.float32
    manager.compute(state)
    finished = manager.reset(np.array([1]))
    np.testing.assert_allclose(finished["self_collision"], [2 * -10 * 0.02 * 3.0])
    np.testing.assert_allclose(manager.episode_sums["self_collision"], [0.0, 0.0])
    np.testing.assert_allclose(manager.episode_sums["action_rate_l2"], [2 * -0.1 * 0.02, 0.0])


def test_invalid_envs_get_no_reward_and_no_sum():
    state = SimpleNamespace(self_contacts=np.array([np.nan, 1.0]))
    manager = RewardManager.from_config({"self_collision": -1.0}, _registry(), dt=0.5, num_envs=2)
    reward = manager.compute(state, valid=np.array([False, True]))
    np.testing.assert_allclose(reward, [0.0, -0.5])
    np.testing.assert_allclose(manager.episode_sums["self_collision"], [0.0, -0.5])


def test_params_override_defaults_and_unknown_params_are_refused():
    manager = RewardManager.from_config(
        {"body_pos_error_exp": {"weight": 1.0, "params": {"std": 0.5}}}, _registry(), 0.02, 1
    )
    assert manager.terms[0].params == {"std": 0.5}
    with pytest.raises(ConfigError, match="sigma"):
        RewardManager.from_config(
            {"body_pos_error_exp": {"weight": 1.0, "params": {"sigma": 0.5}}}, _registry(), 0.02, 1
        )
    with pytest.raises(ConfigError, match="no weight"):
        RewardManager.from_config({"body_pos_error_exp": {"params": {}}}, _registry(), 0.02, 1)


def test_unknown_term_names_the_registered_ones():
    with pytest.raises(UnknownNameError, match="body_pos_error_exp"):
        RewardManager.from_config({"body_pos_eror_exp": 1.0}, _registry(), 0.02, 1)


def test_a_term_returning_the_wrong_shape_is_named():
    bad = RewardTerm("bad_shape", lambda state: np.zeros(3))
    manager = RewardManager.from_config({"bad_shape": 1.0}, _registry(bad), 0.02, 2)
    with pytest.raises(ValueError, match="bad_shape"):
        manager.compute(SimpleNamespace())


def test_table_lists_every_active_term_with_weight_and_params():
    manager = RewardManager.from_config(
        {"body_pos_error_exp": 1.0, "action_rate_l2": -0.1}, _registry(), 0.02, 1
    )
    table = manager.table()
    assert (
        "body_pos_error_exp" in table
        and "std=0.3" in table
        and "-0.1" in table
        and "dt = 0.02 s" in table
    )


def test_one_term_twice_under_another_name_with_its_own_params():
    """``term:`` names the registered function: a coarse and a fine kernel of one error."""
    robot = np.zeros((1, 2, 3))
    ref = robot.copy()
    ref[..., 0] = 0.02  # 2 cm off on every body
    state = SimpleNamespace(ref_body_pos_relative_w=ref, body_pos_w=robot)
    config = {
        "body_pos_error_exp": {"weight": 1.0},
        "body_pos_fine": {"term": "body_pos_error_exp", "weight": 2.0, "params": {"std": 0.02}},
    }
    manager = RewardManager.from_config(config, _registry(), dt=1.0, num_envs=1)
    assert manager.names == ["body_pos_error_exp", "body_pos_fine"]
    manager.compute(state)
    np.testing.assert_allclose(manager.step_values["body_pos_error_exp"], [np.exp(-4e-4 / 0.09)])
    np.testing.assert_allclose(manager.step_values["body_pos_fine"], [2.0 / E])
    assert "body_pos_fine" in manager.table() and "std=0.02" in manager.table()
    with pytest.raises(UnknownNameError, match="body_pos_error_exp"):
        RewardManager.from_config({"fine": {"term": "body_pos_eror_exp", "weight": 1.0}},
                                  _registry(), 0.02, 1)
    with pytest.raises(ConfigError, match="not a registered term"):
        RewardManager.from_config({"fine": {"term": 3, "weight": 1.0}}, _registry(), 0.02, 1)
