"""The person beside the robot: a retarget's side-by-side video (``primebot motion retarget
--video``).

Each frame poses the robot from the retargeted motion (``motion.replay``'s renderer) and draws the
person's skeleton, scaled to the robot's size as the IK saw it, as orange capsules one robot height
to the robot's right, so that one look shows whether the robot does what the person does. The bones
join the skeleton's roles (pelvis, spine, chest, neck, head; hip, knee, ankle, toe; shoulder, elbow,
wrist). Torch-free, headless like every video (docs/motions.md, "Replay video").
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from ..motion.format import Motion
from ..motion.replay import MotionRenderer, write_video
from ..robot.camera import CameraConfig
from ..robot.kinematics import set_qpos
from ..robot.model import load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from ..rotations import quat_normalize

BONES = (
    ("pelvis", "spine"), ("spine", "chest"), ("chest", "neck"), ("neck", "head"),
    *((f"{s}_{a}", f"{s}_{b}") for s in ("left", "right")
      for a, b in (("hip", "knee"), ("knee", "ankle"), ("ankle", "toe"), ("shoulder", "elbow"),
                   ("elbow", "wrist"))),
    ("pelvis", "left_hip"), ("pelvis", "right_hip"), ("chest", "left_shoulder"),
    ("chest", "right_shoulder"),
)  # fmt: skip
BONE_RGBA = (0.85, 0.55, 0.25, 1.0)
BONE_WIDTH_PER_HEIGHT = 0.02


def bones(names: tuple[str, ...], roles: dict[str, str]) -> list[tuple[int, int]]:
    """Index pairs of the joints each bone joins, for the roles the skeleton has."""
    index = {role: names.index(joint) for role, joint in roles.items() if joint in names}
    return [(index[a], index[b]) for a, b in BONES if a in index and b in index]


def _add_bones(scene: mujoco.MjvScene, points: np.ndarray, pairs: list[tuple[int, int]],
               width: float) -> None:
    for a, b in pairs:
        if scene.ngeom >= scene.maxgeom:
            return
        geom = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3),
                            np.eye(3).ravel(),
                            np.array(BONE_RGBA, dtype=np.float32))
        mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, width, points[a], points[b])
        scene.ngeom += 1


def side_by_side_frames(renderer: MotionRenderer, motion: Motion, skeleton: np.ndarray,
                        pairs: list[tuple[int, int]],
                        camera: CameraConfig):
    """One RGB frame per motion frame: the robot, and the person's ``skeleton`` [T, J, 3] beside
    it."""
    model, data, cam = renderer.model, renderer.data, renderer.camera
    height = camera.height / 0.51
    beside = np.array([0.0, -height, 0.0])
    root = renderer.indices.root_body_id - 1
    root_quat = quat_normalize(motion.body_quat_w[:, root])
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.distance, cam.azimuth, cam.elevation = (
        1.3 * camera.distance,
        camera.azimuth,
        camera.elevation,
    )
    lookat = None
    for t in range(motion.num_frames):
        set_qpos(data.qpos, renderer.indices, motion.body_pos_w[t, root], root_quat[t],
                 motion.joint_pos[t])
        mujoco.mj_forward(model, data)
        middle = motion.body_pos_w[t, root, :2] + 0.5 * beside[:2]
        if lookat is None:
            lookat = np.array([*middle, camera.height])
        lookat[:2] += camera.smoothing * (middle - lookat[:2])
        cam.lookat[:] = lookat
        mujoco.mjv_updateScene(model, data, renderer.option, None, cam, mujoco.mjtCatBit.mjCAT_ALL,
                               renderer.scene)
        _add_bones(renderer.scene, skeleton[t] + beside, pairs, BONE_WIDTH_PER_HEIGHT * height)
        mujoco.mjr_render(renderer.viewport, renderer.scene, renderer.context)
        mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_BOTTOMLEFT,
                           renderer.viewport,
                           f"orange: the person (scaled)   t = {t / motion.fps:5.2f} s", "",
                           renderer.context)
        mujoco.mjr_readPixels(renderer.pixels, None, renderer.viewport, renderer.context)
        yield np.flipud(renderer.pixels)


def side_by_side_video(motion: Motion, spec: RobotSpec, skeleton: np.ndarray,
                       pairs: list[tuple[int, int]],
                       output: str | Path, *, width: int = 960, height: int = 480) -> Path:
    """Write the side-by-side H.264 video of a retarget (raises ``RenderError`` without OpenGL)."""
    model = load_robot_model(spec)
    renderer = MotionRenderer(model, robot_indices(model, spec), width, height)
    try:
        write_video(side_by_side_frames(renderer, motion, skeleton, pairs,
                                        CameraConfig().framed(model)),
                    output, motion.fps, (width, height))
    finally:
        renderer.close()
    return Path(output)
