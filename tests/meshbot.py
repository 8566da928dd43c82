"""A tiny meshed robot written into a test's tmp dir: STL meshes, visual-only and colliding geoms.

``meshbot``: a pelvis with a free joint, two legs (hip and knee hinges) and
box-mesh feet that collide, plus a large visual-only mesh on the pelvis that
reaches below the feet (its bounding sphere even more so): floor contact and
height must come from the collision geometry, with the feet meshes' real
vertices.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

FOOT_HALF = (0.08, 0.04, 0.02)
"""Half extents (m) of each foot's box mesh."""
PELVIS_Z = 0.62
"""Pelvis height in the model as written (3 cm above standing)."""
FOOT_BELOW_PELVIS = 0.05 + 0.25 + 0.27
"""Foot body centre below the pelvis with straight legs: hip offset, thigh, shin + ankle."""
STAND_Z = FOOT_BELOW_PELVIS + FOOT_HALF[2]
"""Pelvis height with the foot meshes' undersides on the floor."""
JOINTS = ("left_hip_joint", "left_knee_joint", "right_hip_joint", "right_knee_joint")


def box_stl(path: Path, half: tuple[float, float, float], offset=(0.0, 0.0, 0.0)) -> None:
    """A binary STL of a box with ``half`` extents centred on ``offset``."""
    hx, hy, hz = half
    corners = (
        np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)]) + offset
    )
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip
    data = bytearray(b"meshbot".ljust(80, b" "))
    data += struct.pack("<I", len(faces))
    for a, b, c in faces:
        v = corners[[a, b, c]]
        n = np.cross(v[1] - v[0], v[2] - v[0])
        n = n / np.linalg.norm(n)
        data += struct.pack("<12fH", *n, *v[0], *v[1], *v[2], 0)
    path.write_bytes(bytes(data))


def actuator_xml(kind: str, kp: float = 30.0, kv: float = 1.5, effort: float = 20.0) -> str:
    """One actuator per joint: ``position`` servos with kp/kv, or ``motor``."""
    if kind == "position":
        return "".join(
            f'<position name="{j}" joint="{j}" kp="{kp}" kv="{kv}" forcerange="-{effort} '
            f'{effort}"/>'
            for j in JOINTS
        )
    return "".join(f'<motor name="{j}" joint="{j}" ctrlrange="-{effort} {effort}"/>'
                   for j in JOINTS)


def write_meshbot(
    folder: Path,
    *,
    actuators: str | None = "position",
    floor: bool = True,
    keyframe: bool = True,
    armature: float = 0.01,
    timestep: float = 0.005,
    name: str = "meshbot.xml",
) -> Path:
    """Write ``meshbot.xml`` and its STL meshes under ``folder``; returns the MJCF path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meshes").mkdir(exist_ok=True)
    box_stl(folder / "meshes" / "foot.stl", FOOT_HALF)
    box_stl(folder / "meshes" / "shell.stl", (0.15, 0.15, 0.6), offset=(0.0, 0.0, -0.3))
    leg = """
      <body name="{s}_thigh" pos="0 {y} -0.05">
        <joint name="{s}_hip_joint" axis="0 1 0" range="-1.5 1.5" armature="{a}"/>
        <geom name="{s}_thigh" type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03"/>
        <body name="{s}_shin" pos="0 0 -0.25">
          <joint name="{s}_knee_joint" axis="0 1 0" range="0 2.5" armature="{a}"/>
          <geom name="{s}_shin" type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03"/>
          <body name="{s}_foot" pos="0 0 -0.27">
            <geom name="{s}_foot" type="mesh" mesh="foot" euler="0 0 0.3"/>
          </body>
        </body>
      </body>"""
    legs = "".join(leg.format(s=s, y=y, a=armature) for s, y in (("left", 0.1), ("right", -0.1)))
    qpos = " ".join(str(v) for v in (0, 0, STAND_Z, 1, 0, 0, 0, 0, 0, 0, 0))
    xml = f"""<mujoco model="meshbot">
  <compiler angle="radian" meshdir="meshes"/>
  <option timestep="{timestep}"/>
  <asset>
    <mesh name="foot" file="foot.stl"/>
    <mesh name="shell" file="shell.stl"/>
  </asset>
  <worldbody>
    {'<geom name="floor" type="plane" size="5 5 0.1"/>' if floor else ''}
    <body name="pelvis" pos="0 0 {PELVIS_Z}">
      <freejoint name="root"/>
      <geom name="pelvis" type="sphere" size="0.08" mass="4"/>
      <geom name="shell" type="mesh" mesh="shell" contype="0" conaffinity="0" density="0"/>
      <body name="torso" pos="0 0 0.2">
        <geom name="torso" type="capsule" fromto="0 0 0 0 0 0.25" size="0.07"/>
        <body name="head" pos="0 0 0.35"><geom name="head" type="sphere" size="0.06"/></body>
      </body>{legs}
    </body>
  </worldbody>
  {f'<actuator>{actuator_xml(actuators)}</actuator>' if actuators else ''}
  {f'<keyframe><key name="stand" qpos="{qpos}"/></keyframe>' if keyframe else ''}
</mujoco>
"""
    path = folder / name
    path.write_text(xml, encoding="utf-8")
    return path


def meshbot_spec(mjcf: Path, **overrides):
    """A RobotSpec for ``write_meshbot``'s model (gains equal its position servos)."""
    from primebot.pipeline.robot.spec import RobotSpec

    fields = dict(
        name="meshbot",
        mjcf=Path(mjcf),
        joint_names=JOINTS,
        default_joint_pos=np.zeros(4),
        stiffness=np.full(4, 30.0),
        damping=np.full(4, 1.5),
        effort_limit=np.full(4, 20.0),
        action_scale=np.full(4, 0.25 * 20.0 / 30.0),
        anchor_body="torso",
        tracked_bodies=("pelvis", "torso", "left_foot", "right_foot"),
        end_effector_bodies=("left_foot", "right_foot"),
        feet=("left_foot", "right_foot"),
        root_body="pelvis",
        extra={"keyframe": "stand"},
    )
    fields.update(overrides)
    return RobotSpec(**fields)
