"""``primebot export``: a run's policy → export/policy.onnx, export/deploy.yaml and the motion beside them.

The ONNX file is accepted only when onnxruntime (CPU) reproduces PyTorch
within ``PARITY_ATOL`` at batch 1 and batch 64 on observations recorded from
rollouts of the policy in the run's own task environment; otherwise nothing
replaces ``policy.onnx``, the rejected graph is kept as
``policy.rejected.onnx`` and an ``ExportError`` says by how much they differ.

What is exported follows the task's ``TaskSpec.export_kind``: the tracking
policy with its reference motion inside (DESIGN §7, the motion file beside
it), or, for a task that tracks no motion (walk), the policy alone (input
``obs``, output ``actions``) with the same robot metadata and no motion.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from . import __version__
from .atomic import atomic_path, atomic_write_text
from .errors import ExportError
from .evaluate import require_tracking_env
from .motion import file_sha256
from .onnx_export import (
    INPUT_NAMES,
    OUTPUT_NAMES,
    PARITY_ATOL,
    ActionPolicy,
    DeployPolicy,
    motion_at_control_rate,
    observation_layout,
    onnx_latency,
    parity,
    parity_failures,
    write_onnx,
)
from .registry import Registry
from .tasks import ACTION_OFFSET_DEFAULT, ACTION_TARGET_FORMULA, EXPORT_POLICY
from .trained_policy import TrainedPolicy, load_trained_policy, make_run_env

log = logging.getLogger(__name__)

EXPORT_DIR = "export"
ONNX_FILE = "policy.onnx"
DEPLOY_FILE = "deploy.yaml"
REPORT_FILE = "export.json"
PARITY_BATCHES = (1, 64)


@dataclass
class ExportResult:
    """What ``export_run`` wrote and measured."""

    onnx_path: Path
    deploy_path: Path
    motion_path: Path | None
    """The motion copied beside the ONNX; ``None`` for a policy that tracks no motion."""
    parity: dict[int, dict[str, float]]
    latency: dict[str, float]
    metadata: dict[str, Any] = field(default_factory=dict)

    def max_difference(self) -> float:
        return max(max(d.values()) for d in self.parity.values())


def _names(model, ids) -> list[str]:
    import mujoco

    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in ids]


def deploy_metadata(env: Any, policy: TrainedPolicy, num_motion_steps: int, motion_sha256: str) -> dict[str, Any]:
    """The ONNX ``metadata_props`` (DESIGN §7 keys plus layout, timing and failure thresholds).

    ``env`` is the run's tracking environment: the robot spec, observation
    layout, indices and thresholds are read from it so the metadata describes
    exactly what the policy was trained against.
    """
    robot, tm = env.robot, env.model_info
    terms = observation_layout(env.observations.policy.terms)
    idx = tm.indices
    thresholds = getattr(env, "termination_thresholds", {})
    tracked = _names(tm.model, idx.tracked_body_ids)
    return {
        **_robot_metadata(robot, terms),
        # what an action means: joint target = offset + action_scale * actions (docs/deploy.md)
        "action_offset": getattr(env, "action_offset", ACTION_OFFSET_DEFAULT),
        "action_scale": np.asarray(getattr(env, "action_scale", robot.action_scale), dtype=np.float64),
        "anchor_body_name": robot.anchor_body,
        "root_body_name": _names(tm.model, [idx.root_body_id])[0],
        "body_names": list(idx.body_names),
        "tracked_body_names": tracked,
        "end_effector_body_names": list(robot.end_effector_bodies),
        "fps": 1.0 / env.step_dt,
        "control_dt": float(env.step_dt),
        "training_physics_dt": float(env.sim.physics_dt),
        "motion_num_steps": int(num_motion_steps),
        "max_episode_steps": int(env.max_episode_length),
        "motion_sha256": motion_sha256,
        "termination_anchor_height": _threshold(thresholds.get("anchor_height")),
        "termination_anchor_orientation": _threshold(thresholds.get("anchor_orientation")),
        "termination_end_effector_height": _threshold(thresholds.get("end_effector_height")),
        **_run_metadata(policy),
    }


def policy_metadata(env: Any, policy: TrainedPolicy) -> dict[str, Any]:
    """The ``metadata_props`` of a policy that tracks no motion (``export_kind: policy``).

    The robot keys are those of ``deploy_metadata``; the observation is the
    env's ``observation_names``, one value each; no motion, anchor or body keys.
    """
    names = list(getattr(env, "observation_names", None) or ())
    if len(names) != env.num_obs:
        raise ExportError(
            f"task {policy.config.task!r} names {len(names)} observations but its policy takes {env.num_obs}",
            fix="give the task's env an observation_names tuple, one name per observation value",
        )
    robot = env.robot
    return {
        **_robot_metadata(robot, observation_layout([(name, 1) for name in names])),
        "export_kind": EXPORT_POLICY,
        "root_body_name": robot.root_body or robot.anchor_body,
        "base_joint_names": list(robot.extra.get("root_joints", ())) or "free",
        "fps": 1.0 / env.step_dt,
        "control_dt": float(env.step_dt),
        "training_physics_dt": float(env.sim.physics_dt),
        "max_episode_steps": int(env.max_episode_length),
        # how training ended episodes and bounded actions, where the env says (walk: the fall, ±1)
        "action_clip": _threshold(getattr(env, "action_clip", None)),
        **{f"termination_{key}": _threshold(value)
           for key, value in (getattr(env, "termination_thresholds", None) or {}).items()},
        **_run_metadata(policy),
    }


def _robot_metadata(robot: Any, terms: list) -> dict[str, Any]:
    """Joint order, gains, pose, action scale and observation layout (both export kinds)."""
    return {
        "robot": robot.name,
        "joint_names": list(robot.joint_names),
        "joint_stiffness": np.asarray(robot.stiffness, dtype=np.float64),
        "joint_damping": np.asarray(robot.damping, dtype=np.float64),
        "joint_effort_limit": np.asarray(robot.effort_limit, dtype=np.float64),
        "default_joint_pos": np.asarray(robot.default_joint_pos, dtype=np.float64),
        "action_scale": np.asarray(robot.action_scale, dtype=np.float64),
        "observation_names": [t.name for t in terms],
        "observation_sizes": [t.size for t in terms],
        "observation_offsets": [t.offset for t in terms],
        "num_observations": sum(t.size for t in terms),
        "num_actions": robot.num_joints,
    }


def _run_metadata(policy: TrainedPolicy) -> dict[str, Any]:
    return {
        "task": policy.config.task,
        "checkpoint": policy.checkpoint.name,
        "iteration": policy.iteration,
        "primebot_version": __version__,
    }


def _threshold(value) -> str | float:
    return "none" if value is None else float(value)


def record_observations(env: Any, policy: TrainedPolicy, steps: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Observations and reference steps [steps·N, O], [steps·N] met by the deterministic policy
    (steps ``None`` for an env without a reference clock, ``time_steps``)."""
    obs, _ = env.reset()
    clock = hasattr(env, "time_steps")
    rows, times = [], []
    for _ in range(steps):
        rows.append(obs.copy())
        if clock:
            times.append(np.asarray(env.time_steps).copy())
        obs = env.step(policy.act(obs)).obs
    return np.concatenate(rows), (np.concatenate(times) if clock else None)


