"""A robot's mirror image (robot/mirror.py) and the tracking task's mirrored observations, on real
MuJoCo: the mirror of what q1 observes is what its mirror image observes, step after step."""

from __future__ import annotations

import copy
import types

import mujoco
import numpy as np
import pytest
from tracking_run import WAVE

from primebot.pipeline.errors import RobotError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.motion.trajectory import motion_from_trajectory
from primebot.pipeline.robot.mirror import joint_mirror
from primebot.pipeline.robot.model import load_robot_model, robot_indices


@pytest.fixture(scope="module")
def registry():
    return load_plugins(environ={"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"}).registry


@pytest.fixture(scope="module")
def q1(registry):
    spec = registry.get("robots", "q1")
    model = load_robot_model(spec)
    return spec, model, robot_indices(model, spec)


def test_q1s_joints_mirror_their_namesakes_with_roll_and_yaw_negated(q1):
    spec, model, indices = q1
    mirror = joint_mirror(model, indices, spec.joint_names, spec.default_joint_pos)
    names = spec.joint_names
    for j, name in enumerate(names):
        if name.startswith(("left_", "right_")):
            side, other = ("left_", "right_") if name.startswith("left_") else ("right_", "left_")
            assert names[mirror.source[j]] == other + name[len(side):], name
        else:
            assert mirror.source[j] == j, name  # the waist is on the plane
        assert mirror.sign[j] == (-1 if ("roll" in name or "yaw" in name) else 1), name
    assert "waist_yaw_joint ↔ itself (angle negated)" in mirror.describe(names)


def test_a_joint_without_a_partner_and_an_asymmetric_default_pose_are_refused(q1):
    spec, model, indices = q1
    lopsided = copy.copy(model)
    hip = mujoco.mj_name2id(lopsided, mujoco.mjtObj.mjOBJ_JOINT, "right_hip_roll_joint")
    lopsided.jnt_axis[hip] = (0.0, 0.0, 1.0)  # the right hip "rolls" about the vertical
    with pytest.raises(RobotError, match="'left_hip_roll_joint' has no mirror partner"):
        joint_mirror(lopsided, indices, spec.joint_names, spec.default_joint_pos)
    pose = np.array(spec.default_joint_pos, dtype=float)
    pose[spec.joint_names.index("left_knee_joint")] += 0.1
    with pytest.raises(RobotError, match="default pose is not left-right symmetric: left_knee"):
        joint_mirror(model, indices, spec.joint_names, pose)


def _mirrored_motion(model, indices, spec, motion, start: int):
    """The motion from frame ``start`` and its mirror image through the x–z plane, both rebuilt
    the same way."""
    root = indices.root_body_id - 1
    mirror = joint_mirror(model, indices, spec.joint_names, spec.default_joint_pos)
    pos, quat = motion.body_pos_w[start:, root], motion.body_quat_w[start:, root]
    joint_pos = motion.joint_pos[start:]
    original = motion_from_trajectory(model, indices, spec.joint_names, motion.fps, pos, quat,
                                      joint_pos)
    mirrored = motion_from_trajectory(model, indices, spec.joint_names, motion.fps,
                                      pos * (1.0, -1.0, 1.0), quat * (1.0, -1.0, 1.0, -1.0),
                                      mirror.apply(joint_pos))
    return original, mirrored


@pytest.mark.parametrize("history", [{}, {"command": 2, "motion_anchor_ori_b": 3,
                                                 "base_ang_vel": 2, "joint_vel": 3}],
                         ids=["now", "with history"])
def test_the_mirror_of_an_observation_is_what_the_mirrored_robot_observes(registry, q1, history):
    spec, model, indices = q1
    original, mirrored = _mirrored_motion(model, indices, spec, load_motion(WAVE), start=75)
    task = registry.get("tasks", "tracking")
    config = task.settings({"randomization": {"enabled": False},
                            "observations": {"noise": False, "history": history},
                            "sampling": {"mode": "start"}, "log_reward_terms": False})
    envs = [task.make_env(robot=spec, motion=m, num_envs=1, seed=0, config=config,
                          registry=registry, num_threads=1) for m in (original, mirrored)]
    try:
        (obs_source, obs_sign), (act_source, act_sign) = envs[0].mirror()
        obs = [env.reset()[0] for env in envs]
        rng = np.random.default_rng(0)
        # the wave lifts one arm: a mirror that changed nothing would not pass
        assert np.abs(obs[1] - obs[0]).max() > 0.1
        for step in range(20):
            np.testing.assert_allclose(obs[0][:, obs_source] * obs_sign, obs[1], atol=1e-4,
                                       err_msg=f"step {step}")
            action = rng.uniform(-0.3, 0.3, (1, envs[0].num_actions)).astype(np.float32)
            obs = [envs[0].step(action).obs,
                   envs[1].step((action[:, act_source] * act_sign).astype(np.float32)).obs]
    finally:
        for env in envs:
            env.close()


MIRRORED_CONVENTIONS = """
<mujoco>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.15 0.2"/>
      <body name="head" pos="0.01 0.02 0.25">
        <joint name="neck_tilt" axis="0 1 0"/>  <!-- off the plane, its axis line on it -->
        <geom type="sphere" size="0.05"/>
      </body>
      <body name="arm_a" pos="0 0.2 0.1">
        <joint name="a_pitch" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.03"/>
      </body>
      <body name="arm_b" pos="0 -0.2 0.1">
        <joint name="b_pitch" axis="0 -1 0"/>  <!-- the right side's axis defined the other way -->
        <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_the_mirror_comes_from_axis_lines_whatever_the_names_and_axis_conventions():
    model = mujoco.MjModel.from_xml_string(MIRRORED_CONVENTIONS)
    indices = types.SimpleNamespace(root_qpos_adr=0, root_body_id=1, joint_ids=np.array([1, 2, 3]))
    names = ("neck_tilt", "a_pitch", "b_pitch")
    mirror = joint_mirror(model, indices, names, np.zeros(3))
    assert mirror.describe(names) == ["neck_tilt ↔ itself", "a_pitch ↔ b_pitch (angle negated)"]
