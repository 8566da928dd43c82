"""The tracking task on q1 and motions/wave.npz: layout, resets, terminations, determinism,
plugins."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from tracking_env import EXACT, make_env

from primebot.pipeline.errors import CheckpointError, ConfigError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.rotations import quat_error_magnitude
from primebot.pipeline.sim.rewards import RewardTerm


def test_observation_layout_and_dimensions_for_q1(host, motion):
    env = make_env(host, motion, config={**EXACT, "sampling": {"mode": "uniform"}})
    obs, critic = env.reset()
    j = 22
    assert env.num_obs == 5 * j + 9 == 119 and obs.shape == (4, 119) and obs.dtype == np.float32
    assert (
        env.num_actions == j
        and env.step_dt == pytest.approx(0.02)
        and env.max_episode_length == 500
    )
    # critic: command 2J, anchor pos 3, anchor ori 6, 14 bodies x (3 + 6), lin vel 3, ang vel 3, 3J
    assert env.num_critic_obs == 2 * j + 3 + 6 + 14 * 9 + 3 + 3 + 3 * j and critic.shape == (
        4,
        env.num_critic_obs,
    )
    assert env.observation_names == (
        "command",
        "motion_anchor_ori_b",
        "base_ang_vel",
        "joint_pos",
        "joint_vel",
        "actions",
    )

    actions = np.random.default_rng(1).uniform(-1, 1, (4, j)).astype(np.float32)
    result = env.step(actions)
    alive = ~(result.terminated | result.truncated)
    assert alive.any()
    t = env.time_steps
    obs = result.obs
    np.testing.assert_allclose(obs[:, :j], motion.joint_pos[t], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(obs[:, j : 2 * j], motion.joint_vel[t], rtol=1e-6, atol=1e-5)
    joint_pos = env.sim.qpos[:, env.model_info.indices.qpos_adr]
    np.testing.assert_allclose(
        obs[alive, 2 * j + 9 : 3 * j + 9],
        (joint_pos - env.robot.default_joint_pos)[alive],
        atol=1e-6,
    )
    np.testing.assert_allclose(obs[alive, 4 * j + 9 :], actions[alive])
    # base angular velocity = the free joint's body-frame angular velocity
    np.testing.assert_allclose(obs[:, 2 * j + 6 : 2 * j + 9], env.sim.qvel[:, 3:6], atol=1e-5)
    # anchor orientation columns: identity when the robot anchor matches the reference
    assert np.all(np.abs(obs[:, 2 * j : 2 * j + 6]) <= 1.0 + 1e-6)


def test_reset_lands_on_the_sampled_frames_reference_pose(host, motion):
    env = make_env(host, motion, num_envs=6, config={**EXACT, "sampling": {"mode": "uniform"}})
    env.reset()
    t = env.time_steps.copy()
    assert len(set(t.tolist())) > 1, "uniform sampling should spread start frames"
    xpos, xquat = env.sim.bind("xpos"), env.sim.bind("xquat")
    np.testing.assert_allclose(xpos[:, 1:], motion.body_pos_w[t], atol=1e-5)
    np.testing.assert_allclose(
        quat_error_magnitude(xquat[:, 1:], motion.body_quat_w[t]), 0.0, atol=1e-4
    )
    idx = env.model_info.indices
    np.testing.assert_allclose(env.sim.qvel[:, idx.dof_adr], motion.joint_vel[t], atol=1e-9)


def test_falling_anchor_terminates_and_time_out_truncates(host, motion):
    env = make_env(
        host,
        motion,
        num_envs=3,
        config={**EXACT, "sampling": {"mode": "start"}, "episode_length_s": 0.1},
    )
    env.reset()
    env.sim.qpos[1, 2] += 0.3  # env 1 lifted: its anchor is 0.3 m above the reference
    env.sim.forward()
    zero = np.zeros((3, 22), np.float32)
    result = env.step(zero)
    assert result.terminated.tolist() == [False, True, False]
    assert not result.truncated.any()
    assert result.info["terminations/anchor_height"] == 1.0
    assert env.episode_length[1] == 0 and env.time_steps[1] == 0  # already reset
    for _ in range(4):
        result = env.step(zero)
    # 0.1 s = 5 control steps: a time-out is a truncation, not a failure
    assert result.truncated.tolist() == [True, False, True] and not result.terminated.any()
    assert result.info["terminations/time_out"] == 2.0
    assert env.step(zero).truncated.tolist() == [False, True, False]  # env 1 restarted a step later


def test_end_of_motion_truncates(host, motion):
    env = make_env(host, motion, num_envs=2, config={**EXACT, "sampling": {"mode": "start"}})
    env.reset()
    env.time_steps[:] = motion.num_frames - 3
    zero = np.zeros((2, 22), np.float32)
    assert not env.step(zero).truncated.any()
    result = env.step(zero)
    assert result.truncated.all() and not result.terminated.any()


def _rollout(env, steps=15, seed=3):
    rng = np.random.default_rng(seed)
    obs, _ = env.reset()
    trace = [obs]
    for _ in range(steps):
        result = env.step(rng.uniform(-1, 1, (env.num_envs, env.num_actions)).astype(np.float32))
        trace += [result.obs, result.reward, result.terminated]
    return trace


def test_same_seed_gives_identical_rollouts_and_other_seeds_differ(host, motion):
    a = _rollout(make_env(host, motion, num_envs=5, seed=11))
    b = _rollout(make_env(host, motion, num_envs=5, seed=11))
    c = _rollout(make_env(host, motion, num_envs=5, seed=12))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize("history", [{}, {"joint_vel": 3, "actions": 2}],
                         ids=["now", "with history"])
def test_state_dict_resumes_bit_for_bit(host, motion, history):
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (20, 4, 22)).astype(np.float32)
    # 5-step episodes: the curriculum decides every 5 steps, so its strength moves during the run
    curriculum = {"episode_length_s": 0.1, "observations": {"history": history},
                  "randomization": {"curriculum": {"start": 0.5, "signal": "falls", "step": 0.1}}}
    env = make_env(host, motion, seed=5, config=curriculum)
    env.reset()
    for k in range(10):
        env.step(actions[k])
    saved = env.state_dict()
    assert all(isinstance(v, np.ndarray) for v in saved.values())
    at_save = env.curriculum.strength
    expected = [env.step(actions[k]) for k in range(10, 20)]
    assert 0.5 != at_save != env.curriculum.strength

    resumed = make_env(host, motion, seed=5, config=curriculum)
    resumed.load_state_dict(saved)
    resumed.reset()  # after a load: the restored episodes, not new ones
    for k, want in zip(range(10, 20), expected, strict=True):
        got = resumed.step(actions[k])
        np.testing.assert_array_equal(got.obs, want.obs)
        np.testing.assert_array_equal(got.reward, want.reward)
    np.testing.assert_array_equal(resumed.sampler.failed_count, env.sampler.failed_count)


def test_an_env_state_without_a_part_this_primebot_writes_is_refused(host, motion):
    config = {"randomization": {"curriculum": {"start": 0.5}}}
    env = make_env(host, motion, seed=5, config=config)
    env.reset()
    parts_since = ("curriculum/", "window/")
    older = {k: v for k, v in env.state_dict().items() if not k.startswith(parts_since)}
    with pytest.raises(CheckpointError, match="state lacks curriculum/") as info:
        make_env(host, motion, seed=5, config=config).load_state_dict(older)
    assert "retrain" in info.value.fix


def test_physics_fault_resets_the_env_and_is_counted(host, motion, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo logs the warning to ./MUJOCO_LOG.TXT
    env = make_env(host, motion, num_envs=3, config=EXACT)
    env.reset()
    env.sim.qvel[2, 0] = np.nan
    result = env.step(np.zeros((3, 22), np.float32))
    assert result.terminated[2] and result.info["physics_faults"] == 1.0
    assert (
        np.isfinite(result.obs).all()
        and np.isfinite(result.critic_obs).all()
        and np.isfinite(result.reward).all()
    )
    assert np.isfinite(env.sim.qpos).all()


class _BonusPlugin:
    """A user's plugin: one reward term, registered through the real hook."""

    @staticmethod
    def constant_bonus(state, value: float = 1.0) -> np.ndarray:
        return np.full(state.num_envs, value)

    @hookimpl
    def register_reward_terms(self, register) -> None:
        register(
            RewardTerm("test_constant_bonus", self.constant_bonus, "always value", {"value": 1.0})
        )


