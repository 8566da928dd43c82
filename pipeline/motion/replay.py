"""Kinematic replay of a motion as an H.264 video (``primebot motion replay``).

Each frame puts the robot in the stored root pose and joint angles (no
physics) and renders it offscreen with MuJoCo, through a camera that follows
the root. Rendering needs an OpenGL that works without a display: EGL (Mesa
or an NVIDIA driver) or OSMesa. ``MUJOCO_GL=egl|osmesa`` picks one; otherwise
EGL is tried, then OSMesa. When neither works, ``RenderError`` says which
system packages to install, and callers such as the pipeline can skip the
video without failing.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path

import mujoco
import numpy as np

from ..atomic import atomic_path
from ..errors import RenderError
from ..mujoco_gl import GL_PACKAGES
from ..robot.camera import CameraConfig
from ..robot.kinematics import set_qpos
from ..robot.model import RobotIndices, load_robot_model, robot_indices
from ..robot.spec import RobotSpec
from ..rotations import quat_normalize
from .format import Motion

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "install headless OpenGL, e.g. on Debian/Ubuntu: "
    f"apt-get install {GL_PACKAGES['egl']} {GL_PACKAGES['osmesa']} "
    "(then MUJOCO_GL=egl or MUJOCO_GL=osmesa); the rest of the pipeline runs without the video"
)

MULTISAMPLE = False
"""Frames are drawn without multisample anti-aliasing unless asked. On software (Mesa) OpenGL,
MuJoCo's default 4× multisampling made a ghost-video frame 2.8× slower for the q1 (primitives),
2.4× for the Menagerie G1 (0.39 million mesh triangles) and 3.9× for the Apptronik Apollo (1.4
million; 2.3 s a frame), so the Apollo's evaluation, sim2sim and stress videos took longer than
their physics (tools/bench_render.py); at 640×480 only the far floor's edges show the difference."""


def _gl_candidates() -> list[str]:
    chosen = os.environ.get("MUJOCO_GL", "").strip().lower()
    if chosen in ("egl", "osmesa", "glfw"):
        return [chosen]
    return ["egl", "osmesa"]


def open_gl_context(width: int, height: int):
    """A current offscreen GL context, or ``RenderError`` naming what to install."""
    failures = []
    # PyOpenGL logs at INFO that its optional C accelerator is absent; that is not news to a user
    logging.getLogger("OpenGL.acceleratesupport").setLevel(logging.WARNING)
    for backend in _gl_candidates():
        try:
            module = importlib.import_module(f"mujoco.{backend}")
            context = module.GLContext(width, height)
            context.make_current()
            return backend, context
        except Exception as exc:  # noqa: BLE001 - every failure is reported together below
            failures.append(f"{backend}: {type(exc).__name__}: {exc}")
    raise RenderError(
        "no headless OpenGL available for rendering (" + "; ".join(failures) + ")", fix=INSTALL_HINT
    )


