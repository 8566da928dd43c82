"""sim2sim: torch-free, refuses ONNX files that do not fit the robot, catches wrong metadata,
and builds the same observation as the tracking task from sensed quantities."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest
from onnx_metadata import with_metadata, with_renamed
from torch import nn
from torch_free import run_sim2sim_without_torch
from tracking_run import Q1_XML

from primebot.pipeline.deploy.sim2sim import (
    Sim2SimError,
    gap_flags,
    main,
    prepare,
    run_sim2sim,
    sim2sim_run_dir,
)
from primebot.pipeline.evaluate.evaluate_run import evaluate_run
from primebot.pipeline.export.graph import (
    DeployPolicy,
    motion_at_control_rate,
    read_metadata,
    write_onnx,
)
from primebot.pipeline.train.trained_policy import load_trained_policy, make_run_env


def _swap(names: str, a: str, b: str) -> str:
    items = names.split(",")
    i, j = items.index(a), items.index(b)
    items[i], items[j] = items[j], items[i]
    return ",".join(items)


def test_sim2sim_runs_where_importing_torch_fails(exported, tmp_path):
    _, _, onnx_path = exported
    out = tmp_path / "report.json"
    run_sim2sim_without_torch([onnx_path, Q1_XML, "--start", "0", "--output", out])
    report = json.loads(out.read_text())
    assert (
        report["checks_passed"]
        and report["loop"]["physics_hz"] == 1000.0
        and report["loop"]["policy_hz"] == 50.0
    )
    assert report["from_start"]["episodes"] == 1


def test_refuses_an_onnx_whose_observation_size_does_not_fit(exported, tmp_path):
    _, run_dir, onnx_path = exported
    policy = load_trained_policy(run_dir)
    arrays = motion_at_control_rate(policy.motion(), 0.02)
    narrow = DeployPolicy(nn.Linear(100, 22), nn.Identity(), arrays)
    bad = write_onnx(narrow, tmp_path / "narrow.onnx", 100, read_metadata(onnx_path))
    with pytest.raises(Sim2SimError,
                       match="observation size: the graph takes 100 values, observation_sizes add "
                             "up to 119"):
        prepare(bad, Q1_XML)
    sizes = with_metadata(onnx_path, tmp_path / "sizes.onnx", observation_sizes="44,6,3,21,23,22")
    with pytest.raises(Sim2SimError,
                       match="observation term 'joint_pos' has size 21; with 22 joints it must be "
                             "22"):
        prepare(sizes, Q1_XML)


def test_refuses_an_onnx_whose_joints_are_not_the_robots_by_name(exported, tmp_path):
    _, _, onnx_path = exported
    names = read_metadata(onnx_path)["joint_names"].replace("left_knee_joint", "left_knee")
    bad = with_metadata(onnx_path, tmp_path / "renamed.onnx", joint_names=names)
    with pytest.raises(Sim2SimError) as info:
        prepare(bad, Q1_XML)
    message = str(info.value)
    assert "joint 'left_knee' (metadata joint_names) is not in the MJCF" in message
    assert "MJCF hinge joint(s) the policy does not drive: left_knee_joint" in message
    assert main([bad, str(Q1_XML)]) == 2


def test_swapped_joint_order_in_the_metadata_fails_the_checks(exported, tmp_path):
    _, _, onnx_path = exported
    names = read_metadata(onnx_path)["joint_names"]
    # same gains, mirrored defaults (+0.15 / -0.15): only the kinematics check can see it
    mirrored = with_metadata(onnx_path, tmp_path / "mirrored.onnx",
                              joint_names=_swap(names, "left_shoulder_roll_joint",
                                                "right_shoulder_roll_joint"))
    report = run_sim2sim(mirrored, Q1_XML, [0], max_steps=5)
    checks = {c["name"]: c for c in report["checks"]}
    assert not report["checks_passed"]
    assert not checks["reference_pose_matches_kinematics"]["ok"]
    assert (
        "joint order does not match the motion"
        in checks["reference_pose_matches_kinematics"]["detail"]
    )
    assert main([mirrored, str(Q1_XML), "--start", "0"]) == 1

    # hip pitch <-> knee: different gains too
    crossed = with_metadata(onnx_path, tmp_path / "crossed.onnx",
                             joint_names=_swap(names, "left_hip_pitch_joint", "left_knee_joint"))
    checks = {c["name"]: c for c in run_sim2sim(crossed, Q1_XML, [0], max_steps=5)["checks"]}
    assert (
        not checks["pd_gains_match_mjcf"]["ok"]
        and "left_knee_joint" in checks["pd_gains_match_mjcf"]["detail"]
    )
    assert not checks["reference_pose_matches_kinematics"]["ok"]


def _assert_deploy_observation_is_the_tasks(host, run_dir, onnx_path, steps: int = 3) -> None:
    setup = prepare(onnx_path, Q1_XML)
    policy = load_trained_policy(run_dir)
    env = make_run_env(host.registry, policy, 4, seed=2,
                       overrides={"sampling": {"mode": "uniform"}})
    assert env.config["fresh_kinematics"]  # body poses of the state the observation describes
    data = mujoco.MjData(setup.robot.model)
    history = setup.observation.history(4)  # one per env, restarted with its episodes
    compared = 0
    try:
        obs, _ = env.reset()
        done = np.zeros(4, bool)
        for _ in range(steps):
            frames = []
            for i in range(4):
                data.qpos[:] = env.sim.qpos[i]
                data.qvel[:] = env.sim.qvel[i]
                mujoco.mj_forward(setup.robot.model, data)
                frames.append(setup.observation.build(data, setup.reference,
                                                      int(env.time_steps[i]), env.state.action[i]))
            mine = np.stack(frames)
            if history is not None:
                history.restart(np.flatnonzero(done))
                mine = history.push(mine)
            for i in np.flatnonzero(~done):
                np.testing.assert_allclose(mine[i], obs[i], atol=2e-5, rtol=0)
                compared += 1
            result = env.step(policy.act(obs))
            obs, done = result.obs, result.terminated | result.truncated
    finally:
        env.close()
    assert compared >= 8


def test_deploy_observation_equals_the_tracking_task_observation(exported):
    """Two independent implementations of docs/architecture.md §5's policy observation, on the same
    states."""
    _assert_deploy_observation_is_the_tasks(*exported)


def _tiny_export(tmp_path, setting: str):
    """A one-iteration run of the wave trained with ``setting``, exported: (host, run dir,
    ONNX)."""
    from tracking_run import TINY, WAVE, tracking_host

    from primebot.pipeline.export.export_run import export_run
    from primebot.pipeline.train.session import TrainRequest, run_training

    host = tracking_host()
    run_dir = run_training(host.registry, TrainRequest(
        motion=str(WAVE), num_envs=4, iterations=1, seed=3, sets=[*TINY, setting],
        log_dir=str(tmp_path), progress=False)).run_dir
    export_run(host.registry, run_dir, rollout_steps=4, latency_repeats=5)
    return host, run_dir, run_dir / "export" / "policy.onnx"


def test_a_policy_that_observes_its_base_velocity_gets_it_on_the_deploy_side(tmp_path):
    """``task.observations.base_lin_vel={group: policy}``: the root's linear velocity in the root
    frame (a state estimator's), built by the deploy loop as the task builds it."""
    host, run_dir, onnx_path = _tiny_export(
        tmp_path, "task.observations.base_lin_vel={group: policy, noise: 0.2}")
    assert "base_lin_vel" in read_metadata(onnx_path)["observation_names"].split(",")
    _assert_deploy_observation_is_the_tasks(host, run_dir, onnx_path)


def test_a_policy_that_observes_past_steps_gets_the_same_history_in_every_deploy_loop(tmp_path):
    """``task.observations.history``: the export says each term's history length, and sim2sim and
    the stress test stack past steps exactly as the task does, episode by episode."""
    from primebot.pipeline.deploy.stress import StressPlan, stress_run_dir

    host, run_dir, onnx_path = _tiny_export(
        tmp_path, "task.observations.history={base_ang_vel: 3, joint_vel: 3, actions: 2}")
    meta = read_metadata(onnx_path)
    names = meta["observation_names"].split(",")
    lengths = dict(zip(names, map(int, meta["observation_terms_history_length"].split(",")),
                       strict=True))
    sizes = dict(zip(names, map(int, meta["observation_sizes"].split(",")), strict=True))
    assert lengths == {"command": 0, "motion_anchor_ori_b": 0, "base_ang_vel": 3, "joint_pos": 0,
                       "joint_vel": 3, "actions": 2}
    joints = sizes["joint_pos"]
    assert (sizes["base_ang_vel"], sizes["joint_vel"], sizes["actions"]) == (9, 3 * joints,
                                                                             2 * joints)
    # 40 steps of 4 envs under the task's randomisation: episodes end and restart on the way
    _assert_deploy_observation_is_the_tasks(host, run_dir, onnx_path, steps=40)
    assert run_sim2sim(onnx_path, Q1_XML, [0, 30], max_steps=20)["checks_passed"]
    # onnxruntime refuses an observation of any other width
    report = stress_run_dir(run_dir, Q1_XML, StressPlan(starts=1, window_s=0.5,
                                                        families=("push",), confirm_starts=0))
    assert {c["family"] for c in report["cells"]} == {"nominal", "push"}


def test_sim2sim_of_a_run_starts_where_eval_did_and_reports_the_gap(exported):
    host, run_dir, _ = exported
    evaluation = evaluate_run(host.registry, run_dir, episodes=2, seed=1)
    report = sim2sim_run_dir(run_dir, Q1_XML)
    saved = json.loads((run_dir / "sim2sim.json").read_text())
    assert saved["checks_passed"] and saved == json.loads(json.dumps(report))
    starts = [e["start_step"]
              for e in saved["from_start"]["episode_records"] + saved["sampled"]["episode_records"]]
    assert starts == [0] + [e["start_step"] for e in evaluation["sampled"]["episode_records"]]
    for group in ("from_start", "sampled"):
        gap = saved["gap_vs_eval"][group]
        assert gap["mpkpe_m"] == pytest.approx(
            saved[group]["mpkpe_m"] - evaluation[group]["mpkpe_m"]
        )
    assert isinstance(saved["gap_flags"], list) and saved["gap_flagged"] == bool(saved["gap_flags"])


def test_gap_flags_name_the_metrics_beyond_their_threshold():
    flags = gap_flags({"mpkpe_m": 0.06, "success_rate": -0.1, "fall_rate": 0.5})
    assert flags == ["fall_rate: sim2sim − eval = +0.5 (threshold ±0.2)",
                     "mpkpe_m: sim2sim − eval = +0.06 (threshold ±0.05)"]


def test_cli_eval_then_sim2sim_and_a_bad_export_exits_non_zero(exported, monkeypatch, capsys,
                                                               tmp_path):
    from primebot.pipeline.cli import main as cli
    from primebot.pipeline.hooks import host as plugins

    host, run_dir, onnx_path = exported
    monkeypatch.setattr(plugins, "_HOST", host)
    assert cli(["eval", str(run_dir), "--episodes", "1"]) == 0
    assert cli(["sim2sim", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert (
        "[DONE] eval" in out
        and "[DONE] sim2sim" in out
        and "check reference_pose_matches_kinematics: ok" in out
    )

    good = onnx_path.read_bytes()
    names = read_metadata(onnx_path)["joint_names"]
    try:
        with_metadata(onnx_path, onnx_path,
                      joint_names=_swap(names, "left_elbow_joint", "right_elbow_joint"))
        assert cli(["sim2sim", str(run_dir)]) == 8
        assert "sim2sim checks failed: reference_pose_matches_kinematics" in capsys.readouterr().err
    finally:
        onnx_path.write_bytes(good)


def test_video_shows_the_episode_with_the_reference_ghost(exported, tmp_path):
    import imageio

    from primebot.pipeline.deploy.sim2sim import render_episode, run_episode
    from primebot.pipeline.evaluate.metrics import EpisodeMetrics

    setup = prepare(exported[2], Q1_XML)
    frames: list = []
    run_episode(setup, 100, 4, EpisodeMetrics(1, 0.02), frames)
    path = render_episode(setup, frames, tmp_path / "sim2sim.mp4")
    if path is None:
        pytest.skip("no headless OpenGL here")
    video = imageio.get_reader(path)
    assert video.count_frames() == len(frames) == 5  # the start and every policy step
    first = video.get_data(0)
    assert first.shape == (480, 640, 3) and first.std() > 10  # a rendered scene, not a blank frame


def _scaled(text: str, factor: float = 1.0, offset: float = 0.0) -> str:
    return ",".join(repr(float(v) * factor + offset) for v in text.split(","))


@pytest.mark.parametrize(("case", "expected"), [
    ("action_scale x100", "check:metadata_matches_robot"),
    ("default_joint_pos +0.3", "check:metadata_matches_robot"),
    ("robot biped4", "check:metadata_matches_robot"),
    ("fps and control_dt at 25 Hz", "check:reference_rate_matches_control_dt"),
    ("num_observations 118", "num_observations is 118; the graph takes 119"),
    ("control_dt 0.03", "disagree"),
    ("fps not a number", "is not a number"),
    ("no time_step input", "the graph has no input 'time_step'"),
    ("no body_pos_w output", "the graph has no output 'body_pos_w'"),
    ("truncated", "not a loadable ONNX model"),
])
def test_sim2sim_cross_checks_the_metadata_against_the_graph_the_robot_and_the_motion(
        exported, tmp_path, spec, case, expected):
    _, _, onnx_path = exported
    meta = read_metadata(onnx_path)
    path = tmp_path / "policy.onnx"
    changes = {
        "action_scale x100": {"action_scale": _scaled(meta["action_scale"], 100)},
        "default_joint_pos +0.3": {"default_joint_pos": _scaled(meta["default_joint_pos"],
                                                                offset=0.3)},
        "robot biped4": {"robot": "biped4"},
        "fps and control_dt at 25 Hz": {"fps": "25.0", "control_dt": "0.04"},
        "num_observations 118": {"num_observations": "118"},
        "control_dt 0.03": {"control_dt": "0.03"},
        "fps not a number": {"fps": "fast"},
    }
    if case in changes:
        with_metadata(onnx_path, path, **changes[case])
    elif case == "no time_step input":
        with_renamed(onnx_path, path, "time_step", "step")
    elif case == "no body_pos_w output":
        with_renamed(onnx_path, path, "body_pos_w", "body_pos")
    else:
        path.write_bytes(onnx_path.read_bytes()[:2000])
    if expected.startswith("check:"):
        setup = prepare(path, Q1_XML, robot_spec=spec)
        failed = [c["name"] for c in setup.robot.checks if not c["ok"]]
        assert failed == [expected.removeprefix("check:")], setup.robot.checks
    else:
        with pytest.raises(Sim2SimError, match=expected):
            prepare(path, Q1_XML, robot_spec=spec)


def test_the_exported_policy_passes_every_cross_check(exported, spec):
    _, _, onnx_path = exported
    setup = prepare(onnx_path, Q1_XML, robot_spec=spec)
    assert [c["name"] for c in setup.robot.checks] == [
        "pd_gains_match_mjcf", "reference_pose_matches_kinematics",
        "reference_rate_matches_control_dt",
        "metadata_matches_robot"]
    assert all(c["ok"] for c in setup.robot.checks), setup.robot.checks


def test_robot_spec_check_accepts_the_tasks_action_scale_factor(spec):
    from primebot.pipeline.deploy.onnx_policy import robot_spec_check

    meta = {"robot": spec.name, "joint_names": list(spec.joint_names),
            "default_joint_pos": np.asarray(spec.default_joint_pos, dtype=np.float64),
            "action_scale": 2.0 * np.asarray(spec.action_scale, dtype=np.float64)}
    assert not robot_spec_check(meta, spec)["ok"]  # twice the robot's scale, unexplained
    # task.actions.scale=2
    assert robot_spec_check({**meta, "action_scale_factor": 2.0}, spec)["ok"]
