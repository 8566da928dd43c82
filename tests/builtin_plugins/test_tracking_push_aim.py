"""Kicks by the side of the robot they point to: every kick's side remembered, the verdict checks'
pushed episodes split by it, and ``push.aim: adaptive`` aiming training's kicks at the side the
checks see fail most (the check's own push never aimed)."""

from __future__ import annotations

import numpy as np
import pytest
from tracking_env import FULL_STRENGTH, make_env

from primebot.pipeline.api import PUSH_DIRECTIONS, push_sector, quat_from_axis_angle
from primebot.plugins.tasks.tracking.push_aim import CHECK_MEMORY, EVEN_SHARE, PushAim

FORWARD, LEFT, BACKWARD, RIGHT = range(4)
AIMED = {"randomization": {"curriculum": None, "push": {"aim": "adaptive"}},
         "observations": {"noise": False}}


def _check(forward: float, others: float, episodes: int = 8) -> dict:
    """A check's pushed episodes by side: ``episodes`` a side, forward and the others succeeding
    at the rates given."""
    return {side: {"episodes": episodes, "success_rate": forward if side == "forward" else others}
            for side in PUSH_DIRECTIONS}


def test_kicks_go_evenly_until_the_checks_fail_one_side_more_then_mostly_there():
    aim = PushAim()
    assert np.allclose(aim.probabilities(), 0.25)  # no check yet
    aim.observe_check(None)  # a check that measured no push changes nothing
    aim.observe_check({})
    assert np.allclose(aim.probabilities(), 0.25) and aim.episodes.sum() == 0
    aim.observe_check(_check(0.5, 0.5))
    assert np.allclose(aim.probabilities(), 0.25)  # every side fails alike
    aim.observe_check(_check(0.25, 1.0))  # kicked forward it fails three times in four
    p = aim.probabilities()
    assert p[FORWARD] == pytest.approx(EVEN_SHARE / 4 + 1 - EVEN_SHARE)
    assert np.allclose(p[[LEFT, BACKWARD, RIGHT]], EVEN_SHARE / 4) and p.sum() == pytest.approx(1)
    # the counts: the older check weighs CHECK_MEMORY of the newer
    assert aim.episodes[FORWARD] == pytest.approx(8 * CHECK_MEMORY + 8)
    assert aim.failures[FORWARD] == pytest.approx(4 * CHECK_MEMORY + 6)
    sides, angles = aim.angles(np.random.default_rng(0), np.full(4000, 1.0))
    assert np.mean(sides == FORWARD) == pytest.approx(p[FORWARD], abs=0.03)
    assert np.array_equal(push_sector(angles - 1.0), sides)  # within the side's 90° sector


def test_the_aim_follows_the_checks_as_the_weak_side_moves():
    aim = PushAim()
    aim.observe_check(_check(0.0, 1.0))
    for _ in range(12):  # the policy learns the forward kick and loses the others
        aim.observe_check(_check(1.0, 0.5))
    p = aim.probabilities()
    assert p[FORWARD] < 0.15 and np.allclose(p[[LEFT, BACKWARD, RIGHT]], p[LEFT])


def _kick_everyone(env):
    """Robots facing every which way, each kicked now; returns (yaws, the kicks' xy velocity)."""
    n = env.num_envs
    yaw = np.random.default_rng(1).uniform(-np.pi, np.pi, n)
    env.sim.qpos[:, env.model_info.root_quat_qpos] = quat_from_axis_angle(
        np.array([0.0, 0.0, 1.0]), yaw)
    before = env.sim.qvel[:, :2].copy()
    env.pusher.countdown[:] = 1
    assert env.pusher.step() == n
    return yaw, env.sim.qvel[:, :2] - before


def test_every_kick_is_remembered_by_the_side_of_the_robot_it_points_to(host, motion):
    env = make_env(host, motion, num_envs=64, seed=3, config=FULL_STRENGTH)
    env.reset()
    assert env.pusher.aim is None and (env.pusher.side == -1).all()
    yaw, kick = _kick_everyone(env)
    # the side is the robot's, not the world's
    assert np.array_equal(push_sector(np.arctan2(kick[:, 1], kick[:, 0]) - yaw), env.pusher.side)
    assert len(set(env.pusher.side.tolist())) == 4


def test_an_aimed_kick_keeps_its_drawn_speed_and_points_at_the_side_the_checks_fail(host, motion):
    env = make_env(host, motion, num_envs=64, seed=3, config=AIMED)
    env.reset()
    env.observe_verdict({"robust_by_direction": _check(0.25, 1.0)})
    assert env.pusher.aim.probabilities()[FORWARD] == pytest.approx(0.7)
    yaw, kick = _kick_everyone(env)
    assert np.array_equal(push_sector(np.arctan2(kick[:, 1], kick[:, 0]) - yaw), env.pusher.side)
    assert np.mean(env.pusher.side == FORWARD) > 0.5
    # the speed is the one the x and y ranges drew: up to 0.3·√(g·L) a side
    limit = 0.3 * np.sqrt(9.81 * env.reference.root_pos_w[:, 2].max()) * np.sqrt(2)
    speed = np.hypot(*kick.T)
    assert np.all(speed <= limit + 1e-9) and speed.max() > 0.5 * limit


def test_training_logs_the_aim_of_every_side_and_a_resume_keeps_it(host, motion):
    env = make_env(host, motion, num_envs=8, seed=2, config=AIMED)
    env.reset()
    env.observe_verdict({"robust_by_direction": _check(0.0, 1.0)})
    info = env.step(np.zeros((8, env.num_actions), np.float32)).info
    for side in PUSH_DIRECTIONS:
        assert {f"push/check_failures_{side}", f"push/aim_{side}"} <= info.keys()
    assert info["push/check_failures_forward"] == 1.0 and info["push/aim_left"] == 0.1
    fresh = make_env(host, motion, num_envs=8, seed=2, config=AIMED)
    fresh.load_state_dict(env.state_dict())
    assert np.allclose(fresh.pusher.aim.probabilities(), env.pusher.aim.probabilities())


def test_the_checks_push_is_never_aimed(host, motion):
    from primebot.pipeline.sim.task import merge_settings
    from primebot.plugins.tasks.tracking.task import PLAY

    check = merge_settings(AIMED, merge_settings(merge_settings(PLAY.evaluation, PLAY.spread),
                                                 PLAY.robustness))
    assert make_env(host, motion, num_envs=2, config=check).pusher.aim is None


def test_an_unknown_aim_is_refused_by_name():
    from primebot.pipeline.api import ConfigError
    from primebot.pipeline.train.train_config import check_choices
    from primebot.plugins.tasks.tracking.task import SETTING_CHOICES

    with pytest.raises(ConfigError, match="randomization.push.aim must be random or adaptive"):
        check_choices({"randomization": {"push": {"aim": "forward"}}}, dict(SETTING_CHOICES))
