"""Replay video: a playable H.264 file of the right size and length, and a clear error without
OpenGL."""

from __future__ import annotations

from dataclasses import replace

import imageio_ffmpeg
import numpy as np
import pytest
from video_probe import probe

from primebot.pipeline.errors import RenderError
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.motion.replay import replay_or_skip, replay_video
from primebot.plugins.robots.q1.spec import Q1_MJCF, q1_spec

FRAMES = 12


@pytest.fixture(scope="module")
def short_wave():
    from pathlib import Path

    motion = load_motion(Path(__file__).resolve().parents[2] / "motions" / "wave.npz")
    cut = {key: value[80 : 80 + FRAMES] for key, value in motion.arrays().items()}
    return replace(motion, **cut)


def test_replay_writes_a_playable_h264_video(tmp_path, short_wave):
    out = tmp_path / "运动" / "挥手.mp4"
    replay_video(short_wave, q1_spec(Q1_MJCF), out)
    assert probe(out) == {
        "codec": "h264",
        "size": (640, 480),
        "fps": 50.0,
        "frames": FRAMES,
        "pix_fmt": True,
    }
    frames = list(imageio_ffmpeg.read_frames(str(out)))[1:]  # decodes: the first item is metadata
    image = np.frombuffer(frames[0], dtype=np.uint8).reshape(480, 640, 3)
    assert image.std() > 10  # a rendered scene, not a blank frame
    assert not list(out.parent.glob(".*.tmp"))  # written atomically


@pytest.mark.filterwarnings("ignore::Warning")  # glfw warns about the missing display
def test_without_opengl_the_error_names_the_packages_and_the_pipeline_can_skip(
    tmp_path, short_wave, monkeypatch
):
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # needs a display, which tests do not have
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(RenderError) as err:
        replay_video(short_wave, q1_spec(Q1_MJCF), tmp_path / "v.mp4")
    assert (
        "libegl1" in str(err.value)
        and "libosmesa6" in str(err.value)
        and "MUJOCO_GL=egl" in str(err.value)
    )
    assert err.value.exit_code == 9
    assert replay_or_skip(short_wave, q1_spec(Q1_MJCF), tmp_path / "v.mp4") is None
    assert not (tmp_path / "v.mp4").exists()


def test_frames_are_drawn_without_multisampling_unless_asked(short_wave):
    """4x multisampling is what a frame costs most on software OpenGL (tools/bench_render.py); the
    renderer turns it off for videos, and a caller that wants smooth edges still gets them."""
    from primebot.pipeline.motion.replay import MotionRenderer
    from primebot.pipeline.robot.model import load_robot_model, robot_indices

    spec = q1_spec(Q1_MJCF)
    images = {}
    for multisample in (False, True):
        model = load_robot_model(spec)
        assert model.vis.quality.offsamples == 4  # MuJoCo's default, as the MJCF leaves it
        asked = {"multisample": True} if multisample else {}  # the default: without
        renderer = MotionRenderer(model, robot_indices(model, spec), 160, 120, **asked)
        try:
            assert model.vis.quality.offsamples == (4 if multisample else 0)
            images[multisample] = next(renderer.frames(short_wave)).astype(np.int16)
        finally:
            renderer.close()
    assert images[False].std() > 10  # a rendered scene
    # the same scene: only edges differ
    assert np.mean(np.abs(images[False] - images[True]) > 40) < 0.05
