"""Heading alignment in the deploy runners, and a non-finite action ending an episode, on real
MuJoCo and ONNX.

The policies here are small graphs with the tiny run's metadata and reference motion: a zero action
(replaying the reference, which tracks the wave) and one that reacts to the heading error the
observation shows, as a trained policy does (it splays its hips when the reference anchor is turned
away from its own).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch
from torch import nn
from torch_free import run_sim2sim_without_torch
from tracking_run import Q1_XML, tracking_host, train_tiny_run

from primebot.pipeline.deploy.heading import align_reference, heading_offset, turn_reference
from primebot.pipeline.deploy.onnx_policy import NON_FINITE_ACTION
from primebot.pipeline.deploy.sim2sim import (
    Sim2SimError,
    TrackingEpisode,
    prepare,
    run_policy_file,
    run_sim2sim,
)
from primebot.pipeline.deploy.stress_episodes import NON_FINITE_ACTION as STRESS_NON_FINITE_ACTION
from primebot.pipeline.evaluate.metrics import EpisodeMetrics
from primebot.pipeline.export.export_run import export_run
from primebot.pipeline.export.graph import (
    ActionPolicy,
    DeployPolicy,
    motion_at_control_rate,
    read_metadata,
    write_onnx,
)
from primebot.pipeline.rotations import quat_from_euler_xyz, yaw_angle
from primebot.pipeline.train.trained_policy import load_trained_policy

STEPS = 120
"""Policy steps per episode (2.4 s of the wave)."""
NAN_FROM_STEP = 25


class ZeroActor(nn.Module):
    def __init__(self, joints: int) -> None:
        super().__init__()
        self.joints = joints

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, :self.joints] * 0.0


class HeadingActor(nn.Module):
    """Hip rolls splayed in proportion to 1 − r00 of the observed anchor orientation error (0 when
    aligned)."""

    def __init__(self, joints: int, ori_column: int, gains: np.ndarray) -> None:
        super().__init__()
        self.joints, self.column = joints, ori_column
        self.register_buffer("gains", torch.as_tensor(gains, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, :self.joints] * 0.0 + (1.0 - obs[:, self.column:self.column + 1]) * self.gains


class NaNFrom(DeployPolicy):
    """Zero actions, then NaN from a reference step on."""

    def act(self, obs: torch.Tensor, time_step: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        zero = self.actor(obs)
        return torch.where((step >= NAN_FROM_STEP).unsqueeze(-1),
                           torch.full_like(zero, float("nan")), zero)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """ONNX files with the tiny run's metadata and motion: zero action, heading-reactive, NaN
    mid-episode."""
    host = tracking_host()
    run_dir = train_tiny_run(tmp_path_factory.mktemp("logs"), host)
    export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5)
    metadata = read_metadata(run_dir / "export" / "policy.onnx")
    arrays = motion_at_control_rate(load_trained_policy(run_dir).motion(), 0.02)
    joints = metadata["joint_names"].split(",")
    names = metadata["observation_names"].split(",")
    offsets = [int(v) for v in metadata["observation_offsets"].split(",")]
    column = offsets[names.index("motion_anchor_ori_b")]
    gains = np.zeros(len(joints))
    gains[joints.index("left_hip_roll_joint")], gains[joints.index("right_hip_roll_joint")] = (
        12.0,
        -12.0,
    )
    out = tmp_path_factory.mktemp("graphs")
    modules = {"zero": DeployPolicy(ZeroActor(len(joints)), nn.Identity(), arrays),
               "heading": DeployPolicy(HeadingActor(len(joints), column, gains), nn.Identity(),
                                       arrays),
               "nan": NaNFrom(ZeroActor(len(joints)), nn.Identity(), arrays)}
    files = {name: write_onnx(module, out / f"{name}.onnx", int(metadata["num_observations"]),
                              metadata)
             for name, module in modules.items()}
    return {**files, "host": host, "run_dir": run_dir}


def _overall(report: dict) -> dict:
    return report["from_start"]


def test_a_robot_turned_away_fails_without_alignment_and_tracks_as_unturned_with_it(graphs):
    runs = {(yaw, align): _overall(run_sim2sim(graphs["heading"], Q1_XML, [0], max_steps=STEPS,
                                               align_heading=align, start_yaw_deg=yaw))
            for yaw, align in ((0, False), (90, False), (180, False), (90, True), (180, True))}
    straight = runs[(0, False)]
    assert straight["success_rate"] == 1.0 and straight["mean_episode_length"] == STEPS
    for yaw in (90, 180):
        # the policy reacts to a heading it cannot close
        assert runs[(yaw, False)]["success_rate"] == 0.0, yaw
        aligned = runs[(yaw, True)]
        assert aligned["success_rate"] == 1.0 and aligned["mean_episode_length"] == STEPS
        assert aligned["mpkpe_m"] == pytest.approx(straight["mpkpe_m"], abs=1e-3), yaw


def test_alignment_gives_the_unturned_observation_and_metrics_replaying_the_reference(graphs):
    """A zero action (replay): turned 90° the robot does the motion facing away, so world-frame
    errors grow; aligned, the reference turns with it: the first observation is the unturned one and
    the errors match."""
    setup = prepare(graphs["zero"], Q1_XML)
    first = {}
    for yaw, align in ((0.0, False), (np.pi / 2, False), (np.pi / 2, True)):
        episode = TrackingEpisode(setup, EpisodeMetrics(1, setup.control_dt), align_heading=align,
                                  start_yaw=yaw)
        data = mujoco.MjData(setup.robot.model)
        t = episode.start(data, 60)
        first[(yaw, align)] = episode.inputs(data, t, episode.first_action(t))["obs"][0].copy()
    np.testing.assert_allclose(first[(np.pi / 2, True)], first[(0.0, False)], atol=1e-6)
    # the anchor orientation term
    assert np.abs(first[(np.pi / 2, False)] - first[(0.0, False)]).max() > 0.5
    runs = {(yaw, align): _overall(run_sim2sim(graphs["zero"], Q1_XML, [0], max_steps=STEPS,
                                               align_heading=align, start_yaw_deg=yaw))
            for yaw, align in ((0, False), (90, False), (90, True))}
    assert runs[(90, False)]["mpkpe_m"] > runs[(0, False)]["mpkpe_m"] + 0.05
    assert runs[(90, True)]["mpkpe_m"] == pytest.approx(runs[(0, False)]["mpkpe_m"], abs=1e-3)


def test_heading_offset_undoes_a_known_turn_and_shift():
    rng = np.random.default_rng(0)
    steps, bodies = 5, 3
    quat = quat_from_euler_xyz(*(rng.uniform(-0.3, 0.3, (3, steps, bodies))
                                 + [[[0]], [[0]], [[1.0]]]))
    ref = {"body_pos_w": rng.normal(size=(steps, bodies, 3)), "body_quat_w": quat,
           "body_lin_vel_w": rng.normal(size=(steps, bodies, 3)),
           "body_ang_vel_w": rng.normal(size=(steps, bodies, 3)),
           "joint_pos": rng.normal(size=(steps, 4)), "joint_vel": rng.normal(size=(steps, 4))}
    moved = turn_reference(ref, 2.5, np.array([1.0, -2.0, 0.0]))  # where a robot stands and faces
    yaw, shift = heading_offset(ref, 0, 2, moved["body_pos_w"][2, 0], moved["body_quat_w"][2, 0])
    assert yaw == pytest.approx(2.5) and shift == pytest.approx([1.0, -2.0, 0.0])
    aligned = align_reference(ref, 0, 2, moved["body_pos_w"][2, 0], moved["body_quat_w"][2, 0])
    for key in ("body_pos_w", "body_lin_vel_w", "body_ang_vel_w", "body_quat_w"):
        np.testing.assert_allclose(aligned[key], moved[key], atol=1e-12)
    assert aligned["joint_pos"] is ref["joint_pos"]
    # heights unchanged
    np.testing.assert_allclose(aligned["body_pos_w"][..., 2], ref["body_pos_w"][..., 2])
    turned = np.angle(
        np.exp(1j * (yaw_angle(aligned["body_quat_w"]) - yaw_angle(ref["body_quat_w"])))
    )
    # every body, every step turned by the same yaw
    np.testing.assert_allclose(turned, 2.5, atol=1e-9)


def test_the_bundle_runner_and_module_take_align_heading_without_torch(graphs, tmp_path):
    import json

    out = tmp_path / "report.json"
    run_sim2sim_without_torch([graphs["zero"], Q1_XML, "--start", "0", "--align-heading",
                               "--start-yaw", "90",
                               "--output", out])
    report = json.loads(out.read_text())
    assert report["loop"]["align_heading"] is True and report["loop"]["start_yaw_deg"] == 90.0


def test_primebot_sim2sim_aligns_the_heading_of_a_turned_robot(graphs, monkeypatch, capsys):
    import json
    import shutil

    from primebot.pipeline.cli import main as cli
    from primebot.pipeline.hooks import host as plugins

    monkeypatch.setattr(plugins, "_HOST", graphs["host"])
    run_dir = graphs["run_dir"]
    # replay: it tracks the wave
    shutil.copyfile(graphs["zero"], run_dir / "export" / "policy.onnx")
    errors = {}
    for flags in ((), ("--align-heading",)):
        assert cli(["sim2sim", str(run_dir), "--start-yaw", "90", *flags]) == 0
        report = json.loads((run_dir / "sim2sim.json").read_text())
        assert report["loop"]["start_yaw_deg"] == 90.0 and report["loop"]["align_heading"] == bool(
            flags
        )
        errors[flags] = report["from_start"]["mpkpe_m"]
    assert "reference heading aligned to the robot at each start" in capsys.readouterr().out
    assert errors[("--align-heading",)] < 0.02 < 0.05 < errors[()]


def test_a_non_finite_action_ends_the_episode_as_a_failure_holding_the_last_finite_targets(
    graphs, monkeypatch
):
    from primebot.pipeline.deploy import loop
    from primebot.pipeline.deploy.joint_hal import hold_joint_targets

    sent = []
    monkeypatch.setattr(loop, "hold_joint_targets", lambda robot, data, meta, target, substeps: (
        sent.append(target.copy()), hold_joint_targets(robot, data, meta, target, substeps)))
    report = run_sim2sim(graphs["nan"], Q1_XML, [10], max_steps=STEPS)
    record = report["from_start"]["episode_records"][0]
    # one rule, the stress test's too
    assert record["failure"] == NON_FINITE_ACTION == STRESS_NON_FINITE_ACTION
    # it ended at the first non-finite action
    assert record["length"] == NAN_FROM_STEP - 10 == len(sent)
    assert report["from_start"]["success_rate"] == 0.0
    assert np.isfinite(sent).all()  # nothing non-finite ever reached the joints


def test_heading_options_are_refused_for_a_policy_without_a_motion(tmp_path):
    walk = write_onnx(ActionPolicy(nn.Linear(3, 2), nn.Identity()), tmp_path / "walk.onnx", 3,
                      {"export_kind": "policy"})
    with pytest.raises(Sim2SimError,
                       match="heading alignment and a turned start apply to a motion-tracking"):
        run_policy_file(walk, Q1_XML, [0], align_heading=True)
