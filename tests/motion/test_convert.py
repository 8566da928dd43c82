"""CSV (mjlab/BeyondMimic layout) conversion and resampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.errors import MotionError
from primebot.pipeline.hooks.host import reset_host
from primebot.pipeline.motion.convert import (
    convert_csv,
    read_csv,
    resample,
    resample_motion,
    write_csv,
)
from primebot.pipeline.motion.format import load_motion, save_motion
from primebot.pipeline.motion.validate import validate_motion, validate_motion_file
from primebot.pipeline.rotations import quat_from_axis_angle, quat_to_rotvec

REPO_ROOT = Path(__file__).resolve().parents[2]


def ramp_csv(
    path: Path, spec, fps: float = 30.0, seconds: float = 1.0, yaw_rate: float = 0.6
) -> Path:
    """A standing robot turning at a constant yaw rate while its left elbow bends at a constant
    rate."""
    frames = int(round(seconds * fps)) + 1
    t = np.arange(frames) / fps
    quat_wxyz = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw_rate * t)
    joints = np.tile(spec.default_joint_pos, (frames, 1))
    joints[:, spec.joint_names.index("left_elbow_joint")] = -0.3 - 0.8 * t
    root = np.column_stack((0.1 * t, np.zeros(frames), np.full(frames, 0.497)))
    table = np.column_stack((root, quat_wxyz[:, [1, 2, 3, 0]], joints))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, table, delimiter=",")
    return path


def test_csv_quaternions_are_read_as_xyzw_and_stored_as_wxyz(tmp_path, spec):
    path = ramp_csv(tmp_path / "ramp.csv", spec, yaw_rate=1.0)
    root_pos, root_quat, joints = read_csv(path, spec.num_joints)
    half = 0.5 * (1.0 / 30.0)
    np.testing.assert_allclose(root_quat[1], [np.cos(half), 0, 0, np.sin(half)], atol=1e-12)
    assert root_pos.shape == (31, 3) and joints.shape == (31, 22)


def test_resampling_30_to_50_fps_matches_the_hand_computed_trajectory(tmp_path, spec, model):
    path = ramp_csv(tmp_path / "ramp.csv", spec, fps=30.0, seconds=1.0, yaw_rate=0.6)
    motion = convert_csv(path, spec, input_fps=30.0, output_fps=50.0, model=model)
    assert motion.fps == 50.0 and motion.num_frames == 51  # 1 s at 50 fps, both ends kept
    t = np.arange(51) / 50.0
    elbow = spec.joint_names.index("left_elbow_joint")
    np.testing.assert_allclose(
        motion.joint_pos[:, elbow], -0.3 - 0.8 * t, atol=1e-12
    )  # lerp of a ramp is exact
    np.testing.assert_allclose(motion.body_pos_w[:, 0, 0], 0.1 * t, atol=1e-12)
    yaw = quat_to_rotvec(motion.body_quat_w[:, 0])[:, 2]
    np.testing.assert_allclose(yaw, 0.6 * t, atol=1e-9)  # slerp at constant rate is exact
    np.testing.assert_allclose(motion.joint_vel[5:-5, elbow], -0.8, atol=1e-9)
    np.testing.assert_allclose(motion.body_ang_vel_w[5:-5, 0, 2], 0.6, atol=1e-6)
    report = validate_motion(motion, spec, model)
    assert report.ok, [str(p) for p in report.problems]


def test_csv_to_npz_to_csv_round_trip(tmp_path, spec, model):
    start = tmp_path / "运动" / "wave.csv"
    start.parent.mkdir()
    write_csv(load_motion(REPO_ROOT / "motions" / "wave.npz"), spec, start, model)
    npz = tmp_path / "运动" / "wave.npz"
    save_motion(convert_csv(start, spec, input_fps=50.0, model=model), npz)
    back = tmp_path / "运动" / "back.csv"
    write_csv(load_motion(npz), spec, back, model)
    a, b = np.loadtxt(start, delimiter=","), np.loadtxt(back, delimiter=",")
    assert a.shape == b.shape == (281, 7 + 22)
    np.testing.assert_allclose(b, a, atol=1e-6)  # float32 storage in the npz is the only loss
    assert validate_motion_file(npz, spec, model).ok


def test_resample_motion_round_trips_through_another_rate(spec, model):
    wave = load_motion(REPO_ROOT / "motions" / "wave.npz")
    at_100 = resample_motion(wave, spec, 100.0, model)
    assert at_100.num_frames == 561
    back = resample_motion(at_100, spec, 50.0, model)
    np.testing.assert_allclose(back.joint_pos, wave.joint_pos, atol=1e-6)
    np.testing.assert_allclose(back.body_pos_w, wave.body_pos_w, atol=1e-6)


def test_resample_keeps_partial_durations_inside_the_input(spec):
    pos = np.zeros((4, 3))
    quat = np.tile([1.0, 0, 0, 0], (4, 1))
    joints = np.arange(4.0)[:, None]  # 3 frames of 1/30 s = 0.1 s
    _, _, out = resample(30.0, 50.0, pos, quat, joints)
    np.testing.assert_allclose(out[:, 0], [0.0, 0.6, 1.2, 1.8, 2.4, 3.0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,0,0.5,0,0,0,1,0.1\n" * 3, "has 8 columns, expected 29"),
        (
            "0,0,0.5,0,0,0,1" + ",0" * 22 + "\n0,0,nan" + ",0" * 26 + "\n",
            "line 2 column 3 is not finite",
        ),
        (
            "0,0,0.5,0,0,0,1" + ",0" * 22 + "\n0,0,x" + ",0" * 26 + "\n",
            "line 2 has a value that is not a number",
        ),
        (
            "0,0,0.5,0,0,0,0" + ",0" * 22 + "\n" + "0,0,0.5,0,0,0,1" + ",0" * 22 + "\n",
            "zero root quaternion",
        ),
    ],
)
def test_bad_csv_rows_are_named(tmp_path, spec, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(MotionError, match=message.replace("(", r"\(")):
        read_csv(path, spec.num_joints)


def test_a_header_line_is_skipped(tmp_path, spec):
    path = ramp_csv(tmp_path / "h.csv", spec)
    path.write_text("x,y,z,qx,qy,qz,qw," + ",".join(spec.joint_names) + "\n" + path.read_text())
    assert read_csv(path, spec.num_joints)[2].shape == (31, 22)


def test_convert_and_resample_commands(tmp_path, spec, capsys, clean_env):
    csv = ramp_csv(tmp_path / "数据" / "ramp.csv", spec)
    reset_host()
    assert main(["motion", "convert", str(csv)]) == 5  # no --input-fps: a typed error
    assert "--input-fps" in capsys.readouterr().err
    reset_host()
    assert main(["motion", "convert", str(csv), "--input-fps", "30", "--output-fps", "30"]) == 0
    at_30 = csv.with_suffix(".npz")
    assert load_motion(at_30).fps == 30.0
    reset_host()
    assert main(["motion", "validate", str(at_30)]) == 5
    assert "primebot motion resample" in capsys.readouterr().out
    reset_host()
    assert main(["motion", "resample", str(at_30), "--fps", "50"]) == 0
    resampled = tmp_path / "数据" / "ramp_50fps.npz"
    assert load_motion(resampled).num_frames == 51
    reset_host()
    assert main(["motion", "validate", str(resampled)]) == 0
