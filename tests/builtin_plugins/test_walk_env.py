"""WalkEnv on real MuJoCo: shapes, what the observation reads, rewards, falls, time limit,
determinism."""

from __future__ import annotations

import numpy as np
import pytest

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.sim.task import TaskSpec
from primebot.plugins.robots.biped4.spec import biped4_spec
from primebot.plugins.tasks.walk.task import make_walk_env


def _env(num_envs=4, seed=0, **config):
    return make_walk_env(robot=biped4_spec(), num_envs=num_envs, seed=seed, config=config,
                         num_threads=1)


def test_walk_task_is_registered_and_builds_through_the_registry():
    host = load_plugins(environ={})
    spec = host.registry.get("tasks", "walk")
    assert isinstance(spec, TaskSpec) and not spec.needs_motion and spec.default_robot == "biped4"
    robot = host.registry.get("robots", spec.default_robot)
    env = spec.make_env(robot=robot, motion=None, num_envs=2, seed=0, config={},
                        registry=host.registry, num_threads=1)
    assert (env.num_obs, env.num_critic_obs, env.num_actions, env.max_episode_length) == (
        14,
        17,
        4,
        1000,
    )
    assert env.step_dt == pytest.approx(0.02)


def test_observation_reads_pitch_joints_and_previous_action_from_the_simulation():
    env = _env(num_envs=3, randomization={"enabled": False})
    obs, critic = env.reset()
    assert (
        obs.shape == (3, 14) and critic.shape == (3, 17) and obs.dtype == critic.dtype == np.float32
    )
    np.testing.assert_array_equal(obs, 0.0)  # the standing pose, at rest, no previous action
    np.testing.assert_allclose(critic[:, 16], 0.59)  # torso height
    actions = np.array([[0.5, -0.5, 0.2, -0.2]] * 3, dtype=np.float32)
    result = env.step(actions)
    qpos, qvel = env.sim.qpos, env.sim.qvel
    np.testing.assert_allclose(result.obs[:, 0], qpos[:, 2], atol=1e-6)
    np.testing.assert_allclose(result.obs[:, 1], qvel[:, 2], atol=1e-5)
    np.testing.assert_allclose(result.obs[:, 2:6],
                               qpos[:, 3:7][:, [0, 2, 1, 3]] - [0.35, 0.35, 0.7, 0.7], atol=1e-6)
    np.testing.assert_allclose(result.obs[:, 6:10], qvel[:, 3:7][:, [0, 2, 1, 3]], atol=1e-5)
    np.testing.assert_array_equal(result.obs[:, 10:14], actions)
    np.testing.assert_allclose(env.sim.ctrl[0], [0.35 + 0.35, 0.35 - 0.35, 0.7 + 0.14, 0.7 - 0.14])


def test_standing_still_earns_the_alive_bonus_per_step():
    env = _env(num_envs=2, randomization={"enabled": False})
    env.reset()
    rewards = []
    for _ in range(100):
        result = env.step(np.zeros((2, 4), dtype=np.float32))
        assert not result.terminated.any()
        rewards.append(result.reward)
    # 1 per second × 0.02 s; the settling crouch moves the torso only millimetres.
    np.testing.assert_allclose(np.mean(rewards, axis=0), 0.02, atol=1e-3)


def test_moving_forward_is_rewarded_and_backward_penalised():
    env = _env(num_envs=2, randomization={"enabled": False})
    env.reset()
    env.sim.qvel[:, 0] = [1.0, -1.0]  # push the whole robot forward / backward
    result = env.step(np.zeros((2, 4), dtype=np.float32))
    alive = 0.02
    assert result.reward[0] > alive + 0.01 and result.reward[1] < alive - 0.01


def test_a_fall_terminates_and_the_env_restarts_standing():
    env = _env(num_envs=2, randomization={"enabled": False})
    env.reset()
    env.sim.qpos[1, 2] = 1.3  # tip env 1 over
    result = env.step(np.zeros((2, 4), dtype=np.float32))
    np.testing.assert_array_equal(result.terminated, [False, True])
    assert not result.truncated.any()
    assert result.reward[1] < 0.02  # no alive bonus for the step it fell in
    assert abs(result.obs[1, 0]) < 1e-9 and result.info["episode/fall_rate"] == 1.0
    assert result.info["episode_count"] == 1


def test_the_time_limit_truncates_without_terminating():
    env = _env(num_envs=2, episode_length=5)
    env.reset()
    total = np.zeros(2)
    for k in range(5):
        result = env.step(np.zeros((2, 4), dtype=np.float32))
        total += result.reward
        assert result.truncated.all() == (k == 4)
    assert not result.terminated.any()
    assert result.info["episode/length"] == 5.0
    assert result.info["episode/return"] == pytest.approx(total.mean(), rel=1e-5)


def _rollout(env, steps=30):
    obs, _ = env.reset()
    rng = np.random.default_rng(7)
    rewards = []
    for _ in range(steps):
        result = env.step(rng.uniform(-1, 1, (env.num_envs, 4)).astype(np.float32))
        rewards.append(result.reward)
    return obs, np.array(rewards), result.obs


def test_same_seed_gives_the_same_rollout_and_randomization_off_gives_identical_envs():
    a, b = _rollout(_env(seed=3)), _rollout(_env(seed=3))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    first_obs, _, _ = _rollout(_env(seed=4))
    assert not np.array_equal(first_obs, a[0])
    exact = _env(num_envs=3, randomization={"enabled": False})
    obs, _ = exact.reset()
    np.testing.assert_array_equal(obs, np.zeros_like(obs))


def test_reset_noise_rng_state_round_trips():
    env = _env(seed=5)
    env.reset()
    state = env.state_dict()
    first = env.reset()[0]
    env.load_state_dict(state)
    np.testing.assert_array_equal(env.reset()[0], first)
