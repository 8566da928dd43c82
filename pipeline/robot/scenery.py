"""What a robot's model needs to look right in a video: a light, a sky and a textured floor.

A robot's own MJCF seldom brings them (the Menagerie keeps them in a
separate scene file), and without them a video shows a dim robot on a flat
grey plane under a black sky. ``robots new`` adds to its copy of the model
whatever is missing, sized from the robot's height like the video camera
(robot/camera.py): a directional light from above and in front, a gradient
skybox, and a checker texture on the floor whose squares are about a third
of the robot's height. A model that brings its own keeps them (q1's videos
look as they always did). Every element added sets its attributes itself,
so no default class of the model changes them.
"""

from __future__ import annotations

import mujoco
import numpy as np

from .contacts import floor_geoms

CHECKER_PER_HEIGHT = 0.3
"""Floor checker square side over the robot's height (0.26 m for the 0.88 m q1, 0.54 m for a 1.8 m
H1)."""
SKY_TOP, SKY_HORIZON = (0.55, 0.65, 0.8), (0.1, 0.12, 0.15)
FLOOR_DARK, FLOOR_LIGHT, FLOOR_LINES = (0.24, 0.26, 0.3), (0.32, 0.34, 0.38), (0.5, 0.5, 0.55)
SUN_DIRECTION = (0.3, 0.25, -1.0)
"""A light from above, a little in front and to the side: faces and legs lit, with some relief."""
HEADLIGHT = {"ambient": (0.3, 0.3, 0.3), "diffuse": (0.45, 0.45, 0.45), "specular": (0.1, 0.1, 0.1)}
"""The camera's own light when the model leaves MuJoCo's default (ambient 0.1, diffuse 0.4)."""
_DEFAULT_HEADLIGHT = {"ambient": (0.1, 0.1, 0.1), "diffuse": (0.4, 0.4, 0.4)}


def free_name(taken: set[str], base: str) -> str:
    """``base``, or ``base_2``, ``base_3``… when the model already uses the name."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def model_names(model: mujoco.MjModel) -> set[str]:
    """Every name in a compiled model (MuJoCo's names buffer)."""
    return {n for n in bytes(model.names).decode("utf-8", "replace").split("\0") if n}


def add_scenery(spec: mujoco.MjSpec, model: mujoco.MjModel, height: float) -> list[str]:
    """Add to ``spec`` the light, skybox and floor texture that ``model`` (its compiled state)
    lacks; returns what was added, for the model copy's list of changes."""
    taken = model_names(model)
    added = []
    if not np.any(model.light_type == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL):
        direction = np.array(SUN_DIRECTION) / np.linalg.norm(SUN_DIRECTION)
        spec.worldbody.add_light(
            name=free_name(taken, "sun"), type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
            mode=mujoco.mjtCamLight.mjCAMLIGHT_FIXED,
            pos=(-3 * height * direction).tolist(), dir=direction.tolist(), castshadow=True,
            active=True,
            diffuse=[0.6, 0.6, 0.6], ambient=[0.0, 0.0, 0.0], specular=[0.2, 0.2, 0.2],
        )
        added.append("a light")
    headlight = spec.visual.headlight
    if all(np.allclose(getattr(headlight, key), value)
           for key, value in _DEFAULT_HEADLIGHT.items()):
        for key, value in HEADLIGHT.items():
            setattr(headlight, key, list(value))
    if not np.any(model.tex_type == mujoco.mjtTexture.mjTEXTURE_SKYBOX):
        spec.add_texture(
            name=free_name(taken, "skybox"), type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
            builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, rgb1=list(SKY_TOP),
            rgb2=list(SKY_HORIZON),
            width=256, height=256,
        )
        added.append("a skybox")
    bare = [geom for geom in spec.worldbody.geoms
            if geom.type == mujoco.mjtGeom.mjGEOM_PLANE and not geom.material]
    if bare and len(floor_geoms(model)):
        texture = spec.add_texture(
            name=free_name(taken, "floor_checker"), type=mujoco.mjtTexture.mjTEXTURE_2D,
            builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER, mark=mujoco.mjtMark.mjMARK_EDGE,
            rgb1=list(FLOOR_LIGHT), rgb2=list(FLOOR_DARK), markrgb=list(FLOOR_LINES), width=256,
            height=256,
        )
        # a checker texture holds 2 × 2 squares; texuniform repeats it per metre
        repeat = 1.0 / (2 * CHECKER_PER_HEIGHT * max(height, 0.1))
        material = spec.add_material(name=free_name(taken, "floor_grid"),
                                     texrepeat=[repeat, repeat],
                                     texuniform=True, reflectance=0.05, rgba=[1, 1, 1, 1])
        material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = texture.name
        for floor in bare:
            floor.material = material.name
            floor.rgba = [1, 1, 1, 1]
        added.append("a floor texture")
    return added
