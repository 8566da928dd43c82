"""The tracking task's training randomisation on q1 and motions/wave.npz: reset noise, physics
spreads, delay, pushes, the checks' robustness episodes and the curriculum's strength in the env."""

from __future__ import annotations

import numpy as np
import pytest
from tracking_env import EXACT, FULL_STRENGTH, make_env

from primebot.pipeline.api import ConfigError


def _start_offsets(host, motion, randomization):
    env = make_env(host, motion, num_envs=6, seed=3,
                   config={"sampling": {"mode": "uniform"}, "randomization": randomization})
    env.reset()
    xpos = env.sim.bind("xpos")
    return np.linalg.norm(xpos[:, 1] - motion.body_pos_w[env.time_steps, 0], axis=-1)


def test_reset_noise_moves_the_start_pose_when_randomising(host, motion):
    offsets = _start_offsets(host, motion, {"curriculum": None})
    assert np.all(offsets > 0) and np.all(offsets < 0.1)


def test_reset_noise_scales_with_the_curriculum_strength(host, motion):
    """At strength 0: exact reference starts; at 0.5 the same draws move the pose half as far."""
    assert np.all(_start_offsets(host, motion, {"curriculum": {"start": 0.0}}) < 1e-9)
    half = _start_offsets(host, motion, {"curriculum": {"start": 0.5}})
    full = _start_offsets(host, motion, {"curriculum": None})
    assert np.all(half > 0) and np.all(half < full)


def test_the_env_hands_the_curriculum_the_checks_mpkpe_as_a_share_of_its_limit(host, motion):
    config = {"randomization": {"curriculum": {"start": 0.5, "fall_back_after": 1}}}
    env = make_env(host, motion, num_envs=2, config=config)
    env.observe_verdict({"success_rate": 1.0, "verdict": {"tracked": False}})  # fell back: held
    assert env.randomization_strength == 0.25 and env.curriculum.hold == 2
    close = {"tracked": True, "mpkpe_m": 0.008, "mpkpe_limit_m": 0.01}
    env.observe_verdict({"success_rate": 1.0, "verdict": close})
    assert env.randomization_strength == 0.25
    env.observe_verdict({"success_rate": 1.0, "verdict": {**close, "mpkpe_m": 0.005}})
    assert env.randomization_strength == 0.5


def test_a_verdict_check_moves_a_verdict_curriculum_and_the_next_resets_feel_it(host, motion):
    config = {"sampling": {"mode": "uniform"},
              "randomization": {"curriculum": {"start": 1.0, "signal": "verdict", "step": 0.5}}}
    env = make_env(host, motion, num_envs=6, seed=3, config=config)
    env.observe_verdict({"success_rate": 0.1, "verdict": {"tracked": False}})
    assert (
        env.randomization_strength == 0.5
        and env.pusher.strength == 0.5
        and not env.curriculum_complete
    )
    assert env.curriculum_progress == 0.5  # ranks the checks for model_best.pt
    # up, but not yet tracking
    env.observe_verdict({"success_rate": 1.0, "verdict": {"tracked": False}})
    assert env.randomization_strength == 0.5
    env.observe_verdict({"success_rate": 1.0, "verdict": {"tracked": True}})
    assert env.randomization_strength == 1.0 and env.curriculum_complete
    env.observe_verdict({"success_rate": 0.0})
    env.observe_verdict({"success_rate": 0.0})
    env.reset()  # at strength 0: exact reference starts
    xpos = env.sim.bind("xpos")
    assert np.all(np.linalg.norm(xpos[:, 1] - motion.body_pos_w[env.time_steps, 0], axis=-1) < 1e-9)


def test_randomisation_draws_per_env_physics_and_one_switch_turns_it_all_off(host, motion):
    env = make_env(host, motion, num_envs=4, config=FULL_STRENGTH)
    friction = env.sim.batch.expanded("geom_friction")[:, :, 0]
    assert np.all((friction >= 0.3) & (friction <= 1.2)) and len(set(friction[:, 0].tolist())) == 4
    model, anchor = env.model_info.model, env.model_info.indices.anchor_body_id
    mass = env.sim.batch.expanded("body_mass")
    others = [b for b in range(1, model.nbody) if b != anchor]
    ratio = mass[:, others] / model.body_mass[others]
    assert np.all((ratio >= 0.9) & (ratio <= 1.1)) and env.pusher is not None
    # the anchor carries up to 15 % of the robot's mass on top of its own ±10 %
    payload = mass[:, anchor] - model.body_mass[anchor]
    assert np.all((payload >= -0.1 * model.body_mass[anchor]) &
                  (payload <= 0.1 * model.body_mass[anchor] + 0.15 * model.body_mass[1:].sum()))
    acts = env.model_info.indices.actuator_ids
    strength = (
        env.sim.batch.expanded("actuator_gainprm")[:, acts, 0] / model.actuator_gainprm[acts, 0]
    )
    assert np.all((strength >= 0.75) & (strength <= 1.25)) and np.allclose(strength,
                                                                           strength[:, :1])
    damping = (
        env.sim.batch.expanded("actuator_biasprm")[:, acts, 2] / model.actuator_biasprm[acts, 2]
    )
    np.testing.assert_allclose(damping, strength)
    assert set(env.actuation.delay.tolist()) <= {0, 1}
    assert np.all(np.abs(env.actuation.bias) <= 0.015) and np.any(env.actuation.bias)

    exact = make_env(host, motion, num_envs=4, config=EXACT)
    assert (
        exact.sim.batch.expanded("geom_friction") is None
        and exact.pusher is None
        and exact.actuation is None
    )


