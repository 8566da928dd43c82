"""``primebot export``: a run's policy → export/policy.onnx, export/deploy.yaml and the motion beside them.

The ONNX file is accepted only when onnxruntime (CPU) reproduces PyTorch
within ``PARITY_ATOL`` at batch 1 and batch 64 on observations recorded from
rollouts of the policy in the run's own task environment; otherwise nothing
replaces ``policy.onnx``, the rejected graph is kept as
``policy.rejected.onnx`` and an ``ExportError`` says by how much they differ.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from . import __version__
from .atomic import atomic_path, atomic_write_text
from .errors import ExportError
from .evaluate import require_tracking_env
from .motion import file_sha256
from .onnx_export import (
    PARITY_ATOL,
    DeployPolicy,
    motion_at_control_rate,
    observation_layout,
    onnx_latency,
    parity,
    parity_failures,
    write_onnx,
)
from .registry import Registry
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
    motion_path: Path
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
        "task": policy.config.task,
        "checkpoint": policy.checkpoint.name,
        "iteration": policy.iteration,
        "primebot_version": __version__,
    }


def _threshold(value) -> str | float:
    return "none" if value is None else float(value)


def record_observations(env: Any, policy: TrainedPolicy, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and reference steps [steps·N, O], [steps·N] met by the deterministic policy."""
    obs, _ = env.reset()
    rows, times = [], []
    for _ in range(steps):
        rows.append(obs.copy())
        times.append(np.asarray(env.time_steps).copy())
        obs = env.step(policy.act(obs)).obs
    return np.concatenate(rows), np.concatenate(times)


def deploy_document(metadata: dict[str, Any], motion_file: str, onnx_sha256: str) -> dict[str, Any]:
    """deploy.yaml: what robot-side code needs besides the ONNX file, in plain YAML."""
    names = metadata["joint_names"]
    floats = lambda key: [float(v) for v in metadata[key]]  # noqa: E731 - local shorthand
    layout = [
        {"name": n, "offset": int(o), "size": int(s)}
        for n, o, s in zip(metadata["observation_names"], metadata["observation_offsets"],
                           metadata["observation_sizes"], strict=True)
    ]
    return {
        "robot": metadata["robot"],
        "policy": {"onnx": ONNX_FILE, "sha256": onnx_sha256, "inputs": ["obs", "time_step"],
                   "outputs": ["actions", "joint_pos", "joint_vel", "body_pos_w", "body_quat_w",
                               "body_lin_vel_w", "body_ang_vel_w"]},
        "control": {"period_s": float(metadata["control_dt"]), "rate_hz": float(metadata["fps"]),
                    "target": "joint_pos = default_joint_pos + action_scale * actions",
                    "torque": "tau = kp * (joint_pos_target - q) - kd * qd, clipped to +-effort_limit"},
        "joints": [
            {"name": n, "kp": kp, "kd": kd, "effort_limit": eff, "default_pos": d, "action_scale": s}
            for n, kp, kd, eff, d, s in zip(names, floats("joint_stiffness"), floats("joint_damping"),
                                            floats("joint_effort_limit"), floats("default_joint_pos"),
                                            floats("action_scale"), strict=True)
        ],
        "observation": {"size": int(metadata["num_observations"]), "layout": layout},
        "anchor_body": metadata["anchor_body_name"],
        "motion": {"file": motion_file, "steps": int(metadata["motion_num_steps"]),
                   "duration_s": round((int(metadata["motion_num_steps"]) - 1) * float(metadata["control_dt"]), 9),
                   "sha256": metadata["motion_sha256"]},
        "primebot_version": metadata["primebot_version"],
    }


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
    # Uniform start frames spread the recorded observations over the whole motion.
    env = make_run_env(registry, policy, num_envs, seed=policy.config.seed, overrides={"sampling": {"mode": "uniform"}})
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
    rejected = out_dir / "policy.rejected.onnx"
    candidate = write_onnx(module, out_dir / ".policy.candidate.onnx", policy.num_obs, metadata)
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
    latency = onnx_latency(onnx_path, policy.num_obs, repeats=latency_repeats)

    motion_copy = out_dir / Path(str(motion.source)).name
    with atomic_path(motion_copy) as tmp:
        shutil.copyfile(motion.source, tmp)
    deploy = deploy_document(metadata, motion_copy.name, file_sha256(onnx_path))
    deploy_path = out_dir / DEPLOY_FILE
    atomic_write_text(deploy_path, yaml.safe_dump(deploy, sort_keys=False))
    atomic_write_text(out_dir / REPORT_FILE, json.dumps({
        "onnx": str(onnx_path), "checkpoint": str(policy.checkpoint), "iteration": policy.iteration,
        "parity_atol": atol, "parity_max_abs_diff": {str(b): d for b, d in report.items()},
        "parity_observations": int(len(obs)), "latency_batch1_onnxruntime_cpu": latency,
        "size_bytes": onnx_path.stat().st_size,
    }, indent=2))
    return ExportResult(onnx_path, deploy_path, motion_copy, report, latency, metadata)
