"""A small primitive-only humanoid written into a test's tmp dir, bare as a third-party model
arrives.

``capsulebot``: capsules, spheres and box feet; a pelvis with a free joint, a
torso, a head, two arms (shoulder, elbow) and two legs (hip pitch, hip roll,
knee, ankle pitch); no floor, actuators, keyframe or light. Its trunk sits a
little behind its hips, so with every joint at 0 its centre of mass is over
the back of its feet (as the Menagerie H1's is) and ``robots new`` has to
lean it forward to stand.

``contacts_off=True`` builds it the way the Menagerie's Apollo is built: the
default class turns every geom's contact bits off, the collision geoms are in
group 3 and the visual ones in group 1.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

STAND_Z = 0.06 + 0.22 + 0.24 + 0.01 + 0.012
"""Pelvis height with straight legs and the soles on the floor."""
JOINTS = (
    "left_shoulder", "left_elbow", "right_shoulder", "right_elbow",
    "left_hip_pitch", "left_hip_roll", "left_knee", "left_ankle_pitch",
    "right_hip_pitch", "right_hip_roll", "right_knee", "right_ankle_pitch",
)  # fmt: skip
"""In MJCF order (the arms hang from the torso, which comes before the legs)."""


def write_capsulebot(folder: Path, *, contacts_off: bool = False,
                     names: dict[str, str] | None = None,
                     keyframe_name: str | None = None, name: str = "capsulebot.xml") -> Path:
    """Write the model under ``folder``; ``names`` renames joints or bodies (written XML-escaped),
    ``keyframe_name`` adds a keyframe of that name at the zero pose. Returns the MJCF path."""
    rename = names or {}

    def n(default: str) -> str:
        return quoteattr(rename.get(default, default))

    collide = 'class="collision"' if contacts_off else ""
    visual = 'class="visual"' if contacts_off else 'contype="0" conaffinity="0"'

    def chain(links) -> str:
        """Nested bodies, one per link: (body, pos, [(joint, axis, range)], [geom attributes])."""
        (body, pos, joints, geoms), rest = links[0], links[1:]
        inner = "".join(f'<joint name={n(j)} axis="{axis}" range="{limits}"/>'
                        for j, axis, limits in joints)
        inner += "".join(f"<geom {attributes}/>" for attributes in geoms)
        return f'<body name={n(body)} pos="{pos}">{inner}{chain(rest) if rest else ""}</body>'

    def capsule(length: float, radius: float, mass: float) -> str:
        return (
            f'{collide} type="capsule" fromto="0 0 0 0 0 -{length}" size="{radius}" mass="{mass}"'
        )

    legs = "".join(chain([
        (f"{s}_thigh", f"0 {y} -0.06",
         [(f"{s}_hip_pitch", "0 1 0", "-1.6 1.0"), (f"{s}_hip_roll", "1 0 0", "-0.5 0.5")],
         [capsule(0.22, 0.035, 1.2), f'{visual} type="sphere" size="0.05" mass="0"']),
        (f"{s}_shin", "0 0 -0.22", [(f"{s}_knee", "0 1 0", "0 2.2")], [capsule(0.22, 0.03, 0.8)]),
        (f"{s}_foot", "0 0 -0.24", [(f"{s}_ankle_pitch", "0 1 0", "-0.8 0.8")],
         [f'{collide} type="box" pos="0.03 0 -0.01" size="0.07 0.035 0.012" mass="0.3"']),
    ]) for s, y in (("left", 0.09), ("right", -0.09)))
    arms = "".join(chain([
        (f"{s}_upper_arm", f"0 {y} 0.2", [(f"{s}_shoulder", "0 1 0", "-2.5 2.5")],
         [capsule(0.18, 0.025, 0.4)]),
        (f"{s}_forearm", "0 0 -0.18", [(f"{s}_elbow", "0 1 0", "-2.0 0.0")],
         [capsule(0.16, 0.02, 0.25)]),
        (f"{s}_hand", "0 0 -0.18", [], [f'{collide} type="sphere" size="0.025" mass="0.1"']),
    ]) for s, y in (("left", 0.15), ("right", -0.15)))
    defaults = """
  <default>
    <geom contype="0" conaffinity="0" group="1"/>
    <default class="collision"><geom group="3"/></default>
    <default class="visual"><geom group="1" rgba="0.8 0.8 0.85 1"/></default>
  </default>""" if contacts_off else ""
    keyframe = (f'<keyframe><key name={quoteattr(keyframe_name)} qpos="0 0 {STAND_Z:.4f} 1 0 0 '
                f'0{" 0" * len(JOINTS)}"/></keyframe>'
                if keyframe_name is not None else "")
    xml = f"""<mujoco model="capsulebot">
  <compiler angle="radian"/>{defaults}
  <worldbody>
    <body name={n("pelvis")} pos="0 0 0.8">
      <freejoint name="root"/>
      <geom {collide} type="sphere" size="0.07" mass="3"/>
      <body name={n("torso")} pos="-0.035 0 0.1">
        <geom {collide} type="capsule" fromto="0 0 0 0 0 0.25" size="0.08" mass="6"/>
        <body name={n("head")} pos="0 0 0.36">
          <geom {collide} type="sphere" size="0.07" mass="1"/>
        </body>{arms}
      </body>{legs}
    </body>
  </worldbody>
  {keyframe}
</mujoco>
"""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(xml, encoding="utf-8")
    return path