def test_a_user_reward_term_from_a_plugin_changes_the_reward(motion, caplog):
    host = load_plugins(extra=[("test_bonus", _BonusPlugin())])
    assert host.registry.registration("reward_terms", "test_constant_bonus").plugin == "test_bonus"
    zero = np.zeros((2, 22), np.float32)
    base = make_env(host, motion, num_envs=2, config=EXACT)
    base.reset()
    with caplog.at_level(logging.INFO):
        bonus = make_env(
            host,
            motion,
            num_envs=2,
            config={
                **EXACT,
                "log_reward_terms": True,
                "rewards": {"test_constant_bonus": {"weight": 2.0, "params": {"value": 0.5}}},
            },
        )
    assert "test_constant_bonus" in caplog.text and "test_bonus" in caplog.text
    bonus.reset()
    a, b = base.step(zero), bonus.step(zero)
    np.testing.assert_allclose(b.reward - a.reward, 2.0 * 0.5 * 0.02, rtol=1e-5)
    assert "episode/test_constant_bonus" in b.info


def test_unknown_config_keys_are_refused(host, motion):
    from primebot.pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="randomisation"):
        make_env(host, motion, config={"randomisation": {"enabled": False}})


def test_a_whole_section_set_to_null_is_refused_naming_its_keys_and_a_leaf_mapping_may_be(
        host, motion):
    from primebot.pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="'randomization' is a section") as info:
        make_env(host, motion, config={"randomization": None})
    assert "enabled" in info.value.fix
    env = make_env(host, motion, config={"randomization": {"push": None}})
    assert env.pusher is None


