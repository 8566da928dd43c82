"""Tracking metrics (hand-computed oracles) and ``primebot eval`` on a real tiny run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from tracking_run import tracking_host, train_tiny_run

from primebot.pipeline.evaluate.evaluate_run import evaluate_run
from primebot.pipeline.evaluate.metrics import (
    ERROR_KEYS,
    EpisodeMetrics,
    FailureThresholds,
    TrackingSnapshot,
    failure_checks,
    first_failure,
    metric_gaps,
    step_errors,
)
from primebot.pipeline.rotations import quat_from_axis_angle
from primebot.pipeline.train.trained_policy import load_trained_policy, make_run_env
from primebot.plugins.tasks.tracking.evaluation import env_snapshot


def _snapshot(n: int = 2, j: int = 3, k: int = 4, e: int = 2) -> TrackingSnapshot:
    """Robot exactly on its reference: some non-trivial pose, identical on both sides."""
    rng = np.random.default_rng(0)
    quat = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), rng.uniform(-1, 1, n))
    values = {
        "joint_pos": rng.normal(size=(n, j)), "joint_vel": rng.normal(size=(n, j)),
        "body_pos_w": rng.normal(size=(n, k, 3)) + [0, 0, 1], "root_pos_w": rng.normal(size=(n, 3)),
        "ee_pos_w": rng.normal(size=(n, e, 3)), "anchor_pos_w": rng.normal(size=(n, 3)),
        "anchor_quat_w": quat,
    }
    return TrackingSnapshot(**values,
                            **{f"ref_{key}": value.copy() for key, value in values.items()})


def test_metrics_of_a_hand_built_zero_error_episode_are_zero():
    snap = _snapshot()
    metrics = EpisodeMetrics(num_envs=2, step_dt=0.02)
    for _ in range(5):
        errors = step_errors(snap)
        assert first_failure(failure_checks(snap, FailureThresholds())) == [None, None]
        metrics.add_step(errors)
    metrics.finish([0, 1], None, [0, 7])
    summary = metrics.summary()
    for key in ERROR_KEYS:
        assert summary[key] == pytest.approx(0.0, abs=1e-12), key
    assert summary["success_rate"] == 1.0 and summary["fall_rate"] == 0.0
    assert summary["mean_episode_length"] == 5 and summary[
        "mean_episode_length_s"
    ] == pytest.approx(0.1)
    assert [e["start_step"] for e in metrics.episodes] == [0, 7]


def test_metrics_match_hand_computed_errors():
    snap = _snapshot(n=1, j=2, k=2, e=1)
    snap.body_pos_w = snap.body_pos_w + np.array([0.03, 0.04, 0.0])  # every body 5 cm off
    snap.joint_pos = snap.ref_joint_pos + np.array([[0.1, -0.3]])
    snap.anchor_quat_w = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), np.array([0.5]))
    snap.ref_anchor_quat_w = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]),
                                                  np.array([0.5 + math.pi / 2]))
    errors = step_errors(snap)
    assert errors["mpkpe_m"] == pytest.approx([0.05])
    # the root did not move with them
    assert errors["mpkpe_root_relative_m"] == pytest.approx([0.05])
    assert errors["joint_pos_error_rad"] == pytest.approx([0.2])
    assert errors["anchor_ori_error_rad"] == pytest.approx([math.pi / 2])
    snap.root_pos_w = snap.root_pos_w + np.array([0.03, 0.04, 0.0])
    assert step_errors(snap)["mpkpe_root_relative_m"] == pytest.approx([0.0], abs=1e-12)


def test_failures_are_classified_falls_first():
    snap = _snapshot(n=3)
    snap.anchor_pos_w[0, 2] -= 0.3                   # anchor 30 cm low: a fall
    # a hand 30 cm high: tracking failure, not a fall
    snap.ee_pos_w[1, 0, 2] += 0.3
    tilt = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), np.array(math.pi / 2))
    snap.anchor_quat_w[2] = tilt                     # torso on its side: gravity z 0 vs -1
    snap.ref_anchor_quat_w[2] = [1.0, 0.0, 0.0, 0.0]
    reasons = first_failure(failure_checks(snap, FailureThresholds()))
    assert reasons == ["anchor_height", "ee_height", "anchor_ori"]
    metrics = EpisodeMetrics(3, 0.02)
    metrics.add_step(step_errors(snap))
    metrics.finish([0, 1, 2], reasons)
    summary = metrics.summary()
    assert summary["success_rate"] == 0.0
    assert summary["fall_rate"] == pytest.approx(2 / 3)
    assert summary["failures"] == {"anchor_height": 1, "anchor_ori": 1, "ee_height": 1,
                                   "physics_fault": 0}


def test_metric_gaps_are_other_minus_reference():
    gaps = metric_gaps({"mpkpe_m": 0.05, "success_rate": 1.0},
                       {"mpkpe_m": 0.08, "success_rate": 0.5, "x": 3})
    assert gaps == pytest.approx({"mpkpe_m": 0.03, "success_rate": -0.5})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    host = tracking_host()
    return host, train_tiny_run(tmp_path_factory.mktemp("logs"), host)


def test_env_snapshot_at_a_reference_reset_has_zero_error(run):
    host, run_dir = run
    policy = load_trained_policy(run_dir)
    env = make_run_env(host.registry, policy, 2, overrides={"sampling": {"mode": "uniform"}})
    try:
        env.reset()  # randomisation off: exactly the reference state
        errors = step_errors(env_snapshot(env, np.arange(2)))
    finally:
        env.close()
    assert errors["joint_pos_error_rad"] == pytest.approx([0, 0], abs=1e-12)
    assert errors["joint_vel_error_rad_s"] == pytest.approx([0, 0], abs=1e-12)
    for key in ("mpkpe_m", "mpkpe_root_relative_m", "ee_pos_error_m", "anchor_pos_error_m"):
        assert np.all(errors[key] < 1e-5), key  # float32 motion file vs float64 kinematics
    assert np.all(errors["anchor_ori_error_rad"] < 1e-3)


def test_eval_writes_eval_json_with_both_groups_and_its_config(run):
    host, run_dir = run
    report = evaluate_run(host.registry, run_dir, episodes=3, seed=5)
    saved = json.loads((run_dir / "eval.json").read_text())
    assert saved["from_start"]["episodes"] == 1 and saved["sampled"]["episodes"] == 3
    assert saved["overall"]["episodes"] == 4
    assert saved["from_start"]["episode_records"][0]["start_step"] == 0
    assert saved["config"]["task"] == "tracking" and saved["config"]["robot"] == "q1"
    assert saved["settings"]["task_overrides"]["randomization"] == {"enabled": False}
    for key in ("success_rate", "fall_rate", "mean_episode_length", *ERROR_KEYS):
        assert np.isfinite(saved["from_start"][key]), key
    # deterministic: the same seed gives the same episodes
    again = evaluate_run(host.registry, run_dir, episodes=3, seed=5)
    assert again["sampled"]["episode_records"] == report["sampled"]["episode_records"]


def test_eval_and_export_refuse_a_task_that_tracks_no_motion(tmp_path):
    import pointmass_task

    from primebot.pipeline.errors import ConfigError
    from primebot.pipeline.export.export_run import export_run
    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.session import TrainRequest, run_training

    host = load_plugins(environ={"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"},
                        extra=[("pointmass", pointmass_task)])
    run_dir = run_training(host.registry,
                           TrainRequest(task="pointmass", num_envs=4, iterations=1,
                                        log_dir=str(tmp_path), progress=False)).run_dir
    for command in (evaluate_run, export_run):
        with pytest.raises(ConfigError, match="task 'pointmass' is not a motion-tracking task"):
            command(host.registry, run_dir)
