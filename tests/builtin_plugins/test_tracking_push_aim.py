"""Aimed pushes (``push.aim: adaptive``): kicks pointed at the side of the robot that recent kicks
felled most, the fall rates that decide it, and the check's push left unaimed."""

from __future__ import annotations

import numpy as np
import pytest
from tracking_env import FULL_STRENGTH, make_env

from primebot.pipeline.api import PUSH_DIRECTIONS, quat_from_axis_angle
from primebot.pipeline.deploy.push_direction import push_sector
from primebot.plugins.tasks.tracking.push_aim import EVEN_SHARE, FALL_WINDOW_S, PushAim

FORWARD, LEFT, BACKWARD, RIGHT = range(4)
AIMED = {"randomization": {"curriculum": None, "push": {"aim": "adaptive"}},
         "observations": {"noise": False}}


def _aim(num_envs=4):
    return PushAim(num_envs, control_dt=FALL_WINDOW_S / 5)  # 5 control steps to the window's end


def test_a_fall_within_the_window_counts_against_the_kicks_side_and_a_later_one_does_not():
    aim = _aim()
    aim.kicked(np.array([0, 1, 2]), np.array([FORWARD, LEFT, BACKWARD]))
    none = np.zeros(4, bool)
    aim.record(np.array([True, False, False, False]), np.array([True, False, False, False]))
    for _ in range(4):  # env 1 survives its window; env 2's episode times out within it
        aim.record(none, np.array([False, False, True, False]) if _ == 0 else none)
    aim.record(np.array([False, True, False, False]), np.array([False, True, False, False]))
    rates = aim.fall_rates()
    assert rates[FORWARD] == 1.0 and rates[LEFT] == 0.0 and rates[BACKWARD] == 0.0
    assert np.allclose(aim.outcomes[[FORWARD, LEFT, BACKWARD]], 1.0, atol=0.01)
    assert aim.outcomes[RIGHT] == 0.0 and (aim.pending == -1).all()


def test_a_second_kick_before_the_first_is_decided_counts_the_first_as_survived():
    aim = _aim()
    aim.kicked(np.array([0]), np.array([FORWARD]))
    aim.record(np.zeros(4, bool), np.zeros(4, bool))
    aim.kicked(np.array([0]), np.array([RIGHT]))
    aim.record(np.array([True, False, False, False]), np.array([True, False, False, False]))
    assert aim.fall_rates()[FORWARD] == 0.0 and aim.fall_rates()[RIGHT] == 1.0


def test_kicks_go_evenly_while_every_side_falls_alike_and_to_the_weakest_side_when_one_falls_more():
    aim = _aim()
    assert np.allclose(aim.probabilities(), 0.25)  # nothing recorded yet
    aim.outcomes[:] = 100.0
    aim.falls[:] = 30.0
    assert np.allclose(aim.probabilities(), 0.25)
    aim.falls[FORWARD] = 90.0  # kicked forward, it falls 60 % more often than any other side
    p = aim.probabilities()
    assert p[FORWARD] == pytest.approx(EVEN_SHARE / 4 + 1 - EVEN_SHARE)
    assert np.allclose(p[[LEFT, BACKWARD, RIGHT]], EVEN_SHARE / 4) and p.sum() == pytest.approx(1)
    sides, angles = aim.angles(np.random.default_rng(0), np.full(4000, 1.0))
    assert np.mean(sides == FORWARD) == pytest.approx(p[FORWARD], abs=0.03)
    assert np.array_equal(push_sector(angles - 1.0), sides)  # within the side's 90° sector


def test_the_memory_forgets_old_kicks():
    aim = _aim(num_envs=1)
    aim.outcomes[FORWARD], aim.falls[FORWARD] = 100.0, 100.0
    for _ in range(5000):  # kicks to the left long after: the forward count fades
        aim.kicked(np.array([0]), np.array([LEFT]))
        aim.record(np.ones(1, bool), np.ones(1, bool))
    assert aim.outcomes[FORWARD] < 10.0 and aim.fall_rates()[FORWARD] == pytest.approx(1.0)


def test_an_aimed_push_keeps_its_speed_and_points_at_the_drawn_side_of_the_robots_heading(
        host, motion):
    env = make_env(host, motion, num_envs=64, seed=3, config=AIMED)
    env.reset()
    aim, pusher = env.pusher.aim, env.pusher
    assert aim is not None and pusher.speed is None
    aim.outcomes[:], aim.falls[:] = 100.0, [90.0, 30.0, 30.0, 30.0]  # forward falls most
    # robots facing every which way: the side is the robot's, not the world's
    yaw = np.random.default_rng(1).uniform(-np.pi, np.pi, 64)
    quat = env.model_info.root_quat_qpos
    env.sim.qpos[:, quat] = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw)
    before = env.sim.qvel[:, :2].copy()
    pusher.countdown[:] = 1
    assert pusher.step() == 64
    kick = env.sim.qvel[:, :2] - before
    assert np.array_equal(push_sector(np.arctan2(kick[:, 1], kick[:, 0]) - yaw), aim.pending)
    assert np.mean(aim.pending == FORWARD) > 0.5
    # the speed is the one the x and y ranges drew: up to 0.3·√(g·L) a side
    limit = 0.3 * np.sqrt(9.81 * env.reference.root_pos_w[:, 2].max()) * np.sqrt(2)
    assert np.all(np.hypot(*kick.T) <= limit + 1e-9) and np.hypot(*kick.T).max() > 0.5 * limit


def test_training_logs_the_fall_rate_and_the_aim_of_every_side_and_a_resume_keeps_them(
        host, motion):
    env = make_env(host, motion, num_envs=8, seed=2, config=AIMED)
    env.reset()
    env.pusher.countdown[:] = 1
    info = env.step(np.zeros((8, env.num_actions), np.float32)).info
    for side in PUSH_DIRECTIONS:
        assert {f"push/falls_{side}", f"push/aim_{side}"} <= info.keys()
    assert (env.pusher.aim.pending >= 0).all()
    state = env.state_dict()
    fresh = make_env(host, motion, num_envs=8, seed=2, config=AIMED)
    fresh.load_state_dict(state)
    assert np.array_equal(fresh.pusher.aim.pending, env.pusher.aim.pending)


def test_unaimed_training_keeps_no_aim_and_the_checks_push_is_never_aimed(host, motion):
    from primebot.pipeline.sim.task import merge_settings
    from primebot.plugins.tasks.tracking.task import PLAY

    assert make_env(host, motion, num_envs=2, config=FULL_STRENGTH).pusher.aim is None
    check = merge_settings(AIMED, merge_settings(merge_settings(PLAY.evaluation, PLAY.spread),
                                                 PLAY.robustness))
    assert make_env(host, motion, num_envs=2, config=check).pusher.aim is None


def test_an_unknown_aim_is_refused_by_name():
    from primebot.pipeline.api import ConfigError
    from primebot.pipeline.train.train_config import check_choices
    from primebot.plugins.tasks.tracking.task import SETTING_CHOICES

    with pytest.raises(ConfigError, match="randomization.push.aim must be random or adaptive"):
        check_choices({"randomization": {"push": {"aim": "forward"}}}, dict(SETTING_CHOICES))
