"""The biped4 robot: a light planar biped (torso, two legs, hip and knee per leg).

One constants module per robot: joint order, servo gains, the standing pose,
then the spec derived from them. The model (biped4.xml) moves only in the
sagittal plane: its base is three joints (slide x, slide z, hinge pitch)
instead of a free joint, listed in ``extra["root_joints"]``. Gains are chosen
for a 7 kg robot with 0.3 m leg segments, not derived from rotor inertia:
kp 40 N·m/rad holds the crouch with a few hundredths of a radian of sag and
kd 1 N·m·s/rad damps it in about 0.1 s.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from primebot.pipeline.api import RobotSpec, hookimpl

BIPED4_MJCF = Path(__file__).with_name("biped4.xml")

JOINT_NAMES: tuple[str, ...] = ("left_hip", "right_hip", "left_knee", "right_knee")
"""Policy order, as seed 000 lists them: both hips, then both knees."""

ROOT_JOINTS: tuple[str, ...] = ("rootx", "rootz", "rooty")
"""The planar base: forward slide, vertical slide, pitch hinge (qpos order)."""

# Crouch with each foot under its hip (knee = 2·hip for equal segments): the
# bent knees leave room to lengthen and shorten the leg both ways.
DEFAULT_JOINT_POS = np.array([0.35, 0.35, 0.7, 0.7])
STIFFNESS = np.full(4, 40.0)
DAMPING = np.full(4, 1.0)
EFFORT_LIMIT = np.full(4, 25.0)
# ±0.7 rad of target around the crouch: a full stride for the hips, and enough
# knee travel to clear the foot, while staying inside the joint ranges.
ACTION_SCALE = np.full(4, 0.7)

TORSO = "torso"
BODIES = ("torso", "left_thigh", "left_shin", "left_foot", "right_thigh", "right_shin",
          "right_foot")
FEET = ("left_foot", "right_foot")


def biped4_spec(mjcf: str | os.PathLike | None = None) -> RobotSpec:
    """The biped4 spec; ``mjcf`` (else ``BIPED4_XML``, else the bundled biped4.xml) is the model
    file."""
    if mjcf is None:
        mjcf = os.environ.get("BIPED4_XML") or BIPED4_MJCF
    return RobotSpec(
        name="biped4",
        mjcf=Path(mjcf),
        joint_names=JOINT_NAMES,
        default_joint_pos=DEFAULT_JOINT_POS.copy(),
        stiffness=STIFFNESS.copy(),
        damping=DAMPING.copy(),
        effort_limit=EFFORT_LIMIT.copy(),
        action_scale=ACTION_SCALE.copy(),
        anchor_body=TORSO,
        tracked_bodies=BODIES,
        end_effector_bodies=FEET,
        feet=FEET,
        # The two legs never touch each other (contype/conaffinity in the MJCF).
        self_collision_geoms=(),
        root_body=TORSO,
        description="planar biped, 0.97 m, 7.1 kg, 4 joints (hip and knee per leg), "
        "base constrained to the sagittal plane (slide x, slide z, pitch)",
        extra={
            "keyframe": "stand",
            "root_joints": ROOT_JOINTS,
            "planar": True,
            "standing_height": 0.59,
            "video_camera": "side",  # follows the centre of mass from the left: the gait in profile
        },
    )


@hookimpl
def register_robots(register) -> None:
    """Register ``biped4``."""
    register(biped4_spec())