def deploy_document(metadata: dict[str, Any], motion_file: str | None, onnx_sha256: str) -> dict[str, Any]:
    """deploy.yaml: what robot-side code needs besides the ONNX file, in plain YAML.

    ``motion_file`` ``None``: a policy that tracks no motion (input obs, output actions).
    """
    names = metadata["joint_names"]
    floats = lambda key: [float(v) for v in metadata[key]]  # noqa: E731 - local shorthand
    layout = [
        {"name": n, "offset": int(o), "size": int(s)}
        for n, o, s in zip(metadata["observation_names"], metadata["observation_offsets"],
                           metadata["observation_sizes"], strict=True)
    ]
    tracking = motion_file is not None
    document = {
        "robot": metadata["robot"],
        "policy": {"onnx": ONNX_FILE, "sha256": onnx_sha256,
                   "inputs": list(INPUT_NAMES if tracking else ActionPolicy.input_names),
                   "outputs": list(OUTPUT_NAMES if tracking else ActionPolicy.output_names)},
        "control": {"period_s": float(metadata["control_dt"]), "rate_hz": float(metadata["fps"]),
                    "action_offset": metadata.get("action_offset", ACTION_OFFSET_DEFAULT),
                    "target": ACTION_TARGET_FORMULA[metadata.get("action_offset", ACTION_OFFSET_DEFAULT)],
                    "torque": "tau = kp * (joint_pos_target - q) - kd * qd, clipped to +-effort_limit"},
        "joints": [
            {"name": n, "kp": kp, "kd": kd, "effort_limit": eff, "default_pos": d, "action_scale": s}
            for n, kp, kd, eff, d, s in zip(names, floats("joint_stiffness"), floats("joint_damping"),
                                            floats("joint_effort_limit"), floats("default_joint_pos"),
                                            floats("action_scale"), strict=True)
        ],
        "observation": {"size": int(metadata["num_observations"]), "layout": layout},
    }
    if tracking:
        document["anchor_body"] = metadata["anchor_body_name"]
        document["motion"] = {
            "file": motion_file, "steps": int(metadata["motion_num_steps"]),
            "duration_s": round((int(metadata["motion_num_steps"]) - 1) * float(metadata["control_dt"]), 9),
            "sha256": metadata["motion_sha256"],
        }
    else:
        document["base_joints"] = metadata["base_joint_names"]
    document["primebot_version"] = metadata["primebot_version"]
    return document