@pytest.mark.parametrize("fresh", [True, False])
def test_body_poses_are_current_with_fresh_kinematics_and_one_substep_old_without(
    host, motion, fresh
):
    import mujoco

    env = make_env(host, motion, num_envs=2, config={**EXACT, "fresh_kinematics": fresh})
    env.reset()
    env.step(np.full((2, 22), 0.3, np.float32))
    model = env.model_info.model
    data = mujoco.MjData(model)
    data.qpos[:] = env.sim.qpos[0]
    mujoco.mj_kinematics(model, data)
    anchor = env.model_info.indices.anchor_body_id
    gap = np.abs(env.state.anchor_pos_w[0] - data.xpos[anchor]).max()
    if fresh:
        assert gap < 1e-12
    else:
        assert 0 < gap < 0.02  # 5 ms of motion


def test_default_config_is_plain_yaml_with_every_documented_switch(host):
    import yaml

    spec = host.registry.get("tasks", "tracking")
    cfg = spec.default_config
    assert yaml.safe_load(yaml.safe_dump(dict(cfg))) == cfg  # args.yaml holds it as it is
    assert cfg["randomization"]["enabled"] is True and cfg["observations"]["noise"] is True
    assert cfg["rewards"]["body_pos_error_exp"] == {"weight": 1.0, "params": {"std": 0.3}}
    assert cfg["rewards"]["body_pos_error_fine_exp"] == {
        "term": "body_pos_error_exp", "weight": 1.0, "params": {"std": 0.02}}
    assert len(cfg["rewards"]) == 10 and "rewards" in spec.open_config_sections


