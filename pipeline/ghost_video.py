"""Videos of a policy with its reference drawn through it as a translucent ghost (eval and sim2sim).

Reuses the replay renderer (``motion_replay``: offscreen GL context, scene,
camera settings, H.264 writer); each frame renders the robot's state, then
adds the reference pose's robot geoms (``mjCAT_DYNAMIC``: not the floor) to
the same scene with a translucent colour. Torch-free, so sim2sim can use it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np

from .errors import RenderError
from .motion_replay import CameraConfig, MotionRenderer, write_video

log = logging.getLogger(__name__)

GHOST_RGBA = (0.2, 0.75, 1.0, 0.35)
"""The reference: light blue, mostly transparent."""


def _ghost_frames(renderer: MotionRenderer, robot_qpos: Sequence[np.ndarray], ghost_qpos: Sequence[np.ndarray],
                  root_body: int, fps: float, title: str, camera: CameraConfig):
    model = renderer.model
    ghost = mujoco.MjData(model)
    perturb = mujoco.MjvPerturb()
    cam = renderer.camera
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.distance, cam.azimuth, cam.elevation = camera.distance, camera.azimuth, camera.elevation
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = camera.shadows
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = camera.shadows
    lookat = None
    for k, (qpos, ref_qpos) in enumerate(zip(robot_qpos, ghost_qpos, strict=True)):
        renderer.data.qpos[:] = qpos
        mujoco.mj_forward(model, renderer.data)
        ghost.qpos[:] = ref_qpos
        mujoco.mj_kinematics(model, ghost)
        root = renderer.data.xpos[root_body]
        if lookat is None:
            lookat = np.array([root[0], root[1], camera.height])
        lookat[:2] += camera.smoothing * (root[:2] - lookat[:2])
        cam.lookat[:] = lookat
        mujoco.mjv_updateScene(model, renderer.data, renderer.option, None, cam, mujoco.mjtCatBit.mjCAT_ALL,
                               renderer.scene)
        first = renderer.scene.ngeom
        mujoco.mjv_addGeoms(model, ghost, renderer.option, perturb, mujoco.mjtCatBit.mjCAT_DYNAMIC, renderer.scene)
        for g in range(first, renderer.scene.ngeom):
            renderer.scene.geoms[g].rgba[:] = GHOST_RGBA
        mujoco.mjr_render(renderer.viewport, renderer.scene, renderer.context)
        label = f"{title}   t = {k / fps:5.2f} s   (ghost: reference)"
        mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_BOTTOMLEFT, renderer.viewport,
                           label, "", renderer.context)
        mujoco.mjr_readPixels(renderer.pixels, None, renderer.viewport, renderer.context)
        yield np.flipud(renderer.pixels)


def render_ghost_video(
    model: mujoco.MjModel,
    robot_qpos: Sequence[np.ndarray],
    ghost_qpos: Sequence[np.ndarray],
    root_body: int,
    output: str | Path,
    fps: float,
    *,
    title: str = "policy",
    width: int = 640,
    height: int = 480,
    camera: CameraConfig | None = None,
) -> Path | None:
    """Write an H.264 video of ``robot_qpos`` with ``ghost_qpos`` overlaid; ``None`` (logged) without OpenGL."""
    try:
        renderer = MotionRenderer(model, None, width, height)  # type: ignore[arg-type] - indices only serve frames()
    except RenderError as exc:
        log.warning("skipping the %s video: %s", title, exc)
        return None
    try:
        frames = _ghost_frames(renderer, robot_qpos, ghost_qpos, root_body, fps, title, camera or CameraConfig())
        write_video(frames, output, fps, (width, height))
    finally:
        renderer.close()
    return Path(output)
