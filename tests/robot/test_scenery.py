"""Videos of a scaffolded robot are lit, under a sky, on a textured floor; a model's own scenery
stays; contact-sheet stills are the video's frames."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from capsulebot import write_capsulebot

from primebot.pipeline.errors import RenderError
from primebot.pipeline.motion.replay import MotionRenderer
from primebot.pipeline.robot.scaffold import scaffold_robot
from primebot.pipeline.robot.scenery import CHECKER_PER_HEIGHT, add_scenery


def _frame(model: mujoco.MjModel) -> np.ndarray:
    """One 160 × 120 frame of the model's first keyframe through the replay renderer's camera."""
    try:
        renderer = MotionRenderer(model, None, 160, 120)
    except RenderError as exc:
        pytest.skip(f"no OpenGL here: {exc}")
    try:
        data = renderer.data
        mujoco.mj_resetDataKeyframe(model, data, 0)
        mujoco.mj_forward(model, data)
        camera = renderer.camera
        camera.distance, camera.elevation, camera.azimuth = 3.0, -15.0, 135.0
        camera.lookat[:] = [0.0, 0.0, 0.5]
        mujoco.mjv_updateScene(model, data, renderer.option, None, camera,
                               mujoco.mjtCatBit.mjCAT_ALL, renderer.scene)
        mujoco.mjr_render(renderer.viewport, renderer.scene, renderer.context)
        mujoco.mjr_readPixels(renderer.pixels, None, renderer.viewport, renderer.context)
        return np.flipud(renderer.pixels).copy()
    finally:
        renderer.close()


def test_a_scaffolded_model_gets_a_light_a_sky_and_a_floor_texture_sized_from_the_robot(tmp_path):
    made = scaffold_robot("litbot", write_capsulebot(tmp_path / "src"), tmp_path / "pkg")
    assert {"a light", "a skybox", "a floor texture"} <= set(made.model_changes)
    model = mujoco.MjModel.from_xml_path(str(made.folder / made.package / "model" / "litbot.xml"))
    assert (model.light_type == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL).sum() == 1
    floor = model.geom("floor").id
    material = model.geom_matid[floor]
    # checker squares 0.3 × the robot's height: 2 squares per texture repeat
    assert model.mat_texrepeat[material][0] == pytest.approx(
        1 / (2 * CHECKER_PER_HEIGHT * made.guess.height)
    )

    lit = _frame(model)
    bare = mujoco.MjSpec.from_file(str(made.folder / made.package / "model" / "litbot.xml"))
    bare.geom("floor").material = ""
    for element in [*bare.materials, *bare.textures]:
        bare.delete(element)
    for light in list(bare.lights):
        bare.delete(light)
    dark = _frame(bare.compile())
    sky = slice(0, 20)  # the top rows: sky above the horizon
    assert lit[sky].mean() > 60 and dark[sky].mean() < 5  # a gradient sky instead of black
    ground = slice(-30, None)  # the bottom rows: floor in front of the robot
    assert lit[ground].std() > dark[ground].std() + 3  # checker squares instead of a flat grey


def test_a_model_with_its_own_scenery_keeps_it(tmp_path):
    spec = mujoco.MjSpec.from_file(str(write_capsulebot(tmp_path / "src")))
    spec.worldbody.add_light(name="mine", type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
                             dir=[0, 0, -1])
    spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_FLAT,
                     rgb1=[0, 0, 1], width=8, height=8)
    spec.add_material(name="ground", rgba=[0, 1, 0, 1])
    spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1],
                            material="ground")
    assert add_scenery(spec, spec.compile(), 1.0) == []


def test_contact_sheet_stills_are_the_frames_of_the_replay(repo_root, spec, model):
    from primebot.pipeline.motion.format import load_motion
    from primebot.pipeline.render.contact_sheet import motion_stills
    from primebot.pipeline.robot.model import robot_indices

    # the shipped wave, shortened to 15 frames
    motion = load_motion(repo_root / "motions" / "wave.npz")
    short = dataclasses.replace(motion,
                                **{key: value[:60:4] for key, value in motion.arrays().items()})
    try:
        renderer = MotionRenderer(model, robot_indices(model, spec), 160, 120)
    except RenderError as exc:
        pytest.skip(f"no OpenGL here: {exc}")
    try:
        every = [frame.copy() for frame in renderer.frames(short)]
    finally:
        renderer.close()
    stills = motion_stills(short, spec, count=3, width=160, height=120)
    assert len(stills) == 3
    for still, index in zip(stills, (0, 7, 14), strict=True):
        np.testing.assert_array_equal(still, every[index])
