"""Videos of a policy with its reference drawn through it as a translucent ghost (eval and sim2sim).

Reuses the replay renderer (``motion.replay``: offscreen GL context, scene,
camera settings, H.264 writer); each frame renders the robot's state, then
adds the reference pose's robot geoms (``mjCAT_DYNAMIC``: not the floor; its
collision geoms when its visual meshes are heavy, ``ghost_option``) to the
same scene with a translucent colour. Without a reference (a task that
tracks no motion, e.g. walk) it renders the robot alone, optionally through
a camera of the MJCF (biped4's ``side`` camera follows the walker's centre
of mass). Torch-free, so sim2sim can use it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np

from ..errors import RenderError
from ..motion.replay import MULTISAMPLE, MotionRenderer, write_video
from ..robot.camera import CameraConfig
from ..robot.contacts import collision_geoms
from ..robot.kinematics import set_qpos

log = logging.getLogger(__name__)

GHOST_RGBA = (0.2, 0.75, 1.0, 0.35)
"""The reference: light blue, mostly transparent."""

LIGHT_GHOST_TRIANGLES = 100_000
"""Above this many mesh triangles in the robot's visible geoms the ghost is drawn from its collision
geoms (``ghost_option``). On software OpenGL a frame's cost is its triangles: the Apptronik Apollo's
visual meshes (1.4 million triangles) drawn twice made its ghost videos the slowest part of its
evaluate, sim2sim and stress stages (tools/bench_render.py)."""


def _mesh_triangles(model: mujoco.MjModel, geoms: np.ndarray) -> int:
    meshes = geoms[model.geom_type[geoms] == mujoco.mjtGeom.mjGEOM_MESH]
    return int(model.mesh_facenum[model.geom_dataid[meshes]].sum())


def ghost_option(model: mujoco.MjModel, option: mujoco.MjvOption) -> mujoco.MjvOption:
    """The visualisation option the ghost is drawn with: ``option`` itself, or, when the robot's
    visible meshes exceed ``LIGHT_GHOST_TRIANGLES`` and its collision geoms (contact bits or an
    explicit pair) sit in geom groups at least four times lighter, one that shows only those groups.
    The ghost then has the robot's collision shape (capsules and boxes on the Menagerie humanoids),
    enough to see where the reference is, at a third of the frame's cost on the Apollo."""
    dynamic = np.flatnonzero(model.geom_bodyid != 0)  # the robot's geoms, not the world's
    groups_shown = np.flatnonzero(np.asarray(option.geomgroup))  # MuJoCo draws groups 0-5 only
    visible = dynamic[np.isin(model.geom_group[dynamic], groups_shown)]
    heavy = _mesh_triangles(model, visible)
    if heavy <= LIGHT_GHOST_TRIANGLES:
        return option
    colliding = dynamic[collision_geoms(model)[dynamic]]
    groups = sorted({int(group) for group in model.geom_group[colliding] if 0 <= group <= 5})
    if not groups:
        return option
    shown = dynamic[np.isin(model.geom_group[dynamic], groups)]
    if 4 * _mesh_triangles(model, shown) > heavy:
        return option
    light = mujoco.MjvOption()
    light.geomgroup[:] = 0
    light.geomgroup[groups] = 1
    return light


def _fixed_camera(model: mujoco.MjModel, name: str) -> int:
    camera_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
    if camera_id < 0:
        cameras = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, c)
                   for c in range(model.ncam)]
        raise RenderError(f"the model has no camera {name!r} (it has: "
                          f"{', '.join(map(str, cameras)) or 'none'})",
                          fix="name a <camera> of the MJCF in the robot's extra['video_camera']")
    return camera_id


