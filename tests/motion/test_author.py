"""Keyframe authoring and the shipped motions (motions/*.npz from motions/*.yaml)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import mujoco
import numpy as np
import pytest

from primebot.pipeline.errors import MotionError
from primebot.pipeline.motion.author import author_motion, load_source, minimum_jerk
from primebot.pipeline.motion.format import (
    SAME_MOTION_ATOL,
    load_motion,
    motion_difference,
    save_motion,
)
from primebot.pipeline.robot.kinematics import lowest_point
from primebot.pipeline.robot.model import robot_indices


def write(tmp_path, text: str, name: str = "src.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_minimum_jerk_blend_hits_its_hand_computed_values():
    u = np.array([0.0, 0.25, 0.5, 1.0])
    # 10u³ − 15u⁴ + 6u⁵ at u = 1/4: 10/64 − 15/256 + 6/1024 = 0.103515625
    np.testing.assert_allclose(minimum_jerk(u), [0.0, 0.103515625, 0.5, 1.0])
    eps = 1e-6  # zero slope at both ends, slope 15/8 in the middle
    assert minimum_jerk(np.array([eps]))[0] / eps == pytest.approx(0.0, abs=1e-9)
    assert (minimum_jerk(np.array([0.5 + eps])) - minimum_jerk(np.array([0.5 - eps])))[0] / (
        2 * eps
    ) == pytest.approx(1.875)


SHIPPED = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "motions").glob("*.yaml"))
RECORDED = {"getup"}
"""Shipped motions recorded from simulation (their sources say ``record:``;
pipeline/motion/recording.py)."""


def test_the_recorded_motions_are_those_whose_source_says_record(repo_root):
    import yaml

    said = {name for name in SHIPPED
            if "record" in yaml.safe_load((repo_root / "motions" / f"{name}.yaml")
                                          .read_text(encoding="utf-8"))}
    assert said == RECORDED


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_motion_regenerates_from_its_source(repo_root, import_tool, tmp_path, spec, name):
    # the same arrays to the last float32 digit or so: another numpy/MuJoCo build moves a few bits
    import yaml

    build = import_tool("make_motions").build  # authored, or recorded when the source says record:

    fresh = tmp_path / f"{name}.npz"
    source = repo_root / "motions" / f"{name}.yaml"
    build(source, yaml.safe_load(source.read_text(encoding="utf-8")), spec, fresh)
    shipped = load_motion(repo_root / "motions" / f"{name}.npz")
    assert motion_difference(load_motion(fresh), shipped) <= SAME_MOTION_ATOL


def test_wave_keeps_feet_flat_and_still_and_moves_only_the_right_arm(repo_root, spec):
    motion = load_motion(repo_root / "motions" / "wave.npz")
    assert motion.fps == 50 and motion.duration >= 4.0
    feet = [motion.body_names.index(b) for b in spec.feet]
    np.testing.assert_allclose(
        motion.body_pos_w[:, feet],
        np.broadcast_to(motion.body_pos_w[:1, feet], (motion.num_frames, 2, 3)),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        motion.body_quat_w[:, feet],
        np.broadcast_to(motion.body_quat_w[:1, feet], (motion.num_frames, 2, 4)),
        atol=1e-6,
    )
    moving = np.flatnonzero(np.ptp(motion.joint_pos, axis=0) > 1e-6)
    assert {spec.joint_names[j] for j in moving} <= {
        "right_shoulder_pitch_joint", "right_shoulder_roll_joint", "right_shoulder_yaw_joint",
        "right_elbow_joint"
    }  # fmt: skip
    np.testing.assert_allclose(motion.joint_pos[0], spec.default_joint_pos, atol=1e-6)
    np.testing.assert_allclose(motion.joint_pos[-1], spec.default_joint_pos, atol=1e-6)
    assert np.abs(motion.joint_vel).max() < 5.0  # moderate: trackable by a policy
    # the hand really goes up and comes back: three elbow swings between -65° and -110°
    elbow = motion.joint_pos[:, spec.joint_names.index("right_elbow_joint")]
    hand = motion.body_pos_w[:, motion.body_names.index("right_hand_link"), 2]
    assert (
        hand.max() > motion.body_pos_w[0, motion.body_names.index("right_shoulder_pitch_link"), 2]
    )
    swings = np.sum(np.diff(np.sign(np.diff(elbow[80:200]))) != 0)
    assert swings >= 5


def test_getup_goes_from_lying_to_standing(repo_root, spec):
    motion = load_motion(repo_root / "motions" / "getup.npz")
    assert motion.fps == 50 and motion.duration >= 5.0
    torso = motion.body_names.index(spec.anchor_body)
    # world z of the body's z axis
    up = lambda q: 1 - 2 * (q[..., 1] ** 2 + q[..., 2] ** 2)  # noqa: E731
    assert (
        abs(up(motion.body_quat_w[0, torso])) < 0.1 and motion.body_pos_w[0, torso, 2] < 0.15
    )  # lying
    assert (
        up(motion.body_quat_w[-1, torso]) > 0.99 and motion.body_pos_w[-1, torso, 2] > 0.55
    )  # standing
    # in the default pose but for the shoulders' roll (10 degrees, the default 8.6) and what the
    # recording's ankle feedback left
    np.testing.assert_allclose(motion.joint_pos[-1], spec.default_joint_pos, atol=0.025)


@pytest.mark.parametrize("name", sorted(set(SHIPPED) - RECORDED))
def test_the_lowest_point_touches_the_floor_in_every_frame(repo_root, model, spec, name):
    motion = load_motion(repo_root / "motions" / f"{name}.npz")
    ix = robot_indices(model, spec)
    root = motion.body_names.index(spec.root_body)
    low = lowest_point(
        model, ix, motion.body_pos_w[:, root], motion.body_quat_w[:, root], motion.joint_pos
    )
    np.testing.assert_allclose(low, 0.0, atol=1e-5)  # float32 storage


def test_velocities_are_continuous_and_match_positions(repo_root):
    motion = load_motion(repo_root / "motions" / "squat.npz")
    np.testing.assert_allclose(
        motion.joint_vel, np.gradient(motion.joint_pos, 1 / motion.fps, axis=0), atol=1e-4
    )
    np.testing.assert_allclose(
        motion.body_lin_vel_w, np.gradient(motion.body_pos_w, 1 / motion.fps, axis=0), atol=2e-3
    )
    assert np.abs(np.diff(motion.joint_vel, axis=0)).max() < 0.3  # no velocity steps between frames


def test_unnamed_joints_keep_the_default_pose_and_angles_may_be_degrees(tmp_path, spec, model):
    src = write(
        tmp_path,
        """
        robot: q1
        angles: deg
        keyframes:
          - {time: 0}
          - {time: 0.5, joints: {left_elbow_joint: -90}}
        """,
    )
    motion = author_motion(load_source(src, spec), spec, model)
    assert motion.num_frames == 26
    elbow = spec.joint_names.index("left_elbow_joint")
    assert motion.joint_pos[-1, elbow] == pytest.approx(-np.pi / 2)
    others = np.delete(np.arange(spec.num_joints), elbow)
    np.testing.assert_allclose(
        motion.joint_pos[:, others], np.broadcast_to(spec.default_joint_pos[others], (26, 21))
    )
    # velocities are np.gradient's finite differences: one-sided at the ends, central inside
    q = motion.joint_pos[:, elbow]
    assert motion.joint_vel[0, elbow] == pytest.approx((q[1] - q[0]) * 50)
    assert motion.joint_vel[12, elbow] == pytest.approx((q[13] - q[11]) * 25)


def test_training_overrides_of_the_source_travel_in_the_motion_file(tmp_path, spec, model):
    src = write(
        tmp_path,
        """
        robot: q1
        training: ["task.terminations.end_effector_height=null",
                   "task.randomization.curriculum.start=0"]
        keyframes:
          - {time: 0}
          - {time: 0.5}
        """,
    )
    save_motion(author_motion(load_source(src, spec), spec, model), tmp_path / "m.npz")
    assert load_motion(tmp_path / "m.npz").training_overrides == (
        "task.terminations.end_effector_height=null", "task.randomization.curriculum.start=0")
    # a plain unicode array: no pickle to read it
    with np.load(tmp_path / "m.npz", allow_pickle=False) as data:
        assert data["training_overrides"].dtype.kind == "U"


def test_a_root_pose_places_the_robot_and_the_floor_fixes_its_height(tmp_path, spec, model):
    src = write(
        tmp_path,
        """
        angles: deg
        keyframes:
          - {time: 0, root: {pos: [1.0, 2.0, 5.0], rpy: [0, 0, 90]}}
          - {time: 0.2}
        """,
    )
    motion = author_motion(load_source(src, spec), spec, model)
    pelvis = motion.body_pos_w[:, 0]
    np.testing.assert_allclose(pelvis[:, :2], [[1.0, 2.0]] * motion.num_frames, atol=1e-9)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "stand")
    assert pelvis[0, 2] == pytest.approx(
        model.key_qpos[key][2], abs=1e-3
    )  # on the floor, not at z = 5
    np.testing.assert_allclose(
        motion.body_quat_w[0, 0], [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-9
    )


def test_an_airborne_keyframe_keeps_its_given_height(tmp_path, spec, model):
    src = write(
        tmp_path,
        """
        keyframes:
          - {time: 0}
          - {time: 0.4, floor: false, root: {pos: [0, 0, 0.8]}}
        """,
    )
    motion = author_motion(load_source(src, spec), spec, model)
    assert motion.body_pos_w[-1, 0, 2] == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "keyframes:\n  - {time: 0}\n  - {time: 1, joints: {left_elbw_joint: 0.1}}\n",
            "did you mean 'left_elbow_joint'",
        ),
        (
            "keyframes:\n  - {time: 0}\n  - {time: 1, joints: {left_knee_joint: 3.0}}\n",
            "outside the joint's range",
        ),
        ("keyframes:\n  - {time: 0}\n  - {time: 0}\n", "must be later than the previous keyframe"),
        ("keyframes:\n  - {time: 0}\n  - {time: 1, pose: nope}\n", "no pose named 'nope'"),
        (
            "keyframes:\n  - {time: 0}\n  - {time: 1, joints: {left_knee_joint: abc}}\n",
            "keyframes[1].joints.left_knee_joint must be a finite number",
        ),
        ("keyframes:\n  - {time: 0}\n", "at least two keyframes"),
        ("angles: grad\nkeyframes: []\n", "'rad' or 'deg'"),
        ("keyframe:\n  - {time: 0}\n", "unknown key(s) keyframe"),
        ("training: [task.terminations.end_effector_height]\nkeyframes:\n  - {time: 0}\n  - {time: "
         "1}\n",
         "training must list KEY=VALUE strings"),
    ],
)
def test_bad_sources_name_the_key_and_the_fix(tmp_path, spec, model, body, message):
    src = write(tmp_path, body)
    with pytest.raises(MotionError) as err:
        author_motion(load_source(src, spec), spec, model)
    assert message in str(err.value) and str(src) in str(err.value)


def test_author_command_writes_to_a_non_ascii_path(tmp_path, repo_root, capsys, clean_env):
    from primebot.pipeline.cli import main
    from primebot.pipeline.hooks.host import reset_host

    reset_host()
    out = tmp_path / "运动" / "挥手.npz"
    assert main(["motion", "author", str(repo_root / "motions" / "wave.yaml"), "-o", str(out)]) == 0
    assert "281 frames at 50 fps" in capsys.readouterr().out
    assert (
        motion_difference(load_motion(out), load_motion(repo_root / "motions" / "wave.npz"))
        <= SAME_MOTION_ATOL
    )


def test_wave_is_trackable_by_pd_control_on_the_reference_alone(repo_root, spec, model):
    """Physics check of the shipped wave: joint targets = reference, no policy, the robot stays up
    and on track."""
    motion = load_motion(repo_root / "motions" / "wave.npz")
    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    data.qpos[:3], data.qpos[3:7] = motion.body_pos_w[0, 0], motion.body_quat_w[0, 0]
    data.qpos[ix.qpos_adr] = motion.joint_pos[0]
    mujoco.mj_forward(model, data)
    errors = []
    for t in range(1, motion.num_frames):
        data.ctrl[ix.actuator_ids] = motion.joint_pos[t]
        for _ in range(4):  # 50 Hz control, 200 Hz physics
            mujoco.mj_step(model, data)
        tracked = ix.tracked_body_ids
        errors.append(
            np.linalg.norm(data.xpos[tracked] - motion.body_pos_w[t, tracked - 1], axis=1).mean()
        )
    assert (
        max(errors) < 0.03
    )  # m, mean per-body position error; the product target is 0.08 with a policy
    assert data.xpos[ix.anchor_body_id][2] > 0.58


def test_a_named_support_foot_stays_put_while_the_other_leg_moves(repo_root):
    motion = load_motion(repo_root / "motions" / "march.npz")
    right, left = (motion.body_names.index(f"{side}_ankle_roll_link") for side in ("right", "left"))
    # frames of 1.2-2.2 s: plant_feet: right_ankle_roll_link, left knee up
    raise_left = slice(60, 110)
    support = motion.body_pos_w[raise_left, right, :2]
    assert np.abs(support - support[0]).max() < 1e-6
    # the left foot rose more than 10 cm
    assert np.ptp(motion.body_pos_w[raise_left, left, 2]) > 0.1


def test_alternating_support_feet_walk_the_robot_forward(repo_root):
    motion = load_motion(repo_root / "motions" / "walk.npz")
    pelvis = motion.body_names.index("pelvis")
    # two 0.115 m steps
    assert motion.body_pos_w[-1, pelvis, 0] - motion.body_pos_w[0, pelvis, 0] > 0.2


def _sole_tilt_deg(motion, foot: str) -> np.ndarray:
    """[T] angle between the foot body's z axis and the world's up (q1's soles are level at 0.3
    deg)."""
    w, x, y, z = np.moveaxis(motion.body_quat_w[:, motion.body_names.index(foot)], -1, 0)
    return np.degrees(np.arccos(np.clip(1 - 2 * (x * x + y * y), -1, 1)))


def test_a_foot_planted_while_the_body_turns_over_it_stays_level(repo_root, spec):
    """The turn yaws the body 30 deg over the left foot with that hip rolled: authored as posed, the
    hip's yaw tipped the foot 9 deg onto an edge; the levelled ankles keep the sole flat."""
    motion = load_motion(repo_root / "motions" / "turn.npz")
    # keyframes 1.7-2.7 s: plant_feet: left_ankle_roll_link
    turning = slice(int(1.7 * 50), int(2.7 * 50) + 1)
    assert _sole_tilt_deg(motion, "left_ankle_roll_link")[turning].max() < 1.5
    source = load_source(repo_root / "motions" / "turn.yaml", spec)
    for frame in source.keyframes:
        frame.plant_feet = ()  # nothing planted: nothing levelled, the foot tips as the pose says
    unlevelled = author_motion(source, spec)
    assert _sole_tilt_deg(unlevelled, "left_ankle_roll_link")[turning].max() > 5.0


def test_levelling_leaves_feet_that_are_already_level_alone(repo_root, spec):
    source = load_source(repo_root / "motions" / "squat.yaml", spec)
    levelled = author_motion(source, spec)
    for frame in source.keyframes:
        frame.plant_feet = ()
    np.testing.assert_allclose(author_motion(source, spec).joint_pos, levelled.joint_pos, atol=1e-6)


def test_plant_feet_must_name_a_foot(tmp_path, spec):
    source = tmp_path / "bad.yaml"
    source.write_text(textwrap.dedent("""
        robot: q1
        keyframes:
          - {time: 0.0, plant_feet: left_ankle_rol_link}
          - {time: 1.0}
    """), encoding="utf-8")
    with pytest.raises(MotionError, match="did you mean 'left_ankle_roll_link'"):
        load_source(source, spec)
