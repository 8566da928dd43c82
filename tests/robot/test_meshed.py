"""Floor contact and height of a meshed robot come from its collision geometry, with real mesh
extents."""

from __future__ import annotations

import mujoco
import numpy as np
from meshbot import STAND_Z, meshbot_spec, write_meshbot

from primebot.pipeline.motion.trajectory import motion_from_trajectory
from primebot.pipeline.motion.validate import validate_motion
from primebot.pipeline.robot.kinematics import (
    geom_vertical_extent,
    lowest_point,
    robot_geoms,
    standing_height,
)
from primebot.pipeline.robot.model import load_robot_model, robot_indices


def _stand(model, keyframe="stand"):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data,
                                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, keyframe))
    mujoco.mj_kinematics(model, data)
    return data


def test_visual_meshes_do_not_count_and_colliding_meshes_count_by_their_vertices(tmp_path):
    model = mujoco.MjModel.from_xml_path(str(write_meshbot(tmp_path)))
    mask = robot_geoms(model)
    shell = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "shell")
    foot = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "left_foot")
    assert not mask[shell] and mask[foot]
    data = _stand(model)
    low, high = geom_vertical_extent(model, data)
    # the foot box's underside is on the floor; its bounding sphere would reach 7 cm lower
    assert abs(low[foot]) < 1e-6 and abs(high[foot] - 0.04) < 1e-6
    assert data.geom_xpos[foot, 2] - model.geom_rbound[foot] < -0.05
    # the visual shell hangs 0.3 m below the feet: it is not the robot's lowest point
    assert low[shell] < -0.3 and abs(low[mask].min()) < 1e-6
    # height: head top (pelvis + 0.2 + 0.35 + 0.06) minus the floor
    assert abs(standing_height(model, "stand") - (STAND_Z + 0.61)) < 1e-6


def test_tilted_mesh_extent_equals_its_transformed_vertices(tmp_path):
    model = mujoco.MjModel.from_xml_path(str(write_meshbot(tmp_path)))
    data = mujoco.MjData(model)
    quat = np.array([0.9, 0.2, 0.3, 0.1])
    data.qpos[3:7] = quat / np.linalg.norm(quat)
    data.qpos[7:] = (0.3, 0.5, -0.2, 1.0)
    mujoco.mj_kinematics(model, data)
    low, high = geom_vertical_extent(model, data)
    for name in ("left_foot", "right_foot"):
        g = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
        mesh = model.geom_dataid[g]
        verts = model.mesh_vert[model.mesh_vertadr[mesh] : model.mesh_vertadr[mesh]
                                + model.mesh_vertnum[mesh]]
        # mesh_vert is relative to the mesh's own frame: check it against the STL's corners
        assert np.allclose(np.sort(np.abs(verts).max(axis=0)), sorted((0.08, 0.04, 0.02)),
                           atol=1e-6)
        world = verts @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
        assert np.isclose(low[g], world[:, 2].min()) and np.isclose(high[g], world[:, 2].max())


def test_a_grounded_motion_of_a_meshed_robot_passes_the_floor_rule(tmp_path):
    spec = meshbot_spec(write_meshbot(tmp_path))
    model = load_robot_model(spec)
    ix = robot_indices(model, spec)
    frames = 20
    root_pos = np.tile([0.0, 0.0, STAND_Z], (frames, 1))
    root_quat = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1))
    joint_pos = np.zeros((frames, 4))
    assert np.allclose(lowest_point(model, ix, root_pos, root_quat, joint_pos), 0.0, atol=1e-6)
    motion = motion_from_trajectory(model, ix, spec.joint_names, 50.0, root_pos, root_quat,
                                    joint_pos)
    report = validate_motion(motion, spec, model)
    assert not [p for p in report.problems if p.check == "floor"], report.problems


def test_the_video_camera_is_framed_from_the_robot_height(tmp_path, model):
    from primebot.pipeline.motion.replay import CameraConfig

    q1 = CameraConfig().framed(model)  # 0.88 m: the distance and look-at height q1 always had
    assert abs(q1.distance - 2.2) < 0.02 and abs(q1.height - 0.45) < 0.01
    tall = CameraConfig(shadows=True).framed(
        mujoco.MjModel.from_xml_path(str(write_meshbot(tmp_path)))
    )
    assert np.isclose(tall.distance, 2.5 * (STAND_Z + 0.61)) and tall.shadows
    # explicit values stay
    assert CameraConfig(distance=4.0, height=1.0).framed(model).distance == 4.0