def export_run(
    registry: Registry,
    run_dir: str | Path,
    checkpoint: str | Path | None = None,
    *,
    num_envs: int = 64,
    rollout_steps: int = 6,
    atol: float = PARITY_ATOL,
    latency_repeats: int = 300,
) -> ExportResult:
    """Export the run's policy; raise ``ExportError`` (nothing replaced) when parity fails."""
    run_dir = Path(run_dir)
    out_dir = run_dir / EXPORT_DIR
    policy = load_trained_policy(run_dir, checkpoint)
    if registry.get("tasks", policy.config.task).export_kind == EXPORT_POLICY:
        # Reset noise where the task has it: otherwise every env starts from the same state
        # and the parity check would see num_envs copies of one observation.
        env = make_run_env(registry, policy, num_envs, seed=policy.config.seed,
                           overrides={"randomization": {"enabled": True}})
        try:
            metadata = policy_metadata(env, policy)
            obs, steps = record_observations(env, policy, rollout_steps)
        finally:
            env.close()
        module: torch.nn.Module = ActionPolicy(policy.actor, policy.obs_normalizer).eval()
        motion = None
    else:
        # Uniform start frames spread the recorded observations over the whole motion.
        env = make_run_env(registry, policy, num_envs, seed=policy.config.seed,
                           overrides={"sampling": {"mode": "uniform"}})
        try:
            require_tracking_env(env, policy.config.task)
            motion = policy.motion()
            arrays = motion_at_control_rate(motion, env.step_dt)
            if not np.allclose(env.reference.joint_pos, arrays["joint_pos"], atol=1e-6):
                raise ExportError("the motion inside the ONNX differs from the one the task tracks (resampling mismatch)")
            metadata = deploy_metadata(env, policy, len(arrays["joint_pos"]), motion.sha256)
            obs, steps = record_observations(env, policy, rollout_steps)
        finally:
            env.close()
        module = DeployPolicy(policy.actor, policy.obs_normalizer, arrays).eval()

    onnx_path, report = _write_checked(module, out_dir, policy.num_obs, metadata, obs, steps, atol)
    latency = onnx_latency(onnx_path, policy.num_obs, repeats=latency_repeats)
    motion_copy = None
    if motion is not None:
        motion_copy = out_dir / Path(str(motion.source)).name
        with atomic_path(motion_copy) as tmp:
            shutil.copyfile(motion.source, tmp)
    deploy = deploy_document(metadata, motion_copy.name if motion_copy else None, file_sha256(onnx_path))
    deploy_path = out_dir / DEPLOY_FILE
    atomic_write_text(deploy_path, yaml.safe_dump(deploy, sort_keys=False))
    atomic_write_text(out_dir / REPORT_FILE, json.dumps({
        "onnx": str(onnx_path), "checkpoint": str(policy.checkpoint), "iteration": policy.iteration,
        "parity_atol": atol, "parity_max_abs_diff": {str(b): d for b, d in report.items()},
        "parity_observations": int(len(obs)), "latency_batch1_onnxruntime_cpu": latency,
        "size_bytes": onnx_path.stat().st_size,
    }, indent=2))
    return ExportResult(onnx_path, deploy_path, motion_copy, report, latency, metadata)


def _write_checked(module: torch.nn.Module, out_dir: Path, num_obs: int, metadata: dict[str, Any], obs: np.ndarray,
                   steps: np.ndarray | None, atol: float) -> tuple[Path, dict[int, dict[str, float]]]:
    """Write ``policy.onnx`` only if onnxruntime reproduces ``module`` on ``obs`` at PARITY_BATCHES."""
    rejected = out_dir / "policy.rejected.onnx"
    candidate = write_onnx(module, out_dir / ".policy.candidate.onnx", num_obs, metadata)
    report = parity(module, candidate, obs, steps, PARITY_BATCHES)
    failures = parity_failures(report, atol)
    if failures:
        candidate.replace(rejected)
        raise ExportError(
            "onnxruntime does not reproduce PyTorch on recorded observations:\n    " + "\n    ".join(failures)
            + f"\n  the rejected graph is {rejected}; {out_dir / ONNX_FILE} was not replaced",
            fix="check for ops that differ between torch and onnxruntime (report it with the file)",
        )
    onnx_path = out_dir / ONNX_FILE
    candidate.replace(onnx_path)
    rejected.unlink(missing_ok=True)
    return onnx_path, report
