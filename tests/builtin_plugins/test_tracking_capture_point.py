"""The capture-point reward term on real physics: near 1 while q1 follows the wave, far below it
right after a kick, and back up when a foot is set under the kicked body."""

from __future__ import annotations

import numpy as np
import pytest
from tracking_env import EXACT, make_env

from primebot.pipeline.api import yaw_angle
from primebot.pipeline.errors import ConfigError
from primebot.plugins.tasks.tracking.rewards import capture_point_error_exp

TERM_ON = {**EXACT, "rewards": {"capture_point_error_exp": 1.0}}


def test_the_term_is_near_one_on_the_reference_and_falls_when_kicked(host, motion):
    env = make_env(host, motion, num_envs=4, seed=1, config=TERM_ON)
    env.reset()
    zero = np.zeros((4, env.num_actions), dtype=np.float32)
    for _ in range(10):
        env.step(zero)
    assert (capture_point_error_exp(env.state) > 0.98).all()
    lin = env.model_info.root_lin_vel_qvel.start
    kicks = np.array([[0.44, 0.0], [-0.44, 0.0], [0.0, 0.44], [0.0, -0.44]])
    env.sim.qvel[:, lin:lin + 2] += kicks
    result = env.step(zero)
    after = capture_point_error_exp(env.state)
    assert (after < 0.5).all()
    assert "episode/capture_point_error_exp" in result.info


def test_a_foot_under_the_capture_point_earns_it_back(host, motion):
    env = make_env(host, motion, num_envs=1, seed=1, config=TERM_ON)
    env.reset()
    env.step(np.zeros((1, env.num_actions), dtype=np.float32))
    state = env.state
    yaw = float(yaw_angle(state.anchor_quat_w[:1])[0])
    ahead = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    speed = 0.44
    state.all_body_lin_vel_w[0, state.anchor_column] += speed * ahead
    kicked = float(capture_point_error_exp(state)[0])
    # the same kick with both feet moved ahead by what it adds to the capture point
    height = state.all_ref_body_pos_relative_w[0, state.anchor_column, 2] - \
        state.all_ref_body_pos_relative_w[0, state.feet, 2].mean()
    shift = speed * np.sqrt(height / 9.81)
    state.all_body_pos_w[0, state.feet] += shift * ahead
    stepped = float(capture_point_error_exp(state)[0])
    assert kicked < 0.5 < 0.95 < stepped


def test_a_robot_whose_feet_the_task_does_not_track_is_told_what_to_add(host, motion):
    env = make_env(host, motion, num_envs=1, seed=1, config=EXACT)
    env.reset()
    env.state.feet = np.zeros(0, dtype=np.int64)
    with pytest.raises(ConfigError, match="feet") as info:
        capture_point_error_exp(env.state)
    assert "end_effector_bodies" in info.value.fix
