"""The tracking verdict: a statue baseline no policy that holds still can beat, on real physics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from primebot.pipeline.evaluate.evaluate_run import play_episodes
from primebot.pipeline.evaluate.metrics import (
    ERROR_KEYS,
    EpisodeMetrics,
    TrackingSnapshot,
    VerdictRule,
    pooled_summary,
    statue_mpkpe,
    step_errors,
    tracking_verdict,
)
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.format import load_motion
from primebot.plugins.tasks.tracking.evaluation import tracking_view

MOTIONS = Path(__file__).resolve().parents[2] / "motions"
EXACT = {"randomization": {"enabled": False}, "observations": {"noise": False},
         "log_reward_terms": False,
         "fresh_kinematics": True, "sampling": {"mode": "start"}}


def test_statue_mpkpe_matches_a_hand_computed_oracle():
    # one body moving 1 cm per step along x: a statue frozen at step s is (t - s) cm off at step t
    steps = 11
    ref = np.zeros((steps, 1, 3))
    ref[:, 0, 0] = 0.01 * np.arange(steps)
    assert statue_mpkpe(ref, 0) == pytest.approx(np.mean(0.01 * np.arange(1, 11)))   # steps 1..10
    assert statue_mpkpe(ref, 0, max_steps=4) == pytest.approx(np.mean([0.01, 0.02, 0.03, 0.04]))
    # to the last step
    assert statue_mpkpe(ref, 8) == pytest.approx(np.mean([0.01, 0.02]))
    # held at the end
    assert statue_mpkpe(ref, 10) == pytest.approx(0.0)


def test_episode_metrics_give_the_statue_baseline_worst_body_and_worst_step():
    ref = np.zeros((6, 2, 3))
    ref[:, 1, 2] = 0.1 * np.arange(6)  # body "b" rises 10 cm per step, body "a" stays
    metrics = EpisodeMetrics(1, 0.02, reference_body_pos=ref, body_names=("a", "b"))
    for t in range(1, 6):  # a robot that holds the start pose
        still = TrackingSnapshot(
            joint_pos=np.zeros((1, 1)), joint_vel=np.zeros((1, 1)), body_pos_w=ref[0][None].copy(),
            root_pos_w=np.zeros((1, 3)), ee_pos_w=np.zeros((1, 1, 3)),
            anchor_pos_w=np.zeros((1, 3)),
            anchor_quat_w=np.array([[1.0, 0, 0, 0]]), ref_joint_pos=np.zeros((1, 1)),
            ref_joint_vel=np.zeros((1, 1)),
            ref_body_pos_w=ref[t][None].copy(), ref_root_pos_w=np.zeros((1, 3)),
            ref_ee_pos_w=np.zeros((1, 1, 3)),
            ref_anchor_pos_w=np.zeros((1, 3)), ref_anchor_quat_w=np.array([[1.0, 0, 0, 0]]),
        )
        metrics.add_step(step_errors(still))
    metrics.finish([0], None, [0])
    summary = metrics.summary()
    # a statue scores the statue
    assert summary["mpkpe_m"] == pytest.approx(summary["statue_mpkpe_m"])
    assert summary["fraction_removed"] == pytest.approx(0.0, abs=1e-12)
    assert summary["worst_body"] == "b" and summary["body_mpkpe_m"]["a"] == 0.0
    assert summary["worst_step"] == 5 and summary["worst_step_mpkpe_m"] == pytest.approx(0.25)
    assert summary["verdict"]["tracked"] is False


def test_verdict_rule_needs_both_success_and_a_fraction_of_the_statue_error():
    rule = VerdictRule()
    ok = tracking_verdict({"success_rate": 1.0, "mpkpe_m": 0.03, "statue_mpkpe_m": 0.10}, rule)
    assert ok["tracked"] is True and ok["fraction_removed"] == pytest.approx(0.7)
    statue = tracking_verdict({"success_rate": 1.0, "mpkpe_m": 0.10, "statue_mpkpe_m": 0.10}, rule)
    assert statue["tracked"] is False and "MPKPE" in statue["reason"]
    falls = tracking_verdict({"success_rate": 0.5, "mpkpe_m": 0.01, "statue_mpkpe_m": 0.10}, rule)
    assert falls["tracked"] is False and "success" in falls["reason"]
    # a small motion: the 2 cm floor keeps the bound reachable, but half the statue's error must go
    small = tracking_verdict({"success_rate": 1.0, "mpkpe_m": 0.019, "statue_mpkpe_m": 0.05}, rule)
    assert small["tracked"] is True and small["mpkpe_limit_m"] == rule.floor_m
    tiny = tracking_verdict({"success_rate": 1.0, "mpkpe_m": 0.012, "statue_mpkpe_m": 0.015}, rule)
    assert tiny["tracked"] is False and tiny["mpkpe_limit_m"] == pytest.approx(0.0075)
    # whatever the motion, a statue never passes
    for statue_error in (0.001, 0.01, 0.02, 0.05, 0.3):
        assert rule.limit(statue_error) < statue_error
    assert tracking_verdict({"success_rate": 1.0})["tracked"] is None


def _record(failure: str | None, length: int, start: int) -> dict:
    errors = {key: 0.01 for key in ERROR_KEYS}
    return {**errors, "length": length, "failure": failure, "start_step": start,
            "statue_mpkpe_m": 0.10}


def test_the_episode_from_the_first_frame_must_reach_its_end():
    # 32 of 33 episodes succeed (0.97, above the 0.9 bar), but the one a deployment plays, from
    # the first frame, falls 3.3 s in: not tracked, and the reason says so
    sampled = {"episode_records": [_record(None, 250, 10 * i) for i in range(1, 33)]}
    falls = pooled_summary({"from_start": {"episode_records": [_record("anchor_height", 165, 0)]},
                            "sampled": sampled}, 0.02)
    assert falls["success_rate"] == pytest.approx(32 / 33)
    assert falls["first_frame_episode"] == {"failure": "anchor_height",
                                            "length_s": pytest.approx(3.3)}
    assert falls["verdict"]["tracked"] is False
    assert "first frame" in falls["verdict"]["reason"] and "3.3 s" in falls["verdict"]["reason"]
    # the same episodes with the first one succeeding track; without a from_start group the rule
    # is the pooled one alone
    finishes = pooled_summary({"from_start": {"episode_records": [_record(None, 250, 0)]},
                               "sampled": sampled}, 0.02)
    assert finishes["verdict"]["tracked"] is True
    assert pooled_summary({"sampled": sampled}, 0.02)["verdict"]["tracked"] is True


def test_a_verdict_that_fails_says_where_in_the_motion():
    # 3 of 10 episodes fall, ending 5.2, 5.4 and 5.9 s into the motion: the reason points there,
    # so the user knows which part of the reference to look at, cut or slow
    records = [_record(None, 100, 20 * i) for i in range(7)]
    records += [_record("anchor_height", 10, 250), _record("ee_height", 20, 250),
                _record("anchor_height", 95, 200)]
    summary = pooled_summary({"sampled": {"episode_records": records}}, 0.02)
    assert summary["failure_times_s"] == pytest.approx([5.2, 5.4, 5.9])
    assert "3 of 10 episodes fail, at 5.2–5.9 s of the motion" in summary["verdict"]["reason"]
    # many failures: their range and where half of them are
    many = [_record("anchor_height", 10, start) for start in (0, 240, 250, 255, 260, 400)]
    reason = pooled_summary({"sampled": {"episode_records": many}}, 0.02)["verdict"]["reason"]
    assert "6 of 6 episodes fail, at 0.2–8.2 s of the motion, half of them at 5.0–5.4 s" in reason
    # an error too large names the body and the moment
    off = [{**_record(None, 100, 0), "mpkpe_m": 0.09, "body_mpkpe_m": [0.02, 0.16],
            "worst_step_mpkpe_m": 0.3, "worst_step": 65}]
    reason = pooled_summary({"sampled": {"episode_records": off}}, 0.02,
                            body_names=["pelvis", "right_hand"])["verdict"]["reason"]
    assert "the largest error on right_hand, worst at 1.3 s of the motion" in reason


@pytest.fixture(scope="module")
def host():
    return load_plugins()


def _env(host, motion: str, offset: str):
    spec = host.registry.get("tasks", "tracking")
    return spec.make_env(robot=host.registry.get("robots", "q1"),
                         motion=load_motion(MOTIONS / f"{motion}.npz"),
                         num_envs=1, seed=0, config={**EXACT, "actions": {"offset": offset}},
                         registry=host.registry, num_threads=1)


class _Constant:
    """A 'policy' that always outputs the same action."""

    def __init__(self, action: np.ndarray) -> None:
        self.action = np.asarray(action, dtype=np.float32)[None]

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.repeat(self.action, len(obs), axis=0)


def test_a_robot_that_holds_its_start_pose_does_not_track_the_squat(host):
    env = _env(host, "squat", "default")
    try:
        hold = (env.reference.joint_pos[0] - env.robot.default_joint_pos) / env.action_scale
        metrics, _ = play_episodes(tracking_view(env), _Constant(hold))
    finally:
        env.close()
    summary = metrics.summary()
    # it stands the whole episode: success alone would call it good
    assert summary["success_rate"] == 1.0
    assert summary["statue_mpkpe_m"] > 0.05
    assert summary["verdict"]["tracked"] is False, summary["verdict"]


def test_the_reference_replayed_under_pd_tracks_the_wave(host):
    # a zero action is the reference's joints as PD targets: open-loop replay, which keeps q1 up on
    # the wave (the legs hold still) but not on the squat, whose knees sag (the next test)
    env = _env(host, "wave", "reference")
    try:
        metrics, _ = play_episodes(tracking_view(env), _Constant(np.zeros(env.num_actions)))
    finally:
        env.close()
    summary = metrics.summary()
    assert summary["verdict"]["tracked"] is True, summary["verdict"]
    assert summary["fraction_removed"] > 0.65


def test_the_zero_action_tracks_the_squat_only_with_the_servo_feedforward(host):
    # the squat falls under plain PD replay because its bent knees sag under their servos, not for
    # want of balance: with each servo's feedforward in the target (actions.offset: servo_target)
    # the zero action follows it (docs/motions.md, "What the servos give")
    summaries = {}
    for offset in ("reference", "servo_target"):
        env = _env(host, "squat", offset)
        try:
            metrics, _ = play_episodes(tracking_view(env), _Constant(np.zeros(env.num_actions)))
        finally:
            env.close()
        summaries[offset] = metrics.summary()
    assert summaries["reference"]["verdict"]["tracked"] is False
    fed = summaries["servo_target"]
    assert fed["verdict"]["tracked"] is True, fed["verdict"]
    assert fed["success_rate"] == 1.0 and fed["mpkpe_m"] < 0.01


def test_training_logs_the_verdict_of_its_checks(tmp_path):
    from tracking_run import TINY, WAVE, tracking_host

    from primebot.pipeline.train.log import read_csv_rows
    from primebot.pipeline.train.session import TrainRequest, run_training

    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=2, seed=3,
                           log_dir=str(tmp_path),
                           progress=False, sets=[*TINY, "runner.check_interval=1"])
    out = run_training(tracking_host().registry, request)
    header, rows = read_csv_rows(out.run_dir / "train.csv")
    assert {
        "verdict/mpkpe_m",
        "verdict/statue_mpkpe_m",
        "verdict/success_rate",
        "verdict/tracked",
    } <= set(header)
    assert all(float(r["verdict/statue_mpkpe_m"]) > 0 for r in rows)


def test_trainings_checks_play_the_first_frame_episode_too(host, tmp_path):
    # the probe behind those checks pools a from-start episode with the sampled ones, as eval and
    # sim2sim do, so model_best.pt and the stop rule cannot choose a policy that fails from frame 0
    from tracking_run import TINY, WAVE

    from primebot.pipeline.evaluate.evaluate_run import VerdictProbe
    from primebot.pipeline.evaluate.push_direction import PUSH_DIRECTIONS
    from primebot.pipeline.train.session import TrainRequest, run_training
    from primebot.pipeline.train.trained_policy import load_trained_policy

    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3,
                           log_dir=str(tmp_path), progress=False, sets=list(TINY))
    config = load_trained_policy(run_training(host.registry, request).run_dir).config
    probe = VerdictProbe.for_run(host.registry, config, load_motion(WAVE), episodes=2,
                                 robust_episodes=2)
    joints = len(host.registry.get("robots", "q1").joint_names)
    try:
        replay = probe(_Constant(np.zeros(joints)))  # the reference under PD: q1 waves open loop
        assert replay["episodes"] == 3
        assert replay["first_frame_episode"]["failure"] is None and replay["verdict"]["tracked"]
        thrown = probe(_Constant(np.full(joints, 3.0)))  # every joint driven far off: it falls
        assert thrown["first_frame_episode"]["failure"] is not None
        assert not thrown["verdict"]["tracked"]
        # the stop rule's confirmation: fresh sets of the pushed episodes, counted
        assert replay["robust_episodes"] == 2
        # and split by where each episode's kick pointed (the replayed wave stands until its kick)
        by_side = replay["robust_by_direction"]
        assert set(by_side) <= set(PUSH_DIRECTIONS)
        assert sum(side["episodes"] for side in by_side.values()) == 2
        assert probe.confirm_robust(_Constant(np.full(joints, 3.0)), sets=3) == (0, 6)
        successes, episodes = probe.confirm_robust(_Constant(np.zeros(joints)), sets=3)
        assert episodes == 6 and 0 <= successes <= 6
    finally:
        probe.close()

