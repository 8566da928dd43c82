"""What ``primebot export`` writes for the tracking task (the ``export_metadata`` of the tracking
TaskSpec).

The core's export (``pipeline/export/``) writes the robot and run keys and
the graph; this module gives the task's part, read from the run's tracking
environment so the metadata describes exactly what the policy was trained
against: the observation terms, what an action means, the motion (inside
the graph, and its keys), the bodies and their roles, the rates and the
termination thresholds (docs/deploy.md lists every key).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from primebot.pipeline.api import (
    ACTION_OFFSET_DEFAULT,
    ExportError,
    Motion,
    TaskExport,
    metadata_threshold,
)


def _names(model: mujoco.MjModel, ids) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in ids]


def export_metadata(env: Any, motion: Motion, arrays: dict[str, np.ndarray], *,
                    tracked_bodies_only: bool = False) -> TaskExport:
    """The tracking task's export: observation terms, metadata keys and the motion in the graph.

    ``arrays``: the motion per control step (all bodies, MuJoCo order), which
    must be what the env tracks. ``tracked_bodies_only`` (``--format mjlab``)
    cuts the motion outputs' body axis to the tracked bodies.
    """
    if not np.allclose(env.reference.joint_pos, arrays["joint_pos"], atol=1e-6):
        raise ExportError("the motion inside the ONNX differs from the one the task tracks "
                          "(resampling mismatch)")
    robot, tm = env.robot, env.model_info
    idx = tm.indices
    body_names = list(idx.body_names)
    if tracked_bodies_only:
        arrays, body_names = _tracked_bodies_only(env, arrays)
    if getattr(env, "servo_target", None) is not None:
        # the zero action's targets per step, an output of the graph (docs/deploy.md)
        arrays = {**arrays, "servo_target": np.asarray(env.servo_target, dtype=np.float32)}
    thresholds = getattr(env, "termination_thresholds", {})
    metadata = {
        # what an action means: joint target = offset + action_scale * actions (docs/deploy.md)
        "action_offset": getattr(env, "action_offset", ACTION_OFFSET_DEFAULT),
        "action_scale": np.asarray(getattr(env, "action_scale", robot.action_scale),
                                   dtype=np.float64),
        "action_scale_factor": float(getattr(env, "action_scale_factor", 1.0)),
        "command_names": ["motion"],
        "anchor_body_name": robot.anchor_body,
        "root_body_name": _names(tm.model, [idx.root_body_id])[0],
        "body_names": body_names,
        "tracked_body_names": _names(tm.model, idx.tracked_body_ids),
        "end_effector_body_names": list(robot.end_effector_bodies),
        "fps": 1.0 / env.step_dt,
        "control_dt": float(env.step_dt),
        "training_physics_dt": float(env.sim.physics_dt),
        "motion_num_steps": int(len(arrays["joint_pos"])),
        "max_episode_steps": int(env.max_episode_length),
        "motion_sha256": motion.sha256,
        "termination_anchor_height": metadata_threshold(thresholds.get("anchor_height")),
        "termination_anchor_orientation": metadata_threshold(thresholds.get("anchor_orientation")),
        "termination_end_effector_height": metadata_threshold(
            thresholds.get("end_effector_height")
        ),
    }
    return TaskExport(env.observation_terms, metadata, arrays,
                      reference_steps=lambda: env.time_steps,
                      observation_history=env.observation_history)


def _tracked_bodies_only(env: Any,
                         arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The motion's body axis cut to the tracked bodies (mjlab's layout); root, anchor and end
    effectors must be among them, since the deploy loop reads them from the reference."""
    tm = env.model_info
    tracked = _names(tm.model, tm.indices.tracked_body_ids)
    needed = [env.robot.anchor_body, _names(tm.model, [tm.indices.root_body_id])[0],
              *env.robot.end_effector_bodies]
    missing = sorted(set(needed) - set(tracked))
    if missing:
        raise ExportError(f"--format mjlab keeps the tracked bodies only, but {', '.join(missing)} "
                          "(root, anchor or end effector) is not tracked",
                          fix="export without --format mjlab, or track those bodies")
    columns = [list(tm.indices.body_names).index(b) for b in tracked]
    return {k: (v[:, columns] if k.startswith("body_") else v) for k, v in arrays.items()}, tracked
