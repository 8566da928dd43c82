"""``primebot motion validate``: one crafted bad file per rule, each reported with key, frame and
column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import reset_host
from primebot.pipeline.motion.author import author_file
from primebot.pipeline.motion.format import load_motion, save_motion
from primebot.pipeline.motion.trajectory import motion_from_trajectory
from primebot.pipeline.motion.validate import validate_motion_file
from primebot.pipeline.robot.model import robot_indices

KNEE = 3  # left_knee_joint
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wave():
    return dict(np.load(REPO_ROOT / "motions" / "wave.npz"))


def save(path, arrays: dict) -> str:
    np.savez(path, **arrays)
    return str(path)


def validate_arrays(tmp_path, spec, model, arrays: dict):
    """The report for ``arrays`` saved as an .npz (validation reads the file, as the CLI does)."""
    return validate_motion_file(save(tmp_path / "m.npz", arrays), spec, model)


def rebuilt(tmp_path, model, spec, wave, change) -> str:
    """A self-consistent motion (FK bodies, FD velocities) from the wave's joints after
    ``change``."""
    motion = load_motion_arrays(wave)
    joints = motion["joint_pos"].astype(np.float64)
    change(joints)
    ix = robot_indices(model, spec)
    rebuilt = motion_from_trajectory(
        model,
        ix,
        spec.joint_names,
        50.0,
        motion["body_pos_w"][:, 0].astype(np.float64),
        motion["body_quat_w"][:, 0].astype(np.float64),
        joints,
    )
    path = tmp_path / "rebuilt.npz"
    save_motion(rebuilt, path)
    return str(path)


def load_motion_arrays(arrays: dict) -> dict:
    return {key: np.array(value) for key, value in arrays.items()}


def only(report, check):
    found = [p for p in report.problems if p.check == check]
    assert found, f"no {check!r} problem in {[str(p) for p in report.problems]}"
    return found[0]


WARNED = {"getup": ["floor", "balance"]}
"""Shipped motions with warnings. The getup is recorded from simulation
(pipeline/motion/recording.py) with the servo targets as its joints: they lead the lagging joints,
so a limb reaches up to 19 mm below the floor, and the zero-moment point leaves the feet while the
body lands with momentum. (Walk and turn once left the feet too while they lifted a foot before the
weight was over the other; they now land each foot first and move the weight with both feet
down.)"""


def test_shipped_motions_are_valid(repo_root, spec, model):
    names = sorted(path.stem for path in (repo_root / "motions").glob("*.npz"))
    assert len(names) >= 8, names  # the motion library: wave, getup and at least six more
    for name in names:
        report = validate_motion_file(repo_root / "motions" / f"{name}.npz", spec, model)
        assert report.ok, [str(p) for p in report.problems]
        assert [p.check for p in report.problems] == WARNED.get(name, []), name


def test_a_weight_shift_too_fast_for_the_feet_is_a_balance_warning(repo_root, tmp_path, spec,
                                                                   model):
    # The march as first authored: 0.6 s across from one foot to the other. Min-jerk over 7 cm in
    # 0.6 s accelerates the body at up to 1.1 m/s², which puts the zero-moment point ~5 cm to the
    # side, past the edge of a 7 cm wide foot; the shipped march takes 1.0 s (0.8 cm to spare).
    source = yaml.safe_load((repo_root / "motions" / "march.yaml").read_text())
    source["keyframes"] = [{**k, "time": round(k["time"] * 0.6, 2)} for k in source["keyframes"]]
    path = tmp_path / "fast_march.yaml"
    path.write_text(yaml.safe_dump(source))
    author_file(path, spec, tmp_path / "fast_march.npz")
    problem = only(validate_motion_file(tmp_path / "fast_march.npz", spec, model), "balance")
    assert problem.severity == "warning" and "zero-moment point" in problem.message
    assert "docs/motions.md" in problem.fix
    march = validate_motion_file(repo_root / "motions" / "march.npz", spec, model)
    assert not [p for p in march.problems]


def _lean_to(tmp_path, spec, model, inside: float) -> Path:
    """q1 leaning its centre of mass (IK) forward to ``inside`` m behind its toes' edge, for 1 s."""
    import mujoco

    from primebot.pipeline.robot.stance import centre_of_mass, support_polygon

    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_kinematics(model, data)
    toes = support_polygon(model, data, ix.feet_body_ids.tolist())[:, 0].max()
    height = centre_of_mass(model, data, ix.root_body_id)[2]
    com = {"com": [round(float(toes - inside), 4), 0.0, round(float(height - 0.02), 4)]}
    source = {"robot": "q1", "fps": 50, "keyframes": [
        {"time": 0.0, "plant_feet": True}, {"time": 1.0, "plant_feet": True, "ik": com},
        {"time": 2.0, "plant_feet": True, "ik": com}, {"time": 3.0, "plant_feet": True}]}
    path = tmp_path / f"lean_{inside}.yaml"
    path.write_text(yaml.safe_dump(source))
    author_file(path, spec, path.with_suffix(".npz"))
    return path.with_suffix(".npz")


