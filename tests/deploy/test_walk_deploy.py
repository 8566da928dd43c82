"""walk through eval, export and sim2sim: walk metrics in eval.json, a gait video, an obs → actions
ONNX."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx_metadata import with_metadata
from torch_free import run_sim2sim_without_torch
from video_probe import probe

from primebot.pipeline.cli import main
from primebot.pipeline.deploy.onnx_policy import parse_metadata
from primebot.pipeline.deploy.planar import Sim2SimError, run_planar_sim2sim
from primebot.pipeline.deploy.sim2sim import main as sim2sim_main
from primebot.pipeline.deploy.sim2sim import sim2sim_run_dir
from primebot.pipeline.evaluate.episodes import EpisodeRecord
from primebot.pipeline.evaluate.evaluate_run import evaluate_run
from primebot.pipeline.export.export_run import export_run
from primebot.pipeline.export.graph import read_metadata
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.session import TrainRequest, run_training
from primebot.pipeline.train.trained_policy import load_trained_policy, make_run_env
from primebot.plugins.robots.biped4.spec import BIPED4_MJCF, biped4_spec
from primebot.plugins.tasks.walk import mdp
from primebot.plugins.tasks.walk.metrics import walk_metrics
from primebot.plugins.tasks.walk.task import make_walk_env

EPISODE_STEPS = 60
"""Short episodes keep eval and the video to about a second each."""
TINY = [
    "policy.actor_hidden=[16,16]", "policy.critic_hidden=[16,16]", "ppo.num_steps_per_env=16",
    "ppo.num_learning_epochs=1", "ppo.num_mini_batches=2", f"task.episode_length={EPISODE_STEPS}",
]


@pytest.fixture(scope="module")
def walk_run(tmp_path_factory):
    host = load_plugins(environ={"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"})
    request = TrainRequest(task="walk", num_envs=4, iterations=2, seed=1, sets=list(TINY),
                           log_dir=str(tmp_path_factory.mktemp("logs")), progress=False)
    return host, run_training(host.registry, request).run_dir


def _record(env, x_final: float, length: int, terminated: bool) -> EpisodeRecord:
    start = env.sim.qpos[0].copy()
    final = start.copy()
    final[0] = start[0] + x_final  # rootx is biped4's first qpos
    return EpisodeRecord(0, 1.0 * length, length, terminated, start, final)


def test_walk_metrics_of_hand_built_episodes():
    env = make_walk_env(robot=biped4_spec(), num_envs=1, config={"episode_length": 100})
    try:
        env.reset()
        records = [_record(env, 2.0, 100, False), _record(env, -0.5, 50, True)]
        metrics = walk_metrics(env, records)
    finally:
        env.close()
    # 2 m in 100 × 0.02 s = 1 m/s; -0.5 m in 1 s = -0.5 m/s
    assert metrics["mean_distance_m"] == pytest.approx(0.75)
    assert metrics["mean_forward_speed_m_s"] == pytest.approx(0.25)
    assert metrics["fall_rate"] == 0.5 and metrics["mean_episode_length"] == 75
    assert metrics["mean_episode_length_s"] == pytest.approx(1.5)
    assert metrics["mean_return"] == pytest.approx(75.0)
    # 100 steps × 0.02 s × (1 alive + 2 × 0.5 m/s) = 4
    assert (
        metrics["walking_threshold"] == pytest.approx(4.0) and metrics["walking_threshold_reached"]
    )


def test_eval_of_a_walk_run_writes_walk_metrics_deterministically(walk_run):
    host, run_dir = walk_run
    report = evaluate_run(host.registry, run_dir, episodes=3)
    saved = json.loads((run_dir / "eval.json").read_text())
    assert saved == json.loads(json.dumps(report))
    walk = saved["episodes"]
    assert saved["config"]["task"] == "walk" and saved["config"]["robot"] == "biped4"
    assert walk["episodes"] == 3 and len(walk["episode_records"]) == 3
    for key in ("mean_return", "mean_forward_speed_m_s", "mean_distance_m", "fall_rate",
                "mean_episode_length"):
        assert np.isfinite(walk[key]), key
    assert walk["walking_threshold"] == pytest.approx(EPISODE_STEPS * 0.02 * 2.0)
    assert walk["walking_threshold_reached"] == (walk["mean_return"] >= walk["walking_threshold"])
    # randomisation off and the policy mean: every episode is the same one
    lengths = {r["length"] for r in walk["episode_records"]}
    assert len(lengths) == 1 and lengths.pop() <= EPISODE_STEPS
    assert np.ptp([r["return"] for r in walk["episode_records"]]) < 1e-6
    assert walk["fall_rate"] == float(walk["episode_records"][0]["terminated"])
    assert walk["mean_forward_speed_m_s"] == pytest.approx(
        walk["mean_distance_m"] / walk["mean_episode_length_s"], rel=1e-9)
    assert "from_start" not in saved  # the tracking groups are not made up for walk


def test_eval_video_of_the_gait_is_a_real_h264_file(walk_run, capsys):
    _, run_dir = walk_run
    assert main(["eval", str(run_dir), "--episodes", "1", "--video"]) == 0
    out = capsys.readouterr().out
    assert "mean_forward_speed_m_s" in out and "walking_threshold_reached" in out
    walk = json.loads((run_dir / "eval.json").read_text())
    video = probe(run_dir / "videos" / "eval.mp4")
    length = walk["episodes"]["episode_records"][0]["length"]
    assert video == {"codec": "h264", "size": (640, 480), "fps": 50.0, "frames": length + 1,
                     "pix_fmt": True}


@pytest.fixture(scope="module")
def walk_export(walk_run):
    host, run_dir = walk_run
    return host, run_dir, export_run(host.registry, run_dir, latency_repeats=20)


def test_walk_export_is_obs_to_actions_with_parity_at_batch_1_and_64(walk_export):
    _, run_dir, result = walk_export
    assert set(result.parity) == {1, 64}
    for diffs in result.parity.values():
        assert set(diffs) == {"actions"} and diffs["actions"] <= 1e-5
    model = onnx.load(str(result.onnx_path))
    onnx.checker.check_model(model, full_check=True)
    shape = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert [i.name for i in model.graph.input] == ["obs"] and shape == ["batch", 14]
    assert [o.name for o in model.graph.output] == ["actions"]
    assert sorted(p.name for p in (run_dir / "export").iterdir()) == ["README.md", "deploy.yaml",
                                                                      "export.json",
                                                                       "policy.onnx", "robot"]
    assert result.motion_path is None

    # the normaliser is inside: raw observations in, the policy mean out
    policy = load_trained_policy(run_dir)
    env = make_run_env(load_plugins(environ={}).registry, policy, 2)
    try:
        obs, _ = env.reset()
        for _ in range(5):
            obs = env.step(policy.act(obs)).obs
    finally:
        env.close()
    session = ort.InferenceSession(str(result.onnx_path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(["actions"], {"obs": obs})[0], policy.act(obs),
                               atol=1e-5)


def test_walk_export_metadata_round_trips(walk_export):
    _, _, result = walk_export
    meta = parse_metadata(read_metadata(result.onnx_path))
    spec = biped4_spec()
    assert meta["robot"] == "biped4" and meta["task"] == "walk" and meta["export_kind"] == "policy"
    assert meta["joint_names"] == list(spec.joint_names)
    np.testing.assert_array_equal(meta["joint_stiffness"], spec.stiffness)
    np.testing.assert_array_equal(meta["joint_damping"], spec.damping)
    np.testing.assert_array_equal(meta["default_joint_pos"], spec.default_joint_pos)
    np.testing.assert_array_equal(meta["action_scale"], spec.action_scale)
    assert meta["observation_names"] == list(mdp.OBSERVATION_NAMES)
    assert meta["observation_sizes"] == [1] * 14 and meta["observation_offsets"] == list(range(14))
    assert meta["control_dt"] == 0.02 and meta["fps"] == 50.0
    assert meta["base_joint_names"] == ["rootx", "rootz", "rooty"] and "primebot_version" in meta
    assert meta["action_clip"] == "1.0"
    assert (meta["termination_min_height"], meta["termination_max_pitch"]) == ("0.3", "1.0")
    assert not {"motion_sha256", "motion_num_steps", "body_names"} & set(meta)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    walk_section = docs[docs.index("## Tasks without a reference motion: walk"):]
    undocumented = {key for key in meta if f"`{key}`" not in walk_section}
    assert not undocumented, (
        f"walk metadata keys docs/deploy.md's walk section does not list: {undocumented}"
    )


def test_walk_sim2sim_runs_where_importing_torch_fails(walk_export, tmp_path):
    _, _, result = walk_export
    out = tmp_path / "report.json"
    run_sim2sim_without_torch([result.onnx_path, BIPED4_MJCF, "--output", out])
    report = json.loads(out.read_text())
    assert (
        report["checks_passed"]
        and report["loop"]["physics_hz"] == 1000.0
        and report["loop"]["policy_hz"] == 50.0
    )
    assert report["loop"]["base"] == ["rootx", "rootz", "rooty"]
    assert 1 <= report["episodes"]["mean_episode_length"] <= EPISODE_STEPS


def test_walk_sim2sim_of_a_run_reports_its_gap_to_eval_and_a_video(walk_export, capsys):
    _, run_dir, _ = walk_export
    assert main(["eval", str(run_dir), "--episodes", "1"]) == 0
    assert main(["sim2sim", str(run_dir), "--video"]) == 0
    assert "mean_forward_speed_m_s" in capsys.readouterr().out
    report = json.loads((run_dir / "sim2sim.json").read_text())
    gaps = report["gap_vs_eval"]["episodes"]
    assert set(gaps) >= {"mean_forward_speed_m_s", "fall_rate", "mean_episode_length_s"}
    evaluation = json.loads((run_dir / "eval.json").read_text())["episodes"]
    assert gaps["fall_rate"] == pytest.approx(
        report["episodes"]["fall_rate"] - evaluation["fall_rate"]
    )
    video = probe(run_dir / "videos" / "sim2sim.mp4")
    assert (
        video["codec"] == "h264"
        and video["frames"] == report["episodes"]["mean_episode_length"] + 1
    )


def test_walk_sim2sim_catches_a_swapped_joint_order(walk_export, tmp_path):
    _, _, result = walk_export
    # hip <-> knee: same gains, so only the default pose against the MJCF's stand keyframe shows it
    swapped = with_metadata(result.onnx_path, tmp_path / "swapped.onnx",
                             joint_names="left_knee,right_hip,left_hip,right_knee")
    report = run_planar_sim2sim(swapped, BIPED4_MJCF, max_steps=3)
    checks = {c["name"]: c for c in report["checks"]}
    assert not report["checks_passed"] and checks["pd_gains_match_mjcf"]["ok"]
    assert (
        "left_knee: metadata 0.35, keyframe 0.7"
        in checks["default_pose_matches_keyframe"]["detail"]
    )
    assert sim2sim_main([swapped, str(BIPED4_MJCF)]) == 1


def test_walk_sim2sim_refuses_what_does_not_fit_by_name(walk_export, tmp_path):
    from primebot.plugins.robots.q1.spec import Q1_MJCF

    _, _, result = walk_export
    with pytest.raises(Sim2SimError) as info:
        run_planar_sim2sim(result.onnx_path, Q1_MJCF)
    assert "joint 'left_hip' (metadata joint_names) is not in the MJCF" in str(info.value)
    assert "base joint 'rootx' (metadata base_joint_names) is not in the MJCF" in str(info.value)
    names = read_metadata(result.onnx_path)["observation_names"]
    short = with_metadata(result.onnx_path, tmp_path / "short.onnx",
                           observation_names=names.replace(",torso_pitch_rate", "")
                           .replace("torso_pitch", "tilt"))
    with pytest.raises(Sim2SimError) as info:
        run_planar_sim2sim(short, BIPED4_MJCF)
    assert "the graph takes 14 values, observation_names lists 13" in str(info.value)
    assert "unknown to the planar deploy loop: tilt" in str(info.value)
    free = with_metadata(result.onnx_path, tmp_path / "free.onnx", base_joint_names="free")
    with pytest.raises(Sim2SimError, match="only on a planar base"):
        sim2sim_run_dir(_run_with(free, tmp_path), BIPED4_MJCF)
    assert sim2sim_main([free, str(BIPED4_MJCF)]) == 2


def _run_with(onnx_path: str, tmp_path) -> str:
    run = tmp_path / "run"
    (run / "export").mkdir(parents=True)
    (run / "export" / "policy.onnx").write_bytes(Path(onnx_path).read_bytes())
    # the run that exported it, as args.yaml records it: sim2sim judges a run by its own export only
    run_id = read_metadata(onnx_path)["run_id"]
    (run / "args.yaml").write_text(f"run:\n  id: '{run_id}'\n")
    return str(run)


def test_a_task_spec_with_an_unknown_export_kind_is_refused_by_name():
    from primebot.pipeline.errors import ConfigError
    from primebot.pipeline.sim.task import TaskSpec

    with pytest.raises(ConfigError, match="task 'hop': export_kind 'tflite' is unknown"):
        TaskSpec("hop", make_walk_env, export_kind="tflite")


def test_walk_bundle_with_fp16_and_a_static_batch_runs_on_its_own_model(walk_export, tmp_path):
    import shutil

    import yaml

    from primebot.pipeline.deploy.deploy_bundle import run_bundle

    host, run_dir, _ = walk_export
    copy = tmp_path / "walk" / run_dir.name
    shutil.copytree(run_dir, copy)
    result = export_run(host.registry, copy, rollout_steps=2, latency_repeats=5, fp16=True,
                        static_batch=True)
    assert set(result.parity) == {1}
    assert [
        d.dim_value
        for d in onnx.load(str(result.onnx_path)).graph.input[0].type.tensor_type.shape.dim
    ] == [1, 14]
    loop = result.fp16["closed_loop"]["episodes"]
    assert loop["fp16"]["fall_rate"] <= loop["fp32"]["fall_rate"]
    document = yaml.safe_load(result.deploy_path.read_text())
    assert (
        document["files"]["mjcf"]["file"] == "robot/biped4.xml" and document["policy"]["batch"] == 1
    )
    meta = parse_metadata(read_metadata(result.onnx_path))
    assert [j["lower"] for j in document["joints"]] == list(meta["joint_pos_lower"])
    for variant in ("policy", "policy_fp16"):
        report = run_bundle(copy / "export", variant=variant)
        assert report["checks_passed"] and report["episodes"]["episodes"] == 1
