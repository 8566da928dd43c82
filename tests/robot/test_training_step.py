"""The physics step a robot trains at (robot/training_step.py), on real MuJoCo with q1."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.checks import check_robot
from primebot.pipeline.robot.model import apply_spec_actuators, robot_indices
from primebot.pipeline.robot.training_step import (
    KICK_LEVEL,
    choose_training_step,
    kick_both_steps,
    kick_velocities,
)


@pytest.fixture(scope="module")
def q1():
    return load_plugins().registry.get("robots", "q1")


def standing(spec, model: mujoco.MjModel):
    """(the model with the spec's servos, its keyframe state holding the pose, anchor, root)."""
    ix = robot_indices(model, spec, check=False)
    apply_spec_actuators(model, spec, ix)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    data.ctrl[ix.actuator_ids] = spec.default_joint_pos
    mujoco.mj_forward(model, data)
    return model, data, ix.anchor_body_id, ix.root_body_id


def test_q1_moves_at_10_ms_as_at_5_and_the_rule_picks_the_step_q1_trains_at(q1):
    model, data, anchor, root = standing(q1, mujoco.MjModel.from_xml_path(str(q1.mjcf)))
    kicks = kick_both_steps(model, data, anchor, root, 0.01)
    assert [k.side for k in kicks] == ["forward", "left", "backward", "right"]
    assert all(not (k.fell_fine or k.fell_coarse or k.diverged_coarse) for k in kicks)
    assert max(k.gap for k in kicks) < 0.002  # m
    overrides, note = choose_training_step(model, data, anchor, root)
    # the rule's choice is q1's own, which training measured (docs/tasks.md, 100 Hz physics)
    assert overrides == q1.training_overrides == ("task.physics_dt=0.01", "task.decimation=2")
    assert note.startswith("10 ms physics") and "forward 0.0" in note
    assert model.opt.timestep == 0.005  # the model is left at its own step


def test_a_joint_spring_too_stiff_for_10_ms_keeps_the_model_step(q1):
    # a series-elastic ankle: MuJoCo's implicitfast integrator takes a passive joint spring
    # explicitly, so a stiff one is stable at 5 ms and diverges at 10 ms
    spec = mujoco.MjSpec.from_file(str(q1.mjcf))
    pose = dict(zip(q1.joint_names, q1.default_joint_pos, strict=True))
    for joint in spec.joints:
        if "ankle_pitch" in joint.name:
            joint.stiffness = [10000.0, 0.0, 0.0]  # N·m/rad
            joint.springref = float(pose[joint.name])
    model, data, anchor, root = standing(q1, spec.compile())
    overrides, note = choose_training_step(model, data, anchor, root)
    assert overrides == ()
    assert note.startswith("the model's 5 ms") and "diverges at 10 ms" in note


def test_a_step_whose_double_does_not_divide_the_control_step_is_kept(q1):
    model = mujoco.MjModel.from_xml_path(str(q1.mjcf))
    model.opt.timestep = 0.004  # 8 ms would run the policy every 16 or 24 ms
    model, data, anchor, root = standing(q1, model)
    overrides, note = choose_training_step(model, data, anchor, root)
    assert overrides == () and "does not divide the 20 ms control step" in note


def test_the_kicks_are_sized_to_the_robot_and_pointed_from_its_heading(q1):
    model = mujoco.MjModel.from_xml_path(str(q1.mjcf))
    model, data, _, root = standing(q1, model)
    yaw = math.radians(90.0)  # the robot turned to face world +y
    data.qpos[3:7] = [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
    mujoco.mj_forward(model, data)
    kicks = kick_velocities(data, root)
    speed = KICK_LEVEL * math.sqrt(9.81 * data.xpos[root, 2])
    assert 0.06 < speed < 0.07  # m/s, for q1's 0.50 m pelvis
    np.testing.assert_allclose(kicks["forward"], [0.0, speed], atol=1e-9)
    np.testing.assert_allclose(kicks["left"], [-speed, 0.0], atol=1e-9)
    np.testing.assert_allclose(kicks["backward"], [0.0, -speed], atol=1e-9)


def test_robots_check_reports_the_step_q1_trains_at_and_offers_it_to_a_robot_without(q1):
    findings = {f.check: f for f in check_robot(q1)}
    assert findings["training_step"].status == "ok"
    assert findings["training_step"].detail.startswith("trains at 10 ms physics")
    plain = dataclasses.replace(q1, training_overrides=())
    finding = {f.check: f for f in check_robot(plain)}["training_step"]
    assert finding.status == "info" and "would train faster" in finding.detail
    assert "task.physics_dt=0.01" in finding.detail
