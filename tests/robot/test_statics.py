"""Gravity stiffness: the torque per radian gravity puts on what a joint carries
(robot/statics.py)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from primebot.pipeline.robot.statics import GRAVITY, gravity_stiffness, stiffness_ratios

# A torso on one leg (hip above, ankle below) with an arm held out sideways: point masses, so the
# oracle is m·g·lever by hand.
MJCF = """
<mujoco>
  <worldbody>
    <body name="torso" pos="0 0 1.0">
      <freejoint/>
      <inertial pos="0 0 0.3" mass="10" diaginertia="0.01 0.01 0.01"/>
      <body name="arm" pos="0 0.2 0.4">
        <joint name="shoulder" type="hinge" axis="1 0 0"/>
        <inertial pos="0 0.5 0" mass="2" diaginertia="0.001 0.001 0.001"/>
      </body>
      <body name="leg" pos="0 0 0">
        <joint name="hip_yaw" type="hinge" axis="0 0 1"/>
        <joint name="hip" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -0.5" mass="4" diaginertia="0.01 0.01 0.01"/>
        <body name="forearm" pos="0.1 0 -0.4">
          <joint name="wrist_twist" type="hinge" axis="0 0 1"/>
          <inertial pos="0.2 0 0" mass="0.5" diaginertia="0.001 0.001 0.001"/>
        </body>
        <body name="foot" pos="0 0 -0.9">
          <joint name="ankle" type="hinge" axis="0 1 0"/>
          <inertial pos="0 0 -0.05" mass="1" diaginertia="0.001 0.001 0.001"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def posed():
    model = mujoco.MjModel.from_xml_string(MJCF)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)
              for n in ("shoulder", "hip", "ankle")]
    joints += [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)
               for n in ("hip_yaw", "wrist_twist")]
    body = lambda name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)  # noqa: E731
    return model, data, joints, body("torso"), {body("foot")}


def test_a_free_limb_pulls_with_its_own_mass_at_its_own_lever(posed):
    model, data, joints, root, feet = posed
    shoulder = gravity_stiffness(model, data, joints, root, feet)[0]
    assert shoulder == pytest.approx(2 * GRAVITY * 0.5)


def test_a_joint_on_the_way_to_a_foot_carries_the_rest_of_the_robot_standing_on_it(posed):
    model, data, joints, root, feet = posed
    _, hip, ankle, hip_yaw, _ = gravity_stiffness(model, data, joints, root, feet)
    # the hip (z 1.0) carries torso (10 kg at z 1.3) and arm (2 kg at z 1.4): centre 1.3167 m
    above_hip = (10 * 1.3 + 2 * 1.4) / 12
    assert hip == pytest.approx(12 * GRAVITY * (above_hip - 1.0))
    # the ankle (z 0.1) carries everything but the foot: torso, arm, leg (4 kg at z 0.5), forearm
    # (0.5 kg at 0.6)
    above_ankle = (10 * 1.3 + 2 * 1.4 + 4 * 0.5 + 0.5 * 0.6) / 16.5
    assert ankle == pytest.approx(16.5 * GRAVITY * (above_ankle - 0.1))
    # gravity does not twist a vertical axis, however much the joint carries
    assert hip_yaw == pytest.approx(0.0, abs=1e-9)


def test_a_free_limb_pulls_at_its_distance_from_the_axis(posed):
    model, data, joints, root, feet = posed
    wrist_twist = gravity_stiffness(model, data, joints, root, feet)[4]
    # a vertical axis with the mass 0.2 m beside it: the lever it has once the limb turns horizontal
    assert wrist_twist == pytest.approx(0.5 * GRAVITY * 0.2)


def test_ratios_divide_the_servo_stiffness_by_the_pull(posed):
    model, data, joints, root, feet = posed
    pull = gravity_stiffness(model, data, joints, root, feet)
    ratios = stiffness_ratios(model, data, joints, 2 * pull + (pull == 0), root, feet)
    np.testing.assert_allclose(ratios[pull > 0], 2.0)
    assert np.isinf(ratios[pull == 0]).all()  # nothing to hold up: any servo will do
