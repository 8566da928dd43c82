"""The model requirements and the one gains contract, and the typed errors for a user's mistakes."""

from __future__ import annotations

import types

import numpy as np
import pytest
from meshbot import JOINTS, meshbot_spec, write_meshbot

from primebot.pipeline.deploy.onnx_policy import gain_check
from primebot.pipeline.errors import RobotError
from primebot.pipeline.robot.model import compile_mjcf, load_robot_model, robot_indices
from primebot.pipeline.robot.model_checks import robot_problems


def _meta(spec):
    return {"joint_names": list(spec.joint_names), "joint_stiffness": spec.stiffness,
            "joint_damping": spec.damping}


def _raw_actuators(model):
    return types.SimpleNamespace(actuator_ids=np.arange(model.nu))


def test_a_per_joint_array_one_short_is_a_typed_error_naming_it(tmp_path):
    with pytest.raises(RobotError) as err:
        meshbot_spec(write_meshbot(tmp_path), stiffness=np.full(3, 30.0))
    assert "stiffness has 3 value(s) for 4 joint(s)" in str(err.value)
    assert "one finite value per joint" in err.value.fix


def test_a_spec_missing_a_field_is_a_typed_error_naming_it(tmp_path):
    with pytest.raises(RobotError) as err:
        meshbot_spec(write_meshbot(tmp_path), feet=None)
    assert "missing field(s): feet" in str(err.value) and "robots new" in err.value.fix


def test_position_servos_must_carry_the_spec_gains(tmp_path):
    spec = meshbot_spec(write_meshbot(tmp_path))
    load_robot_model(spec)  # kp 30, kv 1.5, forcerange 20: equal to the spec
    wrong = meshbot_spec(spec.mjcf, stiffness=np.full(4, 40.18))
    with pytest.raises(RobotError) as err:
        load_robot_model(wrong)
    message = str(err.value)
    assert "actuator gains differ from the spec's" in message and "MJCF kp=30 kv=1.5" in message
    assert "<motor>" in message and "robots check meshbot" in message
    raw = compile_mjcf(spec.mjcf)
    check = gain_check(raw, _raw_actuators(raw), _meta(wrong))
    assert not check["ok"] and "metadata kp=40.18" in check["detail"]
    check = gain_check(raw, _raw_actuators(raw), _meta(spec))
    assert check["ok"] and "4 position servo(s)" in check["detail"]


def test_motor_actuators_take_the_spec_gains_and_sim2sim_says_it_compared_nothing(tmp_path):
    spec = meshbot_spec(write_meshbot(tmp_path, actuators="motor"))
    model = load_robot_model(spec)  # training drives the motors as the spec's PD servos
    ix = robot_indices(model, spec)
    np.testing.assert_allclose(model.actuator_gainprm[ix.actuator_ids, 0], spec.stiffness)
    np.testing.assert_allclose(-model.actuator_biasprm[ix.actuator_ids, 2], spec.damping)
    raw = compile_mjcf(spec.mjcf)
    check = gain_check(raw, _raw_actuators(raw), _meta(spec))
    assert check["ok"] and "are motors: no gains in the MJCF to compare" in check["detail"]
    assert "equal" not in check["detail"]


def test_force_limits_armature_keyframe_and_floor_are_model_requirements(tmp_path):
    spec = meshbot_spec(write_meshbot(tmp_path, floor=False, keyframe=False, armature=0.02),
                        effort_limit=np.full(4, 25.0),
                        extra={"keyframe": "stand", "armature": np.full(4, 0.01)})
    problems = robot_problems(compile_mjcf(spec.mjcf), spec)
    text = "\n".join(problems)
    assert "force limits differ" in text and "forcerange ±20, spec effort 25" in text
    assert "joint armature differs" in text and "spec 0.01, MJCF 0.02" in text
    assert "keyframe 'stand' (extra['keyframe']) is not in the model (keyframes: none)" in text
    assert "no floor" in text
    assert all(p.fix for p in problems)


def test_a_joint_name_typo_gets_a_did_you_mean_not_a_circular_fix(tmp_path):
    spec = meshbot_spec(write_meshbot(tmp_path), joint_names=("left_hip_jiont", *JOINTS[1:]))
    with pytest.raises(RobotError) as err:
        load_robot_model(spec)
    message = str(err.value)
    assert "did you mean 'left_hip_jiont' → 'left_hip_joint'?" in message
    assert "robots show" not in message


def test_a_missing_model_file_names_the_robot_and_package_data(tmp_path):
    spec = meshbot_spec(tmp_path / "nowhere" / "robot.xml")
    with pytest.raises(RobotError) as err:
        load_robot_model(spec)
    assert "robot 'meshbot'" in str(err.value) and "package data" in err.value.fix
    assert "Q1_XML" not in str(err.value)
