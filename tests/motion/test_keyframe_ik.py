"""IK targets in keyframe sources (``ik:``): the centre of mass over the stance foot in one line."""

from __future__ import annotations

import textwrap

import mujoco
import numpy as np
import pytest

from primebot.pipeline.errors import MotionError
from primebot.pipeline.motion.author import author_motion, load_source
from primebot.pipeline.motion.validate import validate_motion
from primebot.pipeline.robot.kinematics import posed_frames
from primebot.pipeline.robot.model import robot_indices


def write(tmp_path, text: str):
    path = tmp_path / "src.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def poses_at(model, spec, motion, frames):
    """Per frame: the centre of mass and the two feet's positions."""
    indices = robot_indices(model, spec)
    out = []
    for f in frames:
        for _, data in posed_frames(model, indices, motion.body_pos_w[f:f + 1, 0],
                                    motion.body_quat_w[f:f + 1, 0],
                                    motion.joint_pos[f:f + 1]):
            mujoco.mj_comPos(model, data)
            out.append((data.subtree_com[1].copy(), data.body("left_ankle_roll_link").xpos.copy(),
                        data.body("right_ankle_roll_link").xpos.copy()))
    return out


def test_weight_over_the_stance_foot_is_one_line(spec, model, tmp_path):
    source = write(tmp_path, """\
        robot: q1
        keyframes:
          - {time: 0, plant_feet: true}
          - {time: 1.0, plant_feet: left_ankle_roll_link, ik: {com: {over: left_ankle_roll_link}}}
          - {time: 1.5, plant_feet: left_ankle_roll_link, ik: {com: {over: left_ankle_roll_link}},
             joints: {right_knee_joint: 1.0, right_hip_pitch_joint: -0.6}}
        """)
    motion = author_motion(load_source(source, spec), spec, model)
    (com0, left0, right0), (com1, left1, right1), (com2, left2, right2) = poses_at(
        model, spec, motion, (0, 50, 75)
    )
    assert abs(com0[1]) < 0.01  # standing: between the feet
    np.testing.assert_allclose(com1[:2], left1[:2], atol=0.01)  # over the left foot, both feet down
    np.testing.assert_allclose([left1, right1], [left0, right0], atol=0.005)
    # still over it with the right foot up
    np.testing.assert_allclose(com2[:2], left2[:2], atol=0.01)
    assert right2[2] > right0[2] + 0.03 and np.linalg.norm(left2 - left0) < 0.005
    report = validate_motion(motion, spec, model)
    assert report.ok and not [p for p in report.problems if p.check == "balance"]


def test_a_pinned_pelvis_is_reached_with_the_feet_held(spec, model, tmp_path):
    source = write(tmp_path, """\
        robot: q1
        keyframes:
          - {time: 0, plant_feet: true}
          - {time: 1.0, plant_feet: true, ik: {pelvis: [0.0, 0.0, 0.45]}}
        """)
    motion = author_motion(load_source(source, spec), spec, model)
    assert motion.body_pos_w[-1, 0, 2] == pytest.approx(0.45, abs=0.01)
    (_, left0, right0), (_, left1, right1) = poses_at(model, spec, motion,
                                                      (0, motion.num_frames - 1))
    np.testing.assert_allclose([left1, right1], [left0, right0], atol=0.005)


@pytest.mark.parametrize("ik, match", [
    ("{pelvs: [0, 0, 0.45]}", "no body 'pelvs' \\(did you mean 'pelvis'\\?\\)"),
    ("{pelvis: [0, 0, 0.9]}", "cannot be reached with the feet held: misses pelvis"),
    ("{pelvis: [0, 0]}", "must be \\[x, y, z\\]"),
])
def test_bad_ik_targets_name_the_keyframe(spec, model, tmp_path, ik, match):
    source = write(tmp_path, f"""\
        robot: q1
        keyframes:
          - {{time: 0, plant_feet: true}}
          - {{time: 1.0, plant_feet: true, ik: {ik}}}
        """)
    with pytest.raises(MotionError, match=match) as caught:
        author_motion(load_source(source, spec), spec, model)
    assert "keyframes[1].ik" in str(caught.value) and caught.value.fix
