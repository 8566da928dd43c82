"""The bundled q1 robot: its MJCF agrees with its spec, stands, simulates fast-friendly, and is
swappable."""

from __future__ import annotations

import itertools
import shutil

import mujoco
import numpy as np
import pytest

from primebot.pipeline.errors import RobotError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.kinematics import standing_height
from primebot.pipeline.robot.model import compile_mjcf, load_robot_model, robot_indices
from primebot.pipeline.robot.servo_gains import STANCE_STIFFNESS_SAFETY
from primebot.pipeline.robot.statics import stiffness_ratios
from primebot.plugins.robots.q1.spec import Q1_MJCF


def test_q1_is_registered_through_the_robots_hook(clean_env):
    host = load_plugins()
    assert host.registry.registration("robots", "q1").plugin == "robots.q1"
    spec = host.registry.get("robots", "q1")
    assert spec.num_joints == 22
    assert 5 * spec.num_joints + 9 == 119  # the tracking observation size this robot gives


def test_joint_names_follow_the_sdk_style(spec):
    sides = ("left", "right")
    legs = [
        f"{s}_{j}_joint"
        for s in sides
        for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
    ]
    assert list(spec.joint_names[:12]) == legs
    assert spec.joint_names[12:14] == ("waist_yaw_joint", "waist_pitch_joint")
    assert all(name.endswith("_joint") for name in spec.joint_names)


def test_mjcf_constants_agree_with_the_spec(spec):
    raw = compile_mjcf(spec.mjcf)  # as written in the file, before the spec's gains are applied
    ix = robot_indices(raw, spec)
    np.testing.assert_allclose(raw.actuator_gainprm[ix.actuator_ids, 0], spec.stiffness, rtol=1e-4)
    np.testing.assert_allclose(-raw.actuator_biasprm[ix.actuator_ids, 1], spec.stiffness, rtol=1e-4)
    np.testing.assert_allclose(-raw.actuator_biasprm[ix.actuator_ids, 2], spec.damping, rtol=1e-4)
    np.testing.assert_allclose(raw.actuator_forcerange[ix.actuator_ids, 1], spec.effort_limit)
    np.testing.assert_allclose(raw.dof_armature[ix.dof_adr], spec.extra["armature"])
    key = mujoco.mj_name2id(raw, mujoco.mjtObj.mjOBJ_KEY, "stand")
    np.testing.assert_allclose(raw.key_qpos[key][ix.qpos_adr], spec.default_joint_pos)
    np.testing.assert_allclose(raw.key_ctrl[key][ix.actuator_ids], spec.default_joint_pos)
    lo, hi = ix.joint_range.T
    assert np.all((lo <= spec.default_joint_pos) & (spec.default_joint_pos <= hi))


def test_gains_follow_the_mjlab_rule_and_action_scale_is_a_quarter_effort_over_kp(spec):
    omega = 2 * np.pi * 10.0  # 10 Hz natural frequency, damping ratio 2
    armature = spec.extra["armature"]
    np.testing.assert_allclose(spec.stiffness, armature * omega**2)
    np.testing.assert_allclose(spec.damping, 2 * 2.0 * armature * omega)
    np.testing.assert_allclose(spec.action_scale, 0.25 * spec.effort_limit / spec.stiffness)
    knee = spec.joint_names.index("left_knee_joint")
    assert spec.stiffness[knee] == pytest.approx(0.033 * 3947.8417604, rel=1e-6)


def test_size_and_mass_are_q1_class(model):
    assert 15.0 < model.body_subtreemass[1] < 17.5
    assert 0.85 < standing_height(model, "stand") < 0.91


def test_simulation_settings_keep_stepping_cheap(model):
    assert model.opt.timestep == pytest.approx(0.005)
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.nmesh == 0
    primitives = {mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_SPHERE,
                  mujoco.mjtGeom.mjGEOM_CAPSULE,
                  mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_CYLINDER}  # fmt: skip
    assert set(model.geom_type.tolist()) <= {int(p) for p in primitives}


def test_stands_for_three_seconds_with_ctrl_at_the_default_pose(model, spec):
    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(
        model, data, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "stand")
    )
    mujoco.mj_forward(model, data)
    start = data.xpos[ix.anchor_body_id].copy()
    for _ in range(600):
        mujoco.mj_step(model, data)
    end = data.xpos[ix.anchor_body_id]
    assert abs(end[2] - start[2]) < 0.03
    assert np.linalg.norm(end[:2] - start[:2]) < 0.1
    assert np.abs(data.qvel).max() < 0.05  # at rest, not falling slowly
    assert data.xmat[ix.anchor_body_id].reshape(3, 3)[2, 2] > 0.98  # torso upright


def test_every_servo_holds_the_robot_on_one_foot_by_the_scaffolds_rule(model, spec):
    """Each leg servo carries the whole robot standing on it (single support in a march or a kick):
    at least 1.5 x gravity's torque per radian, the rule ``robots new`` sizes a new robot's servos
    by."""
    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data,
                                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "stand"))
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    ratios = stiffness_ratios(model, data, list(ix.joint_ids),
                              np.asarray(spec.stiffness, dtype=float),
                              ix.root_body_id, set(ix.feet_body_ids.tolist()))
    softest = int(np.argmin(ratios))
    assert ratios[softest] >= STANCE_STIFFNESS_SAFETY, spec.joint_names[softest]