def test_the_declared_task_is_the_one_before_the_declaration(host, motion):
    """What the policy sees, what it is rewarded for and what ends an episode, as before the
    tracking task was declared in task.py (the layout the exported ONNX files of earlier runs
    name), plus the fine kernel of the body position error added since."""
    env = make_env(host, motion, config=EXACT)
    j, k = 22, 14
    assert env.observation_terms == (("command", 2 * j), ("motion_anchor_ori_b", 6),
                                     ("base_ang_vel", 3),
                                     ("joint_pos", j), ("joint_vel", j), ("actions", j))
    assert env.critic_observations.layout.terms == (
        ("command", 2 * j), ("motion_anchor_pos_b", 3), ("motion_anchor_ori_b", 6),
        ("body_pos", 3 * k),
        ("body_ori", 6 * k), ("base_lin_vel", 3), ("base_ang_vel", 3), ("joint_pos", j),
        ("joint_vel", j),
        ("actions", j))
    assert [(t.name, t.weight, dict(t.params)) for t in env.rewards.terms] == [
        ("anchor_pos_error_exp", 0.5, {"std": 0.05}), ("anchor_ori_error_exp", 0.5, {"std": 0.4}),
        ("body_pos_error_exp", 1.0, {"std": 0.3}), ("body_pos_error_fine_exp", 1.0, {"std": 0.02}),
        ("body_ori_error_exp", 1.0, {"std": 0.4}), ("body_lin_vel_error_exp", 1.0, {"std": 1.0}),
        ("body_ang_vel_error_exp", 1.0, {"std": 3.14}),
        ("action_rate_l2", -0.1, {}), ("joint_pos_limits", -10.0, {}),
        ("self_collision", -10.0, {})]
    assert env.rewards.terms[3].term.name == "body_pos_error_exp"
    assert [(name, params) for name, _, params in env.terminations.checks] == [
        ("anchor_height", {"threshold": 0.25}), ("anchor_orientation", {"threshold": 0.8}),
        ("end_effector_height", {"threshold": 0.25})]
    noisy = make_env(host, motion)
    span = noisy.policy_observations._noise
    # anchor orientation .. joint velocities, one draw
    assert span.cols == slice(2 * j, 2 * j + 9 + 2 * j)
    assert span.scale.max() == pytest.approx(1.0) and span.scale[9 + j:].tolist() == [1.0] * j


class _SensorPlugin:
    """A third-party plugin: one observation term and one failure check for the tracking task."""

    @staticmethod
    def anchor_height(state):
        return state.anchor_pos_w[:, 2:3]

    @staticmethod
    def anchor_below(state, threshold=0.0):
        return state.anchor_pos_w[:, 2] < threshold

    @hookimpl
    def register_observation_terms(self, register):
        from primebot.pipeline.api import ObservationTerm

        register(ObservationTerm("test_anchor_height", self.anchor_height, 1, "anchor height (m)"))

    @hookimpl
    def register_termination_terms(self, register):
        from primebot.pipeline.api import TerminationTerm

        register(TerminationTerm("test_anchor_below", self.anchor_below,
                                 "anchor below threshold (m)"))


def test_a_plugin_observation_and_termination_term_reach_the_tracking_task_through_set(motion):
    from primebot.pipeline.sim.task import merge_settings
    from primebot.pipeline.train.session import TrainRequest, resolve_config

    host = load_plugins(extra=[("test_sensors", _SensorPlugin())])
    cfg = resolve_config(host.registry, TrainRequest(sets=[
        "task.observations.test_anchor_height={group: critic}",
        # every anchor is below 10 m: every episode fails
        "task.terminations.test_anchor_below=10.0",
    ]), "cpu")
    env = make_env(host, motion, num_envs=2, config=merge_settings(cfg.task_config, EXACT))
    base = make_env(host, motion, num_envs=2, config=EXACT)
    assert env.num_obs == base.num_obs and env.num_critic_obs == base.num_critic_obs + 1
    env.reset()
    result = env.step(np.zeros((2, 22), np.float32))
    assert result.critic_obs[:, -1].tolist() == pytest.approx(env.state.anchor_pos_w[:, 2].tolist(),
                                                              abs=1e-6)
    assert result.terminated.all() and result.info["terminations/test_anchor_below"] == 2.0
    with pytest.raises(Exception, match="test_anchor_hieght"):
        make_env(host, motion, config={**EXACT, "observations": {"test_anchor_hieght": {}}})


def test_a_term_appended_to_the_policy_takes_its_own_training_noise(host, motion):
    plain = make_env(host, motion, num_envs=2)
    env = make_env(host, motion, num_envs=2,
                   config={"observations": {"base_lin_vel": {"group": "policy", "noise": 0.5}}})
    assert env.num_obs == plain.num_obs + 3
    span = env.policy_observations._noise
    cols = env.policy_observations.layout.slice("base_lin_vel")
    # uniform ±0.5: the span stores 2·scale
    assert span.scale[cols.start - span.cols.start:].tolist() == [1.0] * 3
    quiet = make_env(host, motion, num_envs=2, config={
        "observations": {"noise": False, "base_lin_vel": {"group": "policy", "noise": 0.5}}})
    assert quiet.policy_observations._noise is None
    for bad in (-1, "loud", True):
        with pytest.raises(ConfigError, match="observations.base_lin_vel.noise"):
            make_env(host, motion, num_envs=2,
                     config={"observations": {"base_lin_vel": {"group": "policy", "noise": bad}}})


