"""The ONNX metadata of an export (docs/deploy.md lists every key).

Every export has the robot keys (``robot_metadata``: joints, gains, pose,
range, action scale, observation layout) and the run keys
(``run_metadata``). Between them come the task's keys: from the task's
``TaskSpec.export_metadata`` hook (the tracking task's motion, bodies and
thresholds live in ``plugins/tasks/tracking/export.py``), or for a
``policy`` export without one, the generic keys of ``policy_metadata``.
This module names no task.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import __version__
from ..deploy.onnx_policy import ACTION_OFFSET_BAKED
from ..errors import ExportError
from ..robot.model import compile_mjcf
from ..sim.task import (
    ACTION_OFFSET_DEFAULT,
    EXPORT_POLICY,
    REFERENCE_OFFSETS,
    TaskExport,
    metadata_threshold,
)
from ..train.trained_policy import TrainedPolicy
from .graph import observation_layout


def task_metadata(env: Any, policy: TrainedPolicy, task: TaskExport) -> dict[str, Any]:
    """The ``metadata_props`` of a task's export: robot keys, the task's keys (``task``), run
    keys."""
    return {
        **robot_metadata(env.robot,
                         observation_layout(task.observation_terms, task.observation_history),
                         policy),
        **task.metadata,
        **run_metadata(policy),
    }


def policy_metadata(env: Any, policy: TrainedPolicy) -> dict[str, Any]:
    """The ``metadata_props`` of a policy that tracks no motion (``export_kind: policy``).

    The robot keys are those of every export (``robot_metadata``); the observation is the
    env's ``observation_names``, one value each; no motion, anchor or body keys.
    """
    names = list(getattr(env, "observation_names", None) or ())
    if len(names) != env.num_obs:
        raise ExportError(
            f"task {policy.config.task!r} names {len(names)} observations but its policy takes "
            f"{env.num_obs}",
            fix="give the task's env an observation_names tuple, one name per observation value",
        )
    robot = env.robot
    return {
        **robot_metadata(robot, observation_layout([(name, 1) for name in names]), policy),
        "command_names": [],
        "export_kind": EXPORT_POLICY,
        "root_body_name": robot.root_body or robot.anchor_body,
        "base_joint_names": list(robot.extra.get("root_joints", ())) or "free",
        "fps": 1.0 / env.step_dt,
        "control_dt": float(env.step_dt),
        "training_physics_dt": float(env.sim.physics_dt),
        "max_episode_steps": int(env.max_episode_length),
        # how training ended episodes and bounded actions, where the env says (walk: the fall, ±1)
        "action_clip": metadata_threshold(getattr(env, "action_clip", None)),
        **{f"termination_{key}": metadata_threshold(value)
           for key, value in (getattr(env, "termination_thresholds", None) or {}).items()},
        **run_metadata(policy),
    }


def robot_metadata(robot: Any, terms: list, policy: TrainedPolicy) -> dict[str, Any]:
    """Joint order, gains, pose, range, action scale and observation layout (both export kinds).

    The observation keys include mjlab's per-term ``observation_terms_*`` and
    its ``run_path``, so deploy code written for mjlab's files reads ours.
    """
    import mujoco

    model = compile_mjcf(robot.mjcf)
    joint_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in robot.joint_names]
    limited = np.array([bool(model.jnt_limited[j]) for j in joint_ids])
    lower = np.where(limited, [model.jnt_range[j, 0] for j in joint_ids], -np.inf)
    upper = np.where(limited, [model.jnt_range[j, 1] for j in joint_ids], np.inf)
    return {
        "robot": robot.name,
        "joint_names": list(robot.joint_names),
        "joint_stiffness": np.asarray(robot.stiffness, dtype=np.float64),
        "joint_damping": np.asarray(robot.damping, dtype=np.float64),
        "joint_effort_limit": np.asarray(robot.effort_limit, dtype=np.float64),
        "joint_pos_lower": lower.astype(np.float64),
        "joint_pos_upper": upper.astype(np.float64),
        "default_joint_pos": np.asarray(robot.default_joint_pos, dtype=np.float64),
        "action_scale": np.asarray(robot.action_scale, dtype=np.float64),
        "observation_names": [t.name for t in terms],
        "observation_sizes": [t.size for t in terms],
        "observation_offsets": [t.offset for t in terms],
        "observation_terms_scale": [float(t.scale) for t in terms],
        "observation_terms_clip": [f"{t.clip[0]!r};{t.clip[1]!r}" for t in terms],
        "observation_terms_history_length": [int(t.history_length) for t in terms],
        "observation_terms_flatten_history_dim": [int(t.flatten_history_dim) for t in terms],
        "num_observations": sum(t.size for t in terms),
        "num_actions": robot.num_joints,
        "run_path": f"{policy.run_dir.parent.name}/{policy.run_dir.name}",
    }


def run_metadata(policy: TrainedPolicy) -> dict[str, Any]:
    """The run keys: which checkpoint of which run the graph holds (``checkpoint_digest`` and
    ``run_id`` let sim2sim.json and the report tell a bundle of the run's current policy from an
    older one, train/provenance.py)."""
    return {
        "task": policy.config.task,
        "checkpoint": policy.checkpoint.name,
        "iteration": policy.iteration,
        "checkpoint_digest": policy.digest,
        "run_id": policy.run_id or "",
        "primebot_version": __version__,
    }


def bake_action_offset(metadata: dict[str, Any]) -> dict[str, Any]:
    """``--format mjlab``: the metadata of a graph whose actions are relative to the default pose.

    mjlab's deploy code computes target = default_joint_pos + action_scale · actions and reads no
    ``action_offset``. A policy trained relative to the reference (``reference_joint_pos``, or
    ``reference_servo_target``) gets ``action_offset: default_joint_pos`` and
    ``action_offset_baked``: the offset it was trained with; its graph
    (``graph.DefaultOffsetPolicy``) adds that offset inside. Other metadata is returned as it is.
    """
    trained = metadata.get("action_offset")
    if trained not in REFERENCE_OFFSETS:
        return metadata
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        out[key] = ACTION_OFFSET_DEFAULT if key == "action_offset" else value
        if key == "action_offset":
            out[ACTION_OFFSET_BAKED] = trained
    return out