class MotionRenderer:
    """Renders frames of motions for one robot model into RGB arrays."""

    def __init__(
        self, model: mujoco.MjModel, indices: RobotIndices, width: int = 640, height: int = 480,
        multisample: bool = MULTISAMPLE,
    ) -> None:
        """``multisample``: draw with the model's own multisample anti-aliasing (``<visual><quality
        offsamples>``, 4 unless it says otherwise), not ``MULTISAMPLE``'s plain edges."""
        self.model = model
        self.indices = indices
        self.width, self.height = width, height
        # the offscreen buffer must hold the frame, whatever the MJCF's <global offwidth> says
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        if not multisample:
            model.vis.quality.offsamples = 0
        self.backend, self._gl = open_gl_context(width, height)
        self.data = mujoco.MjData(model)
        self.scene = mujoco.MjvScene(model, maxgeom=2000)
        self.option = mujoco.MjvOption()
        self.camera = mujoco.MjvCamera()
        try:
            self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        # e.g. glfw "succeeds" without a display, then this fails
        except Exception as exc:  # noqa: BLE001
            self._gl.free()
            self._gl = self.context = None
            raise RenderError(
                f"OpenGL ({self.backend}) cannot render here: {exc}", fix=INSTALL_HINT
            ) from exc
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.viewport = mujoco.MjrRect(0, 0, width, height)
        self.pixels = np.empty((height, width, 3), dtype=np.uint8)

    def frames(self, motion: Motion, camera: CameraConfig | None = None, only=None):
        """Yield one [H, W, 3] uint8 frame per motion frame (per frame index in ``only``, if given:
        the camera still follows every frame, so a still looks as it does in the video)."""
        camera = (camera or CameraConfig()).framed(self.model)
        root = self.indices.root_body_id - 1
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self.camera.distance, self.camera.azimuth, self.camera.elevation = (
            camera.distance, camera.azimuth, camera.elevation,
        )  # fmt: skip
        lookat = np.array([*motion.body_pos_w[0, root, :2], camera.height])
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = camera.shadows
        self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = camera.shadows
        root_quat = quat_normalize(motion.body_quat_w[:, root])
        for t in range(motion.num_frames):
            # follow the root horizontally; a fixed height keeps a get-up from bobbing the view
            lookat[:2] += (
                camera.smoothing * (motion.body_pos_w[t, root, :2] - lookat[:2]) if t else 0.0
            )
            if only is not None and t not in only:
                continue
            set_qpos(
                self.data.qpos,
                self.indices,
                motion.body_pos_w[t, root],
                root_quat[t],
                motion.joint_pos[t],
            )
            mujoco.mj_forward(self.model, self.data)
            self.camera.lookat[:] = lookat
            mujoco.mjv_updateScene(
                self.model,
                self.data,
                self.option,
                None,
                self.camera,
                mujoco.mjtCatBit.mjCAT_ALL,
                self.scene,
            )
            mujoco.mjr_render(self.viewport, self.scene, self.context)
            label = f"t = {t / motion.fps:5.2f} s   frame {t + 1}/{motion.num_frames}"
            mujoco.mjr_overlay(
                mujoco.mjtFont.mjFONT_NORMAL,
                mujoco.mjtGridPos.mjGRID_BOTTOMLEFT,
                self.viewport,
                label,
                "",
                self.context,
            )
            mujoco.mjr_readPixels(self.pixels, None, self.viewport, self.context)
            yield np.flipud(self.pixels)  # OpenGL's rows run bottom-up

    def close(self) -> None:
        """Free GL resources now (OSMesa complains if left to interpreter shutdown)."""
        if getattr(self, "context", None) is not None:
            self.context.free()
            self.context = None
        if getattr(self, "_gl", None) is not None:
            self._gl.free()
            self._gl = None


def write_video(frames, path: str | Path, fps: float, size: tuple[int, int]) -> int:
    """Encode RGB frames as H.264 (yuv420p, playable everywhere) with imageio-ffmpeg; returns the
    frame count."""
    import imageio_ffmpeg

    count = 0
    with atomic_path(path, suffix=".mp4") as tmp:
        writer = imageio_ffmpeg.write_frames(
            str(tmp), size, fps=fps, codec="libx264", pix_fmt_in="rgb24", pix_fmt_out="yuv420p",
            quality=6, macro_block_size=16, ffmpeg_log_level="error",
            # the temporary name ends in .tmp, so name the container explicitly
            output_params=["-f", "mp4", "-movflags", "+faststart"],
        )  # fmt: skip
        try:
            writer.send(None)  # start the encoder
            for frame in frames:
                writer.send(np.ascontiguousarray(frame))
                count += 1
        except OSError as exc:  # ffmpeg died: bad path, full disk, missing codec
            raise RenderError(
                f"could not encode {path}: {exc}", fix="check the output path and free disk space"
            ) from exc
        finally:
            writer.close()
    return count


def replay_video(
    motion: Motion,
    spec: RobotSpec,
    output: str | Path,
    *,
    width: int = 640,
    height: int = 480,
    camera: CameraConfig | None = None,
    model: mujoco.MjModel | None = None,
) -> Path:
    """Render ``motion`` on ``spec``'s robot to an H.264 ``output`` at the motion's fps."""
    model = load_robot_model(spec) if model is None else model
    indices = robot_indices(model, spec)
    if motion.joint_pos.shape[1] != spec.num_joints:
        from ..errors import MotionError

        raise MotionError(
            f"{motion.source}: {motion.joint_pos.shape[1]} joints, robot {spec.name!r} has "
            f"{spec.num_joints}",
            fix="replay with the robot the motion was made for (--robot)",
        )
    bad = motion.first_non_finite()
    if bad is not None:
        from ..errors import MotionError

        raise MotionError(
            f"{motion.source}: {bad[0]} is NaN or infinite at frame {bad[1]}; the robot cannot be "
            "posed there",
            fix=f"run `primebot motion validate {motion.source}` and regenerate the file",
        )
    renderer = MotionRenderer(model, indices, width, height)
    try:
        count = write_video(renderer.frames(motion, camera), output, motion.fps, (width, height))
    finally:
        renderer.close()
    log.debug("rendered %d frames with %s", count, renderer.backend)
    return Path(output)


def replay_or_skip(motion: Motion, spec: RobotSpec, output: str | Path, **kwargs) -> Path | None:
    """``replay_video``, but a missing OpenGL is a logged warning and ``None`` (the pipeline goes
    on)."""
    try:
        return replay_video(motion, spec, output, **kwargs)
    except RenderError as exc:
        log.warning("skipping the replay video: %s", exc)
        return None
