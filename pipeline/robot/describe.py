"""A robot as plain data: what ``primebot robots show`` prints."""

from __future__ import annotations

import mujoco

from .kinematics import standing_height
from .model import load_robot_model, robot_indices
from .spec import RobotSpec


def describe_robot(spec: RobotSpec, model: mujoco.MjModel | None = None) -> dict:
    """Joints (limits, gains, effort, default), bodies (mass), total mass and standing height, as
    plain data."""
    model = load_robot_model(spec) if model is None else model
    ix = robot_indices(model, spec)
    keyframe = spec.extra.get("keyframe", 0)
    joints = [
        {
            "name": name,
            "lower": float(ix.joint_range[j, 0]),
            "upper": float(ix.joint_range[j, 1]),
            "default": float(spec.default_joint_pos[j]),
            "kp": float(spec.stiffness[j]),
            "kd": float(spec.damping[j]),
            "effort": float(spec.effort_limit[j]),
            "action_scale": float(spec.action_scale[j]),
            "armature": float(model.dof_armature[ix.dof_adr[j]]),
        }
        for j, name in enumerate(spec.joint_names)
    ]
    bodies = [
        {"name": name, "mass": float(model.body_mass[b + 1])}
        for b, name in enumerate(ix.body_names)
    ]
    return {
        "name": spec.name,
        "mjcf": str(spec.mjcf),
        "description": spec.description,
        "num_joints": spec.num_joints,
        "num_bodies": len(bodies),
        "mass": float(model.body_subtreemass[ix.root_body_id]),
        "height": standing_height(model, keyframe),
        "timestep": float(model.opt.timestep),
        "anchor_body": spec.anchor_body,
        "root_body": spec.root_body,
        "tracked_bodies": list(spec.tracked_bodies),
        "end_effector_bodies": list(spec.end_effector_bodies),
        "feet": list(spec.feet),
        "self_collision_pairs": [list(pair) for pair in spec.self_collision_geoms],
        "training_overrides": list(spec.training_overrides),
        "joints": joints,
        "bodies": bodies,
    }