def test_reset_noise_and_centre_of_mass_offsets_are_sized_to_the_robot(host, motion):
    """As the pushes are: lengths in units of L (the reference's highest root height), speeds in
    √(g·L), rates in √(g/L); for the q1 they stay what they were in metres (mjlab's values)."""
    from primebot.plugins.tasks.tracking.randomization import reset_noise_ranges
    from primebot.plugins.tasks.tracking.task import SETTINGS

    rand = SETTINGS["randomization"]
    length = float(motion.body_pos_w[:, 0, 2].max())
    (_, pose), (_, velocity) = reset_noise_ranges(rand, length)
    np.testing.assert_allclose(pose, [0.05, 0.05, 0.01, 0.1, 0.1, 0.2], rtol=0.03)
    np.testing.assert_allclose(velocity, [0.5, 0.5, 0.2, 0.52, 0.52, 0.78], rtol=0.03)
    # a robot twice as tall: twice the offsets, √2 the speeds, 1/√2 the rates, the same angles
    (_, pose_2), (_, velocity_2) = reset_noise_ranges(rand, 2 * length)
    np.testing.assert_allclose(pose_2 / pose, [2, 2, 2, 1, 1, 1])
    np.testing.assert_allclose(velocity_2 / velocity, [2**0.5] * 3 + [2**-0.5] * 3)

    env = make_env(host, motion, num_envs=16, config=FULL_STRENGTH)
    np.testing.assert_allclose(env._reset_velocity_range[1], velocity)
    model, anchor = env.model_info.model, env.model_info.indices.anchor_body_id
    offset = env.sim.batch.expanded("body_ipos")[:, anchor] - model.body_ipos[anchor]
    reach = np.array([0.05, 0.1, 0.1]) * length
    assert np.all(np.abs(offset) <= reach + 1e-12) and np.all(np.abs(offset).max(0) > 0.5 * reach)


def test_a_delayed_env_gets_its_targets_a_step_late_and_the_servo_holds_the_biased_reading(
    host, motion
):
    env = make_env(host, motion, num_envs=2,
                   config={"observations": {"noise": False}, **FULL_STRENGTH})
    env.actuation.drawn_delay[:] = [0, 1]
    env.actuation.drawn_bias[:] = [[0.0] * 22, [0.01] * 22]
    env.actuation.apply(1.0)
    env.reset()
    origin = env.reference.joint_pos[env.time_steps].copy()
    # a fresh episode's hold
    np.testing.assert_allclose(env.sim.ctrl[1, env._ctrl_cols], origin[1] - 0.01)
    obs = env.step(np.ones((2, 22), np.float32)).obs
    chosen = origin + env.action_scale
    np.testing.assert_allclose(env.sim.ctrl[0, env._ctrl_cols], chosen[0])  # on time, no bias
    # last step's targets
    np.testing.assert_allclose(env.sim.ctrl[1, env._ctrl_cols], origin[1] - 0.01)
    joint_pos = env.policy_observations.layout.slice("joint_pos")
    truth = env.state.joint_pos - env._default_joint_pos
    # the policy reads q + bias
    np.testing.assert_allclose(obs[1, joint_pos], truth[1] + 0.01, atol=1e-6)
    critic = env.critic_observations
    np.testing.assert_allclose(critic.buffer[1, critic.layout.slice("joint_pos")],
                               truth[1], atol=1e-6)  # the critic reads the truth


def test_a_push_adds_root_velocity_when_due(host, motion):
    env = make_env(host, motion, num_envs=3,
                   config={"observations": {"noise": False}, **FULL_STRENGTH})
    env.reset()
    env.pusher.countdown[:] = [1, 5, 5]  # env 0 is pushed at the next step
    before = env.sim.qvel[:, :3].copy()
    env.pusher.step()
    assert env.pusher.total == 1
    assert np.any(env.sim.qvel[0, :3] != before[0]) and np.array_equal(
        env.sim.qvel[1:, :3], before[1:]
    )
    assert 1.0 / env.step_dt <= env.pusher.countdown[0] <= 3.0 / env.step_dt