def test_critic_body_terms_are_tracked_bodies_in_the_anchor_frame(host, motion):
    from primebot.pipeline import rotations as rot

    env = make_env(host, motion, num_envs=3, config={**EXACT, "sampling": {"mode": "uniform"}})
    env.reset()
    result = env.step(np.random.default_rng(2).uniform(-1, 1, (3, 22)).astype(np.float32))
    s, layout = env.state, env.critic_observations.layout
    anchor_q = s.anchor_quat_w[:, None]
    pos_b = rot.quat_apply_inverse(anchor_q, s.body_pos_w - s.anchor_pos_w[:, None])
    ori_b = rot.matrix_first_two_columns(rot.quat_mul(rot.quat_conjugate(anchor_q), s.body_quat_w))
    np.testing.assert_allclose(
        result.critic_obs[:, layout.slice("body_pos")], pos_b.reshape(3, -1), atol=1e-6
    )
    np.testing.assert_allclose(
        result.critic_obs[:, layout.slice("body_ori")], ori_b.reshape(3, -1), atol=1e-6
    )
    anchor_b = rot.quat_apply_inverse(s.anchor_quat_w, s.ref_anchor_pos_w - s.anchor_pos_w)
    np.testing.assert_allclose(
        result.critic_obs[:, layout.slice("motion_anchor_pos_b")], anchor_b, atol=1e-6
    )


def test_body_velocities_match_mujocos_object_velocity(host, motion):
    import mujoco

    env = make_env(host, motion, num_envs=2, config={**EXACT, "fresh_kinematics": True})
    env.reset()
    env.step(np.random.default_rng(4).uniform(-1, 1, (2, 22)).astype(np.float32))
    model = env.model_info.model
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = env.sim.qpos[1], env.sim.qvel[1]
    mujoco.mj_forward(model, data)
    for k, body in enumerate(env.model_info.body_ids):
        vel = np.zeros(6)  # (angular, linear) at the body origin, world frame
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, int(body), vel, 0)
        np.testing.assert_allclose(env.state.all_body_ang_vel_w[1, k], vel[:3], atol=1e-9)
        np.testing.assert_allclose(env.state.all_body_lin_vel_w[1, k], vel[3:], atol=1e-9)


def test_non_finite_actions_never_reach_the_controls_and_info_has_every_log_key(host, motion):
    env = make_env(host, motion, num_envs=2, config=EXACT)
    env.reset()
    actions = np.full((2, 22), np.nan, np.float32)
    result = env.step(actions)
    assert np.isfinite(env.sim.ctrl).all() and np.isfinite(result.obs).all()
    np.testing.assert_array_equal(
        result.obs[:, -22:], 0.0
    )  # the recorded last action is the 0 used
    keys = set(result.info)
    assert {f"episode/{name}" for name in env.rewards.names} <= keys
    assert {"episode/length", "episode/finished", "physics_faults", "terminations/time_out"} <= keys
    assert all(isinstance(v, float) for v in result.info.values())


def test_a_motion_at_another_frame_rate_is_resampled_to_the_control_rate(host, motion):
    import dataclasses

    from primebot.plugins.tasks.tracking.model import build_tracking_model
    from primebot.plugins.tasks.tracking.reference import MotionReference

    robot = host.registry.get("robots", "q1")
    tm = build_tracking_model(robot)
    slow = dataclasses.replace(motion, fps=25.0, **{k: v[::2] for k, v in motion.arrays().items()})
    ref = MotionReference(slow, robot, tm, control_dt=0.02)
    assert ref.num_steps == 2 * (slow.num_frames - 1) + 1
    np.testing.assert_allclose(ref.joint_pos[::2], slow.joint_pos, atol=1e-12)
    np.testing.assert_allclose(
        ref.joint_pos[1::2], 0.5 * (slow.joint_pos[:-1] + slow.joint_pos[1:]), atol=1e-12
    )
    # the reference quaternion halfway between two frames is halfway in angle
    from primebot.pipeline.rotations import quat_error_magnitude

    half = quat_error_magnitude(ref.body_quat_w[1:-1:2], ref.body_quat_w[:-2:2])
    full = quat_error_magnitude(ref.body_quat_w[2::2], ref.body_quat_w[:-2:2])
    np.testing.assert_allclose(half, 0.5 * full, atol=1e-7)