def _ghost_frames(renderer: MotionRenderer, robot_qpos: Sequence[np.ndarray],
                  ghost_qpos: Sequence[np.ndarray] | None, root_body: int, fps: float, title: str,
                  camera: CameraConfig, camera_name: str | None = None,
                  light_ghost: bool = True):
    model = renderer.model
    ghost = mujoco.MjData(model)
    ghost_view = ghost_option(model, renderer.option) if light_ghost else renderer.option
    # a light ghost says so on a line of its own (one line would not fit a stress video's title)
    ghost_note = ("(ghost: reference)" if ghost_view is renderer.option
                  else "(ghost: reference)\nghost drawn from the collision shapes")
    perturb = mujoco.MjvPerturb()
    cam = renderer.camera
    if camera_name is not None:
        cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = _fixed_camera(model, camera_name)
    else:
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.distance, cam.azimuth, cam.elevation = camera.distance, camera.azimuth, camera.elevation
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = camera.shadows
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = camera.shadows
    lookat = None
    ghosts = ghost_qpos if ghost_qpos is not None else [None] * len(robot_qpos)
    for k, (qpos, ref_qpos) in enumerate(zip(robot_qpos, ghosts, strict=True)):
        renderer.data.qpos[:] = qpos
        mujoco.mj_forward(model, renderer.data)
        root = renderer.data.xpos[root_body]
        if lookat is None:
            lookat = np.array([root[0], root[1], camera.height])
        lookat[:2] += camera.smoothing * (root[:2] - lookat[:2])
        cam.lookat[:] = lookat
        mujoco.mjv_updateScene(model, renderer.data, renderer.option, None, cam,
                               mujoco.mjtCatBit.mjCAT_ALL,
                               renderer.scene)
        if ref_qpos is not None:
            ghost.qpos[:] = ref_qpos
            mujoco.mj_kinematics(model, ghost)
            first = renderer.scene.ngeom
            mujoco.mjv_addGeoms(model, ghost, ghost_view, perturb,
                                mujoco.mjtCatBit.mjCAT_DYNAMIC,
                                renderer.scene)
            for g in range(first, renderer.scene.ngeom):
                renderer.scene.geoms[g].rgba[:] = GHOST_RGBA
        mujoco.mjr_render(renderer.viewport, renderer.scene, renderer.context)
        # without a reference, the distance covered is what a gait video is watched for
        note = ghost_note if ref_qpos is not None else f"x = {root[0]:6.2f} m"
        label = f"{title}   t = {k / fps:5.2f} s   {note}"
        mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_BOTTOMLEFT,
                           renderer.viewport,
                           label, "", renderer.context)
        mujoco.mjr_readPixels(renderer.pixels, None, renderer.viewport, renderer.context)
        yield np.flipud(renderer.pixels)


def reference_ghosts(frames: Sequence[np.ndarray], steps: Sequence[int], indices,
                     root_pos_w: np.ndarray,
                     root_quat_w: np.ndarray, joint_pos: np.ndarray) -> list[np.ndarray]:
    """The ghost of each robot frame: its qpos with the reference pose at that frame's step put in.

    ``indices``: anything ``set_qpos`` takes (``RobotIndices``, a deploy robot); the reference
    arrays are per step (root position [T, 3], root quaternion [T, 4], joint angles [T, J]).
    """
    ghosts = []
    for qpos, t in zip(frames, steps, strict=True):
        ghost = qpos.copy()
        set_qpos(ghost, indices, root_pos_w[t], root_quat_w[t], joint_pos[t])
        ghosts.append(ghost)
    return ghosts


def render_ghost_video(
    model: mujoco.MjModel,
    robot_qpos: Sequence[np.ndarray],
    ghost_qpos: Sequence[np.ndarray] | None,
    root_body: int,
    output: str | Path,
    fps: float,
    *,
    title: str = "policy",
    width: int = 640,
    height: int = 480,
    camera: CameraConfig | None = None,
    camera_name: str | None = None,
    multisample: bool = MULTISAMPLE,
    light_ghost: bool = True,
) -> Path | None:
    """Write an H.264 video of ``robot_qpos`` with ``ghost_qpos`` overlaid; ``None`` (logged)
    without OpenGL.

    ``ghost_qpos=None`` draws the robot alone; ``camera_name`` views it through that MJCF camera
    instead of the trailing free ``camera``; ``multisample`` as ``MotionRenderer`` takes it;
    ``light_ghost=False`` draws the ghost from the visual geoms whatever they cost
    (``ghost_option``).
    """
    try:
        # indices only serve frames()
        renderer = MotionRenderer(model, None, width, height,  # type: ignore[arg-type]
                                  multisample=multisample)
    except RenderError as exc:
        log.warning("skipping the %s video: %s", title, exc)
        return None
    try:
        frames = _ghost_frames(renderer, robot_qpos, ghost_qpos, root_body, fps, title,
                               (camera or CameraConfig()).framed(model),
                               camera_name, light_ghost)
        write_video(frames, output, fps, (width, height))
    finally:
        renderer.close()
    return Path(output)
