"""The reference ghost of a robot with heavy visual meshes is drawn from its collision geoms."""

from __future__ import annotations

import imageio.v3 as iio
import mujoco
import numpy as np
import pytest

from primebot.pipeline.render import ghost
from primebot.pipeline.render.ghost import ghost_option, render_ghost_video

# a body whose visual mesh (group 2, no contact bits) is a hull of many triangles and whose contact
# shape is a capsule in group 3 (hidden by default), as the Menagerie humanoids are built
POINTS = np.random.default_rng(0).normal(size=(200, 3))
SPHERE = " ".join(f"{x:.4f} {y:.4f} {z:.4f}" for x, y, z in
                  0.1 * POINTS / np.linalg.norm(POINTS, axis=1, keepdims=True))
MODEL = f"""
<mujoco>
  <asset><mesh name="shell" vertex="{SPHERE}"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="pelvis" pos="0 0 0.5">
      <freejoint/>
      <geom name="look" type="mesh" mesh="shell" group="2" contype="0" conaffinity="0"/>
      <geom name="touch" type="capsule" size="0.05 0.1" group="3" {{touch}}/>
    </body>
  </worldbody>
</mujoco>
"""


def model(touch: str = "") -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(MODEL.format(touch=touch))


def test_a_heavy_robot_ghost_shows_only_its_collision_groups(monkeypatch):
    heavy = model()
    assert heavy.mesh_facenum[0] > 100  # the hull of 200 points on a sphere
    default = mujoco.MjvOption()
    monkeypatch.setattr(ghost, "LIGHT_GHOST_TRIANGLES", 100)
    light = ghost_option(heavy, default)
    assert light is not default
    assert list(light.geomgroup) == [0, 0, 0, 1, 0, 0]
    assert list(default.geomgroup) == [1, 1, 1, 0, 0, 0]  # the robot itself is drawn as before
    # below the threshold (the q1: primitives only; by default 100,000 triangles) nothing changes
    monkeypatch.setattr(ghost, "LIGHT_GHOST_TRIANGLES", 100_000)
    assert ghost_option(heavy, default) is default


def test_the_ghost_keeps_the_visual_geoms_when_the_collision_groups_are_no_lighter(monkeypatch):
    monkeypatch.setattr(ghost, "LIGHT_GHOST_TRIANGLES", 100)
    default = mujoco.MjvOption()
    # the mesh collides too: its group is a collision group, so nothing lighter can be drawn
    colliding_mesh = mujoco.MjModel.from_xml_string(
        MODEL.format(touch="").replace('contype="0" conaffinity="0"', ""))
    assert ghost_option(colliding_mesh, default) is default
    # no geom collides (contact bits off, no pair): no collision groups to draw from
    assert ghost_option(model('contype="0" conaffinity="0"'), default) is default
    # an explicit <contact><pair> makes a geom a collision geom without contact bits
    paired = mujoco.MjModel.from_xml_string(
        MODEL.format(touch='contype="0" conaffinity="0"').replace(
            "</worldbody>", '</worldbody><contact><pair geom1="floor" geom2="touch"/></contact>'))
    assert list(ghost_option(paired, default).geomgroup) == [0, 0, 0, 1, 0, 0]


def test_the_light_ghost_is_drawn(tmp_path, monkeypatch):
    """The video shows the capsule ghost beside the meshed robot; drawn from the visual geoms the
    ghost is the sphere (real OpenGL, as every video test)."""
    monkeypatch.setattr(ghost, "LIGHT_GHOST_TRIANGLES", 100)
    m = model()
    robot = np.zeros(m.nq)
    robot[[2, 3]] = 0.5, 1.0
    beside = robot.copy()
    beside[1] = 0.3
    frames = {}
    for light in (True, False):
        path = render_ghost_video(m, [robot] * 2, [beside] * 2, 1, tmp_path / f"{light}.mp4", 50.0,
                                  width=160, height=120, light_ghost=light)
        if path is None:
            pytest.skip("no OpenGL")
        frames[light] = iio.imread(path, index=0).astype(np.int16)
    # the two ghosts differ in shape: the frames differ where the ghost is, and only there
    changed = np.abs(frames[True] - frames[False]).max(axis=2) > 30
    assert 0.001 < changed.mean() < 0.2