def test_physics_dt_sets_trainings_physics_step_and_decimation_keeps_the_control_rate(host, motion):
    default = make_env(host, motion, num_envs=2, config=EXACT)
    coarse = make_env(host, motion, num_envs=2,
                      config={**EXACT, "physics_dt": 0.01, "decimation": 2})
    assert default.sim.physics_dt == 0.005 and coarse.sim.physics_dt == 0.01
    assert coarse.step_dt == default.step_dt == 0.02
    for env in (default, coarse):
        env.reset()
        before = env.sim.time.copy()
        env.step(np.zeros((2, env.num_actions), np.float32))
        np.testing.assert_allclose(env.sim.time - before, 0.02, atol=1e-9)
    # the reference is played at the same rate: both observe the same command after a step
    np.testing.assert_allclose(coarse.reference.joint_pos, default.reference.joint_pos)
    for bad in (0, -0.01, "fast", float("nan"), 0.5):
        with pytest.raises(ConfigError, match="task.physics_dt"):
            make_env(host, motion, num_envs=1, config={**EXACT, "physics_dt": bad})


@pytest.mark.parametrize("physics_dt, decimation, keeps", [(None, 2, 4), (0.01, 4, 2)])
def test_a_control_period_off_the_motions_50_fps_is_warned_naming_the_decimation(
        host, motion, caplog, physics_dt, decimation, keeps):
    # with the MJCF's own step too: a decimation left at 2 after `--set task.physics_dt=null`
    with caplog.at_level("WARNING"):
        make_env(host, motion, num_envs=1,
                 config={**EXACT, "physics_dt": physics_dt, "decimation": decimation})
    assert f"set task.decimation={keeps} for that" in caplog.text


def test_the_env_counts_the_start_samplers_visits_with_per_visit(host, motion):
    env = make_env(host, motion, num_envs=8, config={"sampling": {"per_visit": True}})
    try:
        env.reset()
        for _ in range(5):
            env.step(np.zeros((8, env.num_actions), dtype=np.float32))
        # 8 envs x 5 steps, counted where each env was (moving average, alpha per step)
        assert env.sampler.visit_count.sum() == pytest.approx(
            8 * sum(0.001 * 0.999 ** k for k in range(5)), rel=0.02)
        assert "sampler/visit_count" in env.state_dict()
    finally:
        env.close()
    plain = make_env(host, motion, num_envs=2)
    try:
        assert "sampler/visit_count" not in plain.state_dict()  # mjlab's counts: nothing new
    finally:
        plain.close()


def test_the_last_slot_starts_at_the_first_frame_and_the_others_as_they_would_without_it(host,
                                                                                         motion):
    """``sampling.last_slot_from_start``: a verdict check's first-frame episode as one more slot of
    its stratified env (instead of a 1-env batch of its own), the other starts drawn as an env of
    one slot fewer draws them, on every reset."""
    stratified = {**EXACT, "sampling": {"mode": "stratified"}}
    with_start = make_env(host, motion, num_envs=5, seed=7, config={
        **EXACT, "sampling": {"mode": "stratified", "last_slot_from_start": True}})
    without = make_env(host, motion, num_envs=4, seed=7, config=stratified)
    try:
        with_start.reset(), without.reset()
        assert with_start.time_steps[4] == 0
        np.testing.assert_array_equal(with_start.time_steps[:4], without.time_steps)
        assert len(set(without.time_steps.tolist())) == 4  # drawn, not all frame 0
        with_start._reset_envs(np.array([1, 4])), without._reset_envs(np.array([1]))
        assert with_start.time_steps[4] == 0 and with_start.time_steps[1] == without.time_steps[1]
    finally:
        with_start.close(), without.close()
