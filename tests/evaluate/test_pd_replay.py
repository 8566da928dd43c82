"""`primebot motion pd-replay`: the reference under PD, no policy, tells a motion the body cannot
start from one that needs feedback to balance."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from video_probe import probe

from primebot.pipeline.cli import build_cli
from primebot.pipeline.errors import MotionError
from primebot.pipeline.evaluate.pd_replay import joint_errors, off_track_s, pd_replay
from primebot.pipeline.hooks.host import load_plugins


def _replay(repo_root, motion, tmp_path, *options: str) -> dict:
    """The command on ``motions/<motion>.npz``, or on the motion file ``motion`` when it is a
    path; its JSON figures."""
    path = motion if isinstance(motion, Path) else repo_root / "motions" / f"{motion}.npz"
    out = tmp_path / f"{path.stem}.json"
    cli = build_cli(load_plugins(entry_points_=[]))
    result = CliRunner().invoke(cli, ["motion", "pd-replay", str(path), "--json", str(out),
                                      *options])
    assert result.exit_code == 0, result.output
    assert "PD on the reference joints" in result.output and "statue" in result.output
    assert "joints furthest from their reference in the first 1 s" in result.output
    return json.loads(out.read_text())


SIT_UP_BY_THE_HIPS = """
robot: q1
fps: 50
angles: deg
poses:
  lying: {left_shoulder_roll_joint: 10, right_shoulder_roll_joint: -10, left_elbow_joint: 0,
          right_elbow_joint: 0}
  sitting: {left_hip_pitch_joint: -80, right_hip_pitch_joint: -80, left_knee_joint: 0,
            right_knee_joint: 0, left_ankle_pitch_joint: 0, right_ankle_pitch_joint: 0,
            waist_pitch_joint: 20}
keyframes:
  - {time: 0.0, pose: lying, root: {rpy: [0, -90, 0]}}
  - {time: 0.5, pose: lying, root: {rpy: [0, -90, 0]}}
  - {time: 1.6, pose: sitting, root: {rpy: [0, -10, 0]}}
  - {time: 3.0, pose: sitting, root: {rpy: [0, -10, 0]}}
"""
"""The first shipped getup's sit-up: q1's legs weigh half what its upper body does about the
hips."""


def test_a_sit_up_by_the_hips_never_starts_while_the_squat_follows_until_it_loses_balance(
    repo_root, tmp_path, spec
):
    from primebot.pipeline.motion.author import author_file

    (tmp_path / "sit_up.yaml").write_text(SIT_UP_BY_THE_HIPS, encoding="utf-8")
    author_file(tmp_path / "sit_up.yaml", spec, tmp_path / "sit_up.npz")
    sit_up = _replay(repo_root, tmp_path / "sit_up.npz", tmp_path)
    # the hips lift the legs, not the torso: the root stays on the floor as the reference rises
    assert max(sit_up["reference_root_height_m"]) > 0.13
    assert max(sit_up["root_height_m"]) < 0.1
    squat = _replay(repo_root, "squat", tmp_path)
    second = slice(0, round(1.0 / squat["step_dt"]))
    # the squat's first second under open-loop PD: the body does what the reference does
    assert (
        np.max(
            np.abs(
                np.subtract(
                    squat["root_height_m"][second], squat["reference_root_height_m"][second]
                )
            )
        )
        < 0.02
    )
    # ... and every joint stays within a few degrees of its target meanwhile
    assert max(rms for _, rms, _ in joint_errors(squat, 1.0)) < 0.1


def test_with_the_servo_feedforward_the_squat_is_followed_open_loop_to_its_end(repo_root, tmp_path):
    # without it the servos sag under the bent knees and the replay falls (the test above: the
    # first second follows); with it no servo sags, and the standing squat needs no balancing
    squat = _replay(repo_root, "squat", tmp_path, "--feedforward")
    assert squat["feedforward"]
    assert squat["mean_mpkpe_m"] < 0.005 and max(squat["mpkpe_m"]) < 0.01
    sag = np.subtract(squat["root_height_m"], squat["reference_root_height_m"])
    assert np.abs(sag).max() < 0.005


def test_the_replay_is_filmed_with_its_reference_as_a_ghost_one_frame_a_control_step(
    repo_root, tmp_path
):
    film = tmp_path / "march_pd.mp4"
    march = _replay(repo_root, "march", tmp_path, "--video", str(film))
    assert march["video"] == str(film)
    video = probe(film)
    # the first frame, then one a control step until the episode ended at the motion's end
    assert video["frames"] == len(march["mpkpe_m"]) + 1
    assert video["fps"] == pytest.approx(1.0 / march["step_dt"])


def test_the_recorded_getup_is_followed_open_loop_to_standing(repo_root, tmp_path):
    getup = _replay(repo_root, "getup", tmp_path)
    robot, reference = np.array(getup["root_height_m"]), np.array(getup["reference_root_height_m"])
    # its joints are the recorded servo targets, so zero actions give the recording back (the root
    # is raised only where the targets' legs would dip into the floor, during the leg throw)
    assert np.abs(robot - reference).max() < 0.06
    last = slice(-round(1.0 / getup["step_dt"]), None)
    # standing
    assert np.abs(robot[last] - reference[last]).max() < 0.005 and robot[last].min() > 0.45
    assert getup["mean_mpkpe_m"] < 0.1 * getup["statue_mpkpe_m"]


def test_a_motion_longer_than_the_task_time_out_is_replayed_to_its_end(repo_root, tmp_path):
    # 11.8 s; the tracking task's episodes time out at 10 s
    turn = _replay(repo_root, "turn", tmp_path)
    assert len(turn["mpkpe_m"]) * turn["step_dt"] > 11.5


def test_the_joints_that_sag_are_listed_from_before_the_robot_drifts_off():
    # joint b lags 0.1 rad from the start; at 1 s the robot falls and a swings 1 rad
    out = {"step_dt": 0.02, "joint_names": ["a", "b"], "mpkpe_m": [0.01] * 50 + [0.2] * 50,
           "joint_error_rad": [[0.0, 0.1]] * 50 + [[1.0, 0.1]] * 50}
    assert off_track_s(out) == 1.02
    assert [name for name, *_ in joint_errors(out, 1.0)] == ["b", "a"]
    assert joint_errors(out, 2.0)[0][0] == "a"
    assert off_track_s({**out, "mpkpe_m": [0.01] * 100}) is None


def test_a_task_without_the_replay_asked_for_is_a_typed_error(repo_root, spec, monkeypatch):
    host = load_plugins(entry_points_=[])
    tracking = host.registry.get("tasks", "tracking")
    squat = repo_root / "motions" / "squat.npz"

    def declaring(**play):
        """The registry with the tracking task's play settings changed as ``play`` says."""
        task = dataclasses.replace(tracking, play=dataclasses.replace(tracking.play, **play))
        get = type(host.registry).get
        monkeypatch.setattr(host.registry, "get", lambda kind, name: task if kind == "tasks"
                            else get(host.registry, kind, name))
        return host.registry

    # a task may declare the open-loop replay without the feedforward, or neither
    with pytest.raises(MotionError, match="no servo feedforward") as raised:
        pd_replay(squat, spec, declaring(open_loop_feedforward=None), feedforward=True)
    assert "--feedforward" in raised.value.fix
    with pytest.raises(MotionError, match="no open-loop replay"):
        pd_replay(squat, spec, declaring(open_loop=None))