def test_the_checks_robustness_episodes_are_the_stress_tests_one_push_each(host, motion):
    """Pushed every 1-3 s from any start, a check's episodes near a motion's end were never
    pushed: on the 4.3 s kick almost half of them, and a check at 0.75 under the push was a policy
    that the stress test's push knocked over in every episode."""
    from primebot.pipeline.sim.task import merge_settings
    from primebot.plugins.tasks.tracking.task import PLAY

    # over a training config whose calm envs the check must not inherit: every episode is pushed
    trained = {"randomization": {"calm_envs": 0.5}}
    settings = merge_settings(trained, merge_settings(merge_settings(PLAY.evaluation, PLAY.spread),
                                                      PLAY.robustness))
    # no failures: every episode runs its whole window
    settings = merge_settings(settings, {"terminations": dict.fromkeys(
        ("anchor_height", "anchor_orientation", "end_effector_height"))})
    env = make_env(host, motion, num_envs=64, seed=4, config=settings)
    env.reset()
    window = round(4.0 / env.step_dt)
    assert env.max_episode_length == window
    assert env.time_steps.max() <= motion.num_frames - 1 - window
    pushed_at = np.full(64, -1)
    for k in range(1, window + 1):
        result = env.step(np.zeros((64, 22), np.float32))
        assert result.truncated.all() == (k == window) and not result.terminated.any()
        pushed_at[(env.pusher.countdown > window) & (pushed_at < 0)] = k
    # each env pushed exactly once, in the window's second quarter, like the stress test's push
    assert env.pusher.total == 64
    assert np.all((pushed_at >= window // 4) & (pushed_at <= window // 2))
    # the time-out started new episodes: each is due a push of its own
    assert np.all((env.pusher.countdown >= window // 4) & (env.pusher.countdown <= window // 2))


def test_the_curriculum_is_complete_only_at_full_strength(host, motion):
    assert not make_env(
        host, motion, num_envs=2, config={"randomization": {"curriculum": {"start": 0.0}}}
    ).curriculum_complete
    assert make_env(host, motion, num_envs=2).curriculum_complete  # the default: no curriculum
    assert make_env(
        host, motion, num_envs=2, config={"randomization": {"curriculum": {"start": 1.0}}}
    ).curriculum_complete
    assert make_env(host, motion, num_envs=2, config=FULL_STRENGTH).curriculum_complete
    # nothing to ramp up
    assert make_env(host, motion, num_envs=2, config=EXACT).curriculum_complete


def test_the_strength_is_logged_only_when_a_curriculum_runs(host, motion):
    on = make_env(host, motion, num_envs=2,
                  config={"randomization": {"curriculum": {"start": 0.2}}})
    on.reset()
    assert on.step(np.zeros((2, 22), np.float32)).info["randomization/strength"] == 0.2
    off = make_env(host, motion, num_envs=2, config=FULL_STRENGTH)
    off.reset()
    assert "randomization/strength" not in off.step(np.zeros((2, 22), np.float32)).info


def test_calm_envs_train_unrandomised_and_leave_the_others_draws_alone(host, motion):
    """``calm_envs: 0.5``: the last half of the envs keep the model's physics, have no delay, no
    encoder bias, no reset noise and are never pushed; the first half draw what they drew
    without calm envs."""
    def build(share):
        config = {"sampling": {"mode": "uniform"}, "randomization": {
            "curriculum": None, "calm_envs": share,
            "push": {"interval_s": [0.02, 0.02], "velocity": {"x": [0.3, 0.3]}}}}
        env = make_env(host, motion, num_envs=6, seed=3, config=config)
        env.reset()
        return env

    plain, calm = build(0.0), build(0.5)
    model = calm.model_info.model
    friction = calm.sim.batch.expanded("geom_friction")[:, 0, 0]
    mass = calm.sim.batch.expanded("body_mass")
    assert np.allclose(friction[3:], model.geom_friction[0, 0])
    assert np.allclose(mass[3:], model.body_mass)
    assert np.array_equal(friction[:3], plain.sim.batch.expanded("geom_friction")[:3, 0, 0])
    assert np.array_equal(mass[:3], plain.sim.batch.expanded("body_mass")[:3])
    assert not calm.actuation.delay[3:].any() and not calm.actuation.bias[3:].any()
    assert np.array_equal(calm.actuation.bias[:3], plain.actuation.bias[:3])
    xpos = calm.sim.bind("xpos")
    offsets = np.linalg.norm(xpos[:, 1] - motion.body_pos_w[calm.time_steps, 0], axis=-1)
    assert np.all(offsets[3:] < 1e-9) and np.all(offsets[:3] > 0)
    lin = calm.model_info.root_lin_vel_qvel
    before = calm.sim.qvel[:, lin].copy()
    assert calm.pusher.step() == 3  # every env was due; the calm half is not pushed
    kick = calm.sim.qvel[:, lin] - before
    assert np.all(kick[3:] == 0) and np.all(kick[:3, 0] > 0)


def test_calm_envs_must_be_a_fraction(host, motion):
    with pytest.raises(ConfigError, match="calm_envs"):
        make_env(host, motion, num_envs=2, config={"randomization": {"calm_envs": 1.0}})