def test_a_pose_held_on_the_edge_of_the_feet_is_a_balance_warning(tmp_path, spec, model):
    # the bench's first H1 squat held its centre of mass on its toes for 2 s at the bottom,
    # validated clean, and its policy squatted 7 cm behind it (docs/robots.md)
    on_edge = _lean_to(tmp_path, spec, model, 0.005)
    problem = only(validate_motion_file(on_edge, spec, model), "balance")
    assert problem.severity == "warning"
    assert "stays within 1 cm of the edge of the planted feet for 1." in problem.message
    assert problem.fix.startswith("lean the pose over the middle of the feet")
    assert 25 <= problem.frame <= 50 and problem.count >= 25  # on the way into the lean, 0.5 s+
    # 2 cm inside is a lean, not a balancing act
    assert not validate_motion_file(_lean_to(tmp_path, spec, model, 0.02), spec, model).problems


def test_missing_key(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    del arrays["body_ang_vel_w"]
    report = validate_arrays(tmp_path, spec, model, arrays)
    problem = only(report, "format")
    assert (
        not report.ok
        and problem.key == "body_ang_vel_w"
        and "missing key(s) body_ang_vel_w" in problem.message
    )
    assert "primebot motion convert" in problem.fix


def test_nan_names_key_frame_and_joint(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["joint_pos"][42, KNEE] = np.nan
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "finite")
    assert (problem.key, problem.frame, problem.column) == ("joint_pos", 42, "left_knee_joint")


def test_wrong_fps_says_how_to_resample(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["fps"] = np.array([30.0])
    path = save(tmp_path / "m.npz", arrays)
    problem = only(validate_motion_file(path, spec, model), "fps")
    assert problem.key == "fps" and "fps is 30" in problem.message
    assert problem.fix == f"resample it: primebot motion resample {path} --fps 50"


def test_non_unit_quaternion(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["body_quat_w"][7, 4] *= 1.2
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "quaternion")
    assert (problem.key, problem.frame, problem.column) == ("body_quat_w", 7, "left_knee_link")
    assert "1.2000" in problem.message


def test_joint_out_of_range(tmp_path, spec, model, wave):
    def bend_too_far(joints):
        joints[:, KNEE] = np.linspace(0.4, 2.9, len(joints))  # limit is 2.6

    report = validate_motion_file(rebuilt(tmp_path, model, spec, wave, bend_too_far), spec, model)
    problem = only(report, "joint_limit")
    assert (problem.key, problem.column) == ("joint_pos", "left_knee_joint")
    assert "outside the range [-0.050, 2.600]" in problem.message
    first = int(np.argmax(np.linspace(0.4, 2.9, 281) > 2.6 + 0.02))
    assert problem.frame == first and problem.count == 281 - first
    assert {p.check for p in report.errors} <= {"joint_limit", "floor"}


def test_joint_count_mismatch(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    for key in ("joint_pos", "joint_vel"):
        arrays[key] = arrays[key][:, :21]
    arrays["joint_names"] = arrays["joint_names"][:21]
    report = validate_arrays(tmp_path, spec, model, arrays)
    problem = only(report, "joint_count")
    assert problem.key == "joint_pos" and "21 joint columns, robot 'q1' has 22" in problem.message


def test_jump_frames_are_listed(tmp_path, spec, model, wave):
    def jump(joints):
        joints[100:, KNEE] += 0.5

    report = validate_motion_file(rebuilt(tmp_path, model, spec, wave, jump), spec, model)
    problem = only(report, "jump")
    assert (problem.key, problem.frame, problem.column) == ("joint_pos", 100, "left_knee_joint")
    assert "discontinuous frames listed" in problem.message


def test_velocity_disagreeing_with_positions(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["joint_vel"][150:160, 18] += 3.0
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "velocity")
    assert (problem.key, problem.frame, problem.column, problem.count) == (
        "joint_vel",
        150,
        "right_shoulder_pitch_joint",
        10,
    )


def test_body_pose_disagreeing_with_forward_kinematics(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    hand = list(arrays["body_names"]).index("right_hand_link")
    arrays["body_pos_w"][50:60, hand, 0] += 0.05
    report = validate_arrays(tmp_path, spec, model, arrays)
    problem = only(report, "forward_kinematics")
    assert (problem.key, problem.frame, problem.column, problem.count) == (
        "body_pos_w",
        50,
        "right_hand_link",
        10,
    )


def test_body_below_the_floor(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["body_pos_w"][..., 2] -= 0.05  # the whole robot sunk 5 cm: FK still agrees
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "floor")
    assert (
        problem.severity == "error"
        and problem.frame == 0
        and "0.050 m below the floor" in problem.message
    )


def test_slight_floor_contact_is_a_warning_and_does_not_fail(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["body_pos_w"][..., 2] -= 0.01
    report = validate_arrays(tmp_path, spec, model, arrays)
    assert report.ok and only(report, "floor").severity == "warning"


def test_pickled_object_array_is_refused(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    arrays["joint_names"] = np.array(list(arrays["joint_names"]), dtype=object)
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "format")
    assert problem.key == "joint_names" and "refusing to unpickle" in problem.message


def test_truncated_file(tmp_path, spec, model, repo_root):
    data = (repo_root / "motions" / "wave.npz").read_bytes()
    path = tmp_path / "cut.npz"
    path.write_bytes(data[: len(data) // 2])
    problem = only(validate_motion_file(path, spec, model), "format")
    assert "not a readable .npz" in problem.message and "truncated" in problem.fix


def test_file_written_like_mjlab_csv_to_npz_loads_unchanged_and_validates(
    tmp_path, spec, model, wave
):
    # mjlab's csv_to_npz: np.savez of fps=[output_fps] (a Python float list → float64 (1,)),
    # float32 stacks of joint_pos (T, J), joint_vel (T, J), body_pos_w (T, B, 3),
    # body_quat_w (T, B, 4, w x y z), body_lin_vel_w / body_ang_vel_w (T, B, 3); no names.
    arrays = {"fps": [50.0]}
    for key in (
        "joint_pos",
        "joint_vel",
        "body_pos_w",
        "body_quat_w",
        "body_lin_vel_w",
        "body_ang_vel_w",
    ):
        arrays[key] = np.stack(list(wave[key].astype(np.float32)), axis=0)
    path = save(tmp_path / "mjlab.npz", arrays)
    with np.load(path) as raw:
        assert raw["fps"].dtype == np.float64 and raw["fps"].shape == (1,)
        assert raw["joint_pos"].dtype == np.float32 and raw["body_quat_w"].shape == (281, 25, 4)
    motion = load_motion(path)
    assert motion.fps == 50.0 and motion.joint_names is None
    for key in ("joint_pos", "body_quat_w", "body_ang_vel_w"):
        np.testing.assert_array_equal(getattr(motion, key), arrays[key])
    report = validate_motion_file(path, spec, model)
    assert report.ok and [p.check for p in report.problems] == [
        "names"
    ]  # only the no-names warning


def test_cli_json_and_exit_codes(tmp_path, repo_root, capsys, clean_env, wave):
    reset_host()
    assert main(["motion", "validate", str(repo_root / "motions" / "wave.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] and report["errors"] == 0 and report["num_frames"] == 281
    arrays = load_motion_arrays(wave)
    arrays["joint_pos"][3, 0] = np.inf
    (tmp_path / "运动").mkdir()
    bad = save(tmp_path / "运动" / "坏.npz", arrays)
    reset_host()
    assert main(["motion", "validate", bad]) == 5
    captured = capsys.readouterr()
    assert (
        "[key joint_pos, frame 3, column left_hip_pitch_joint] NaN or infinite values"
        in captured.out
    )
    assert "INVALID" in captured.out and "not a valid motion" in captured.err


def test_joint_names_in_another_order_are_named_column_by_column(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    names = list(arrays["joint_names"])
    names[3], names[9] = names[9], names[3]
    arrays["joint_names"] = np.array(names)
    report = validate_arrays(tmp_path, spec, model, arrays)
    found = [(p.column, p.message) for p in report.problems if p.check == "joint_names"]
    assert found == [
        ("3", "column holds 'right_knee_joint', robot order expects 'left_knee_joint'"),
        ("9", "column holds 'left_knee_joint', robot order expects 'right_knee_joint'"),
    ]


def test_body_count_mismatch(tmp_path, spec, model, wave):
    arrays = load_motion_arrays(wave)
    for key in ("body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w"):
        arrays[key] = arrays[key][:, :24]
    arrays["body_names"] = arrays["body_names"][:24]
    problem = only(validate_arrays(tmp_path, spec, model, arrays), "body_count")
    assert problem.key == "body_pos_w" and "24 bodies, robot 'q1' has 25" in problem.message


def test_cli_names_the_training_overrides_a_valid_motion_carries(repo_root, capsys, clean_env):
    reset_host()
    assert main(["motion", "validate", str(repo_root / "motions" / "getup.npz")]) == 0
    out = capsys.readouterr().out
    assert ("carries training overrides (applied before any --set): "
            "task.terminations.end_effector_height=null") in out
