"""biped4: the planar biped model, its spec, its sign conventions and its standing pose."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.describe import describe_robot
from primebot.pipeline.robot.model import load_robot_model, robot_indices
from primebot.pipeline.robot.model_checks import robot_problems
from primebot.plugins.robots.biped4.spec import BIPED4_MJCF, JOINT_NAMES, ROOT_JOINTS, biped4_spec


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(BIPED4_MJCF))


def _stand(model: mujoco.MjModel, **joints: float) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    for name, value in joints.items():
        data.joint(name).qpos[0] = value
    mujoco.mj_kinematics(model, data)
    return data


def test_biped4_is_registered_through_the_robots_hook():
    host = load_plugins(environ={})
    assert host.registry.get("robots", "biped4").joint_names == JOINT_NAMES
    assert host.registry.registration("robots", "biped4").plugin == "robots.biped4"


def test_base_is_planar_slide_x_slide_z_hinge_pitch_and_no_free_joint(model):
    kinds = {model.joint(n).name: (int(model.joint(n).type[0]), tuple(model.joint(n).axis))
             for n in ROOT_JOINTS}
    slide, hinge = int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_HINGE)
    assert kinds == {"rootx": (slide, (1, 0, 0)), "rootz": (slide, (0, 0, 1)),
                     "rooty": (hinge, (0, 1, 0))}
    assert mujoco.mjtJoint.mjJNT_FREE not in model.jnt_type
    assert model.nq == model.nv == 7


def test_four_actuated_hinges_in_policy_order_with_the_spec_gains(model):
    spec = biped4_spec()
    assert [model.actuator(a).name for a in range(model.nu)] == list(JOINT_NAMES)
    for a, joint in enumerate(JOINT_NAMES):
        assert model.actuator_trnid[a, 0] == model.joint(joint).id
        kp = model.actuator_gainprm[a, 0]
        assert kp == spec.stiffness[a]
        np.testing.assert_array_equal(model.actuator_biasprm[a, :3], [0.0, -kp, -spec.damping[a]])
        np.testing.assert_array_equal(model.actuator_forcerange[a],
                                      [-spec.effort_limit[a], spec.effort_limit[a]])
    np.testing.assert_array_equal(model.key("stand").ctrl, spec.default_joint_pos)


def test_every_spec_body_exists_and_legs_never_collide_with_each_other(model):
    spec = biped4_spec()
    for body in {spec.anchor_body, *spec.tracked_bodies, *spec.feet}:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) >= 0, body
    robot = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0]
    for a in robot:
        for b in robot:
            assert not (model.geom_contype[a] & model.geom_conaffinity[b]), (model.geom(a).name,
                                                                             model.geom(b).name)


def test_positive_hip_swings_the_foot_forward_and_positive_knee_lifts_it(model):
    rest = _stand(model).body("left_foot").xpos.copy()
    hip = _stand(model, left_hip=0.35 + 0.3).body("left_foot").xpos
    knee = _stand(model, left_knee=0.7 + 0.3).body("left_foot").xpos
    assert hip[0] > rest[0] + 0.05
    assert knee[2] > rest[2] + 0.02 and knee[0] < rest[0]


def test_positive_pitch_leans_the_torso_forward(model):
    head = _stand(model, rooty=0.2).body("torso").xmat.reshape(3, 3) @ [0, 0, 0.3]
    assert head[0] > 0.05


def test_standing_pose_puts_both_feet_on_the_floor_under_the_hips(model):
    data = _stand(model)
    for foot in ("left_foot", "right_foot"):
        geom = model.geom(foot).id
        half, radius = model.geom_size[geom][1], model.geom_size[geom][0]
        axis = data.geom_xmat[geom].reshape(3, 3)[:, 2]
        lowest = min(data.geom_xpos[geom][2] + s * half * axis[2] for s in (-1, 1)) - radius
        assert 0.0 <= lowest < 0.005
        assert abs(data.body(foot).xpos[0]) < 1e-9


def test_holding_the_standing_pose_keeps_the_biped_upright_for_two_seconds(model):
    data = _stand(model)
    data.ctrl[:] = model.key("stand").ctrl
    start = data.body("torso").xpos.copy()
    for _ in range(400):
        mujoco.mj_step(model, data)
    assert abs(data.joint("rooty").qpos[0]) < 0.05
    assert abs(data.body("torso").xpos[2] - start[2]) < 0.03
    assert abs(data.body("torso").xpos[0] - start[0]) < 0.05


def test_core_robot_checks_accept_the_planar_base_declared_in_the_spec():
    spec = biped4_spec()
    model = load_robot_model(spec)
    ix = robot_indices(model, spec)
    assert ix.root_qpos_adr == model.joint("rootx").qposadr[0] == 0
    assert [model.joint(int(j)).name for j in ix.joint_ids] == list(JOINT_NAMES)
    assert describe_robot(spec, model)["mass"] == pytest.approx(7.1)


def test_a_model_missing_a_base_joint_is_refused_by_name():
    spec = biped4_spec()
    model = mujoco.MjModel.from_xml_string(BIPED4_MJCF.read_text().replace('name="rootz"',
                                                                           'name="lift"'))
    problems = robot_problems(model, spec)
    assert any("rootz" in p for p in problems) and any("lift" in p for p in problems)