def _can_collide(model: mujoco.MjModel, a: int, b: int) -> bool:
    """MuJoCo's contype/conaffinity rule plus its parent-child filter (oracle for the spec's
    pairs)."""
    if not (
        (model.geom_contype[a] & model.geom_conaffinity[b])
        or (model.geom_contype[b] & model.geom_conaffinity[a])
    ):
        return False
    ba, bb = model.geom_bodyid[a], model.geom_bodyid[b]
    if ba == bb:
        return False
    if 0 in (ba, bb):  # the world is never filtered as a parent
        return True
    return model.body_parentid[ba] != bb and model.body_parentid[bb] != ba


def test_self_collision_pairs_are_exactly_the_robot_pairs_that_can_touch(model, spec):
    robot = [g for g in range(model.ngeom) if model.geom_bodyid[g] > 0]
    possible = {
        frozenset(
            (
                mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, a),
                mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, b),
            )
        )
        for a, b in itertools.combinations(robot, 2)
        if _can_collide(model, a, b)
    }
    assert possible == {frozenset(pair) for pair in spec.self_collision_geoms}


def test_every_collision_geom_touches_the_floor(model):
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    colliding = [
        g
        for g in range(model.ngeom)
        if model.geom_bodyid[g] > 0 and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]
    names = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) for g in colliding}
    assert {
        "left_foot",
        "right_foot",
        "left_shin",
        "torso",
        "pelvis",
        "head",
        "left_hand",
        "right_forearm",
    } <= names
    assert all(_can_collide(model, g, floor) for g in colliding)


def test_the_standing_pose_has_no_self_contact(model):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    pairs = {(int(c.geom1), int(c.geom2)) for c in data.contact[: data.ncon]}
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    assert all(floor in pair for pair in pairs)


def test_q1_xml_swaps_the_model_at_a_non_ascii_path(tmp_path, clean_env):
    swapped = tmp_path / "机器人" / "q1 副本.xml"
    swapped.parent.mkdir()
    shutil.copy(Q1_MJCF, swapped)
    clean_env.setenv("Q1_XML", str(swapped))
    spec = load_plugins().registry.get("robots", "q1")
    assert spec.mjcf == swapped
    assert load_robot_model(spec).nu == 22


def test_a_mismatched_model_lists_every_missing_joint_body_and_actuator(tmp_path, spec):
    xml = Q1_MJCF.read_text(encoding="utf-8")
    xml = xml.replace(
        'name="left_knee_joint"', 'name="left_knee"', 1
    )  # renamed joint (actuator now points at it too)
    xml = xml.replace('<body name="right_hand_link"', '<body name="right_palm"', 1)
    xml = xml.replace(
        '<position name="waist_yaw" joint="waist_yaw_joint"',
        '<position name="waist_yaw" joint="waist_pitch_joint"',
        1,
    )
    xml = xml.replace('joint="left_knee_joint"', 'joint="left_knee"')
    bad = tmp_path / "bad.xml"
    bad.write_text(xml, encoding="utf-8")
    from primebot.pipeline.robot.spec import with_mjcf

    with pytest.raises(RobotError) as err:
        load_robot_model(with_mjcf(spec, bad))
    message = str(err.value)
    assert "missing joint(s): left_knee_joint" in message
    assert "joint(s) not in the spec: left_knee" in message
    assert "missing body(ies): right_hand_link" in message
    assert "joint(s) without an actuator: waist_yaw_joint" in message
    assert "more than one actuator: waist_pitch_joint" in message
    assert "did you mean 'left_knee_joint' → 'left_knee'?" in message
    assert "robots check q1" in message and "robots show" not in message  # not circular


def test_a_missing_model_file_names_the_path(tmp_path, spec):
    from primebot.pipeline.robot.spec import with_mjcf

    with pytest.raises(RobotError, match="does not exist"):
        load_robot_model(with_mjcf(spec, tmp_path / "nope.xml"))


def test_spec_gains_are_applied_to_a_swapped_model_with_other_gains(tmp_path, spec):
    xml = Q1_MJCF.read_text(encoding="utf-8").replace('kp="86.9', 'kp="500.9')
    other = tmp_path / "stiff.xml"
    other.write_text(xml, encoding="utf-8")
    from primebot.pipeline.robot.spec import with_mjcf

    model = load_robot_model(with_mjcf(spec, other))
    ix = robot_indices(model, spec)
    np.testing.assert_allclose(model.actuator_gainprm[ix.actuator_ids, 0], spec.stiffness)


def test_indices_put_policy_order_joints_after_the_free_joint(model, spec):
    ix = robot_indices(model, spec)
    assert ix.root_qpos_adr == 0 and ix.root_dof_adr == 0
    assert list(ix.qpos_adr) == list(range(7, 29))
    assert len(ix.body_names) == model.nbody - 1 and ix.body_names[0] == "pelvis"
    assert ix.anchor_body_id == mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso_link")
    assert 10 <= len(ix.tracked_body_ids) <= 14
