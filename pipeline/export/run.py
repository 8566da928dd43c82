"""``primebot export``: a run's policy → the deploy bundle ``RUN_DIR/export/`` (docs/deploy.md).

The bundle: ``policy.onnx``; the robot model it was trained on, copied byte
for byte with its assets (``robot/``); the motion; ``deploy.yaml`` (every
metadata key, plus bodies and their roles, thresholds, rates, IMU frame and
the observation layout); ``README.md``; optionally ``policy_fp16.onnx``.
``python -m primebot.pipeline.bundle RUN_DIR/export`` runs it without torch.

The ONNX file is accepted only when onnxruntime (CPU) reproduces PyTorch
within ``PARITY_ATOL`` at batch 1 and batch 64 (batch 1 only for a static
batch) on observations recorded from rollouts of the policy in the run's own
task environment; otherwise nothing replaces ``policy.onnx``, the rejected
graph is kept as ``policy.rejected.onnx`` and an ``ExportError`` says by how
much they differ. The fp16 variant (``fp16=True``) is accepted only when its
actions are within ``FP16_ACTIONS_ATOL`` of the fp32 PyTorch policy, its
reference outputs within ``PARITY_ATOL``, and a closed-loop sim2sim on the
bundled MJCF ends no more episodes in a fall than the fp32 file and tracks
as well (``closed_loop_gate``).

What is exported follows the task's ``TaskSpec.export_kind``: the tracking
policy with its reference motion inside (the motion file beside it), or, for
a task that tracks no motion (walk), the policy alone (input ``obs``, output
``actions``) with the same robot metadata and no motion. ``export_format``
``mjlab`` writes the reference's body axis for the tracked bodies only, with
a static batch of 1 and opset 18, as mjlab's tracking exporter does; the
mjlab metadata keys are written in both formats.
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

from .. import __version__
from ..atomic import atomic_path, atomic_write_text
from ..deploy.bundle import DEPLOY_FILE, README_FILE, BundledModel, bundle_mjcf
from ..deploy.policy import parse_clip
from ..errors import ExportError
from ..motion.format import file_sha256
from ..registry import Registry
from ..robot.spec import compile_mjcf
from ..rundir import EVAL_FILE, EXPORT_DIR
from ..sim.task import (
    ACTION_OFFSET_DEFAULT,
    ACTION_TARGET_FORMULA,
    EXPORT_POLICY,
    require_tracking_env,
)
from ..train.policy import TrainedPolicy, load_trained_policy, make_run_env
from .graph import (
    INPUT_NAMES,
    MOTION_OUTPUTS,
    OPSET,
    OUTPUT_NAMES,
    PARITY_ATOL,
    ActionPolicy,
    DeployPolicy,
    HalfActor,
    motion_at_control_rate,
    observation_layout,
    onnx_latency,
    parity,
    parity_failures,
    write_onnx,
)

log = logging.getLogger(__name__)

ONNX_FILE = "policy.onnx"
FP16_ONNX_FILE = "policy_fp16.onnx"
REPORT_FILE = "export.json"
PARITY_BATCHES = (1, 64)
EXPORT_FORMATS = ("primebot", "mjlab")
MJLAB_OPSET = 18
"""mjlab's tracking exporter: opset 18, a static batch of 1, the tracked bodies only."""
FP16_ACTIONS_ATOL = 0.05
"""fp16 actions may differ from the fp32 PyTorch policy's by this much (action units; × action_scale in rad)."""
FP16_MPKPE_TOLERANCE_M = 0.01
"""Closed loop: the fp16 file's MPKPE may exceed the fp32 file's by this much (tracking)."""
FP16_SPEED_TOLERANCE_M_S = 0.05
"""Closed loop: the fp16 file's forward speed may differ from the fp32 file's by this much (walk)."""
FP16_CLOSED_LOOP_STARTS = 8
"""At most this many start steps (eval.json's first ones) for the fp16 closed-loop check."""
BUNDLE_FORMAT = "primebot-deploy-bundle/1"


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
    mjcf: BundledModel | None = None
    fp16: dict[str, Any] | None = None
    """The fp16 variant's path, parity, closed-loop figures and latency (``None`` when not asked for)."""

    def max_difference(self) -> float:
        return max(max(d.values()) for d in self.parity.values())


def _names(model, ids) -> list[str]:
    import mujoco

    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in ids]


def deploy_metadata(env: Any, policy: TrainedPolicy, num_motion_steps: int, motion_sha256: str,
                    body_names: list[str] | None = None) -> dict[str, Any]:
    """The ONNX ``metadata_props`` of a tracking policy (docs/deploy.md lists every key).

    ``env`` is the run's tracking environment: the robot spec, observation
    layout, indices and thresholds are read from it so the metadata describes
    exactly what the policy was trained against. ``body_names``: the motion
    outputs' body axis (default: every body, MuJoCo order).
    """
    robot, tm = env.robot, env.model_info
    terms = observation_layout(env.observations.policy.terms)
    idx = tm.indices
    thresholds = getattr(env, "termination_thresholds", {})
    tracked = _names(tm.model, idx.tracked_body_ids)
    return {
        **_robot_metadata(robot, terms, policy),
        # what an action means: joint target = offset + action_scale * actions (docs/deploy.md)
        "action_offset": getattr(env, "action_offset", ACTION_OFFSET_DEFAULT),
        "action_scale": np.asarray(getattr(env, "action_scale", robot.action_scale), dtype=np.float64),
        "action_scale_factor": float(getattr(env, "action_scale_factor", 1.0)),
        "command_names": ["motion"],
        "anchor_body_name": robot.anchor_body,
        "root_body_name": _names(tm.model, [idx.root_body_id])[0],
        "body_names": list(idx.body_names) if body_names is None else list(body_names),
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
        **_robot_metadata(robot, observation_layout([(name, 1) for name in names]), policy),
        "command_names": [],
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


def _robot_metadata(robot: Any, terms: list, policy: TrainedPolicy) -> dict[str, Any]:
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


TIME_STEP_RULE = ("float32 [B, 1], the reference step (policy steps since the motion's first frame); "
                  "NaN reads step 0, values are clamped to [0, motion_num_steps - 1] (-inf: 0, +inf and past "
                  "the end: the last frame), fractions are truncated; exact for integers below 2^24")
TERMINATION_MEANINGS = {
    "anchor_height": "a fall: |z_anchor - z_ref_anchor| above this (m), anchor = anchor_body",
    "anchor_orientation": "a fall: |g_z - g_z_ref| above this, g_z = z of gravity in the anchor frame "
                          "(tilt, not heading)",
    "end_effector_height": "a failure: any end effector's |z - z_ref| above this (m)",
    "min_height": "a fall: the root body below this height (m)",
    "max_pitch": "a fall: |base pitch| above this (rad)",
}


def _plain(value: Any) -> Any:
    """A metadata value as plain YAML (lists, floats, ints, strings) that ``format_value`` writes back exactly."""
    if isinstance(value, np.ndarray):
        return [float(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return str(value)


def deploy_document(metadata: dict[str, Any], files: dict[str, Any], *, static_batch: bool, opset: int,
                    export_format: str, start_steps: list[int]) -> dict[str, Any]:
    """deploy.yaml: every metadata key (``metadata``, values as the ONNX has them) and, derived from them,
    what robot-side code configures: files and hashes, I/O, rates, joints, bodies and roles, IMU frame,
    observation layout, termination thresholds and how an episode starts.

    ``files``: role → ``{file, sha256, ...}`` of the bundle's files.
    """
    m = metadata
    tracking = "motion_num_steps" in m
    floats = lambda key: [float(v) for v in m[key]]  # noqa: E731 - local shorthand
    layout = [
        {"name": n, "offset": int(o), "size": int(s), "scale": float(sc),
         "clip": list(parse_clip(c)), "history_length": int(h), "flatten_history_dim": bool(f)}
        for n, o, s, sc, c, h, f in zip(m["observation_names"], m["observation_offsets"], m["observation_sizes"],
                                         m["observation_terms_scale"], m["observation_terms_clip"],
                                         m["observation_terms_history_length"],
                                         m["observation_terms_flatten_history_dim"], strict=True)
    ]
    inputs, outputs = (INPUT_NAMES, OUTPUT_NAMES) if tracking else (ActionPolicy.input_names,
                                                                       ActionPolicy.output_names)
    root = m["root_body_name"]
    document: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "robot": m["robot"],
        "files": files,
        "policy": {
            "inputs": list(inputs), "outputs": list(outputs),
            "bind_outputs_by": "name (the order of the outputs is not part of the contract)",
            "dtype": "float32 (inputs and outputs; policy_fp16 computes in float16 inside)",
            "batch": 1 if static_batch else "dynamic", "opset": opset, "export_format": export_format,
            **({"time_step": TIME_STEP_RULE} if tracking else {}),
        },
        "control": {
            "period_s": float(m["control_dt"]), "rate_hz": float(m["fps"]),
            "training_physics_dt": float(m["training_physics_dt"]),
            "max_episode_steps": int(m["max_episode_steps"]),
            "action_offset": m.get("action_offset", ACTION_OFFSET_DEFAULT),
            "action_to_target": ACTION_TARGET_FORMULA[m.get("action_offset", ACTION_OFFSET_DEFAULT)]
            + ("" if tracking else f" after clipping actions to +-{m['action_clip']}, then clipped to "
               "[joint_pos_lower, joint_pos_upper]"),
            "torque": "tau = kp * (joint_pos_target - q) - kd * qd, clipped to +-effort_limit",
        },
        "joints": [
            {"name": n, "kp": kp, "kd": kd, "effort_limit": eff, "default_pos": d, "action_scale": sc,
             "lower": lo, "upper": hi}
            for n, kp, kd, eff, d, sc, lo, hi in zip(
                m["joint_names"], floats("joint_stiffness"), floats("joint_damping"), floats("joint_effort_limit"),
                floats("default_joint_pos"), floats("action_scale"), floats("joint_pos_lower"),
                floats("joint_pos_upper"), strict=True)
        ],
        "imu": {
            "body": root,
            "orientation": f"world orientation of {root} (w x y z)"
            + (f"; the anchor's ({m['anchor_body_name']}) follows by forward kinematics of the joint encoders"
               if tracking else ""),
            "gyro": f"angular velocity of {root} in {root}'s own frame, rad/s",
            "frame": f"{root}'s body frame as in the bundled MJCF; an IMU mounted elsewhere or rotated must be "
                     "transformed into it first (docs/deploy.md, 'The IMU')",
        },
        "observation": {"size": int(m["num_observations"]), "layout": layout},
        "termination": {
            key.removeprefix("termination_"): {
                "threshold": None if value == "none" else float(value),
                "meaning": TERMINATION_MEANINGS.get(key.removeprefix("termination_"), "see docs/tasks.md"),
            }
            for key, value in m.items() if key.startswith("termination_")
        },
    }
    if tracking:
        document["bodies"] = {
            "root": root, "anchor": m["anchor_body_name"],
            "motion_outputs": list(m["body_names"]),
            "tracked": list(m["tracked_body_names"]), "end_effectors": list(m["end_effector_body_names"]),
        }
        document["episode_start"] = (
            "the robot in the reference state of the start step (root pose and velocity, joint positions and "
            "velocities), time_step = that step, last action zero; on hardware: start at step 0 after blending "
            "to its reference pose. Metrics at policy step t compare the state after the step with the "
            "reference at t + 1. The episode ends at max_episode_steps, at the motion's last step, or on a "
            "termination.")
        document["reference_check"] = {
            "runner": "python -m primebot.pipeline.bundle .",
            "start_steps": [int(s) for s in start_steps],
        }
    else:
        document["base_joints"] = m["base_joint_names"]
        document["episode_start"] = ("the default pose (the MJCF's first keyframe), last action zero; the "
                                     "episode ends at max_episode_steps or on a termination")
        document["reference_check"] = {"runner": "python -m primebot.pipeline.bundle ."}
    document["metadata"] = {key: _plain(value) for key, value in metadata.items()}
    document["primebot_version"] = m["primebot_version"]
    return document


def bundle_readme(document: dict[str, Any]) -> str:
    """README.md of the bundle: what each file is and how to run it, for the robot engineer."""
    files = document["files"]
    tracking = "motion" in files
    lines = [
        f"# {document['robot']} policy: deploy bundle",
        "",
        f"Exported by primebot {document['primebot_version']} from run `{document['metadata']['run_path']}` "
        f"(checkpoint `{document['metadata']['checkpoint']}`). The full contract is docs/deploy.md in the "
        "primebot repository; `deploy.yaml` holds every value named here.",
        "",
        "| file | what |",
        "|---|---|",
        f"| `{files['policy']['file']}` | the policy (float32), inputs {', '.join(document['policy']['inputs'])}; "
        "outputs bound by name |",
    ]
    if "policy_fp16" in files:
        lines.append(f"| `{files['policy_fp16']['file']}` | the same policy computing in float16 (float32 I/O), "
                     "checked against the fp32 one in closed loop |")
    lines.append(f"| `{files['mjcf']['file']}` | the robot model it was trained on, byte for byte "
                 f"(SHA-256 `{files['mjcf']['sha256'][:16]}…`); training replaced its actuators' kp/kd by "
                 "`deploy.yaml`'s exact values |")
    if tracking:
        lines.append(f"| `{files['motion']['file']}` | the reference motion (also inside the ONNX) |")
    lines += [
        "| `deploy.yaml` | every ONNX metadata key, plus joints, bodies, IMU frame, observation layout, "
        "thresholds |",
        "",
        "## Check it on this computer (no torch needed)",
        "",
        "```",
        "pip install numpy mujoco onnxruntime pyyaml",
        "pip install --no-deps /path/to/primebot       # the runner needs none of primebot's training dependencies",
        "python -m primebot.pipeline.bundle .          # verifies the SHA-256s, runs the policy on the MJCF",
        "```",
        "",
        "## On the robot",
        "",
        f"- every {document['control']['period_s'] * 1000:g} ms: build `obs` in the `observation.layout` "
        "order, run the policy, bind outputs by name;",
        f"- {document['control']['action_to_target']}; send it per joint, by name, with kp and kd from "
        f"`joints`; the joint HAL closes {document['control']['torque']};",
        f"- IMU ({document['imu']['body']}): {document['imu']['frame']};",
        f"- episode start: {document['episode_start']}",
        "",
        "TensorRT has not been run on this file by primebot (no NVIDIA GPU was available); onnxruntime's CPU "
        "provider is enough for this MLP. See docs/deploy.md, 'Running on a Jetson'.",
        "",
    ]
    return "\n".join(lines)


def export_run(
    registry: Registry,
    run_dir: str | Path,
    checkpoint: str | Path | None = None,
    *,
    num_envs: int = 64,
    rollout_steps: int = 6,
    atol: float = PARITY_ATOL,
    latency_repeats: int = 300,
    fp16: bool = False,
    static_batch: bool = False,
    export_format: str = "primebot",
) -> ExportResult:
    """Export the run's policy as a deploy bundle; raise ``ExportError`` (nothing replaced) when parity fails.

    ``fp16`` adds ``policy_fp16.onnx`` when it passes its gate (else ``ExportError``, the fp32 bundle kept);
    ``static_batch`` fixes the batch axis at 1 (TensorRT without an optimisation profile);
    ``export_format="mjlab"``: the tracked bodies only on the body axis, static batch 1, opset 18.
    """
    if export_format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {export_format!r}", fix=f"use one of {', '.join(EXPORT_FORMATS)}")
    mjlab = export_format == "mjlab"
    static_batch = static_batch or mjlab
    opset = MJLAB_OPSET if mjlab else OPSET
    run_dir = Path(run_dir)
    out_dir = run_dir / EXPORT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    policy = load_trained_policy(run_dir, checkpoint)
    if registry.get("tasks", policy.config.task).export_kind == EXPORT_POLICY:
        if mjlab:
            raise ExportError("--format mjlab is for tracking policies (mjlab's tracking deploy code)",
                              fix="export this policy without --format")
        # Reset noise where the task has it: otherwise every env starts from the same state
        # and the parity check would see num_envs copies of one observation.
        env = make_run_env(registry, policy, num_envs, seed=policy.config.seed,
                           overrides={"randomization": {"enabled": True}})
        try:
            metadata = policy_metadata(env, policy)
            mjcf_source = env.robot.mjcf
            obs, steps = record_observations(env, policy, rollout_steps)
        finally:
            env.close()
        modules = {"fp32": ActionPolicy(policy.actor, policy.obs_normalizer).eval()}
        if fp16:
            modules["fp16"] = ActionPolicy(HalfActor(policy.actor), policy.obs_normalizer).eval()
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
            body_names = None
            if mjlab:
                arrays, body_names = _tracked_bodies_only(env, arrays)
            metadata = deploy_metadata(env, policy, len(arrays["joint_pos"]), motion.sha256, body_names)
            mjcf_source = env.robot.mjcf
            obs, steps = record_observations(env, policy, rollout_steps)
        finally:
            env.close()
        modules = {"fp32": DeployPolicy(policy.actor, policy.obs_normalizer, arrays).eval()}
        if fp16:
            modules["fp16"] = DeployPolicy(HalfActor(policy.actor), policy.obs_normalizer, arrays).eval()

    model = bundle_mjcf(mjcf_source, out_dir)
    metadata.update(robot_mjcf=model.file, robot_mjcf_sha256=model.sha256, export_format=export_format,
                    precision="fp32")
    batches = (1,) if static_batch else PARITY_BATCHES
    onnx_path, report = _write_checked(modules["fp32"], out_dir, ONNX_FILE, policy.num_obs, metadata, obs, steps,
                                       {name: atol for name in modules["fp32"].output_names}, batches,
                                       static_batch, opset)
    latency = onnx_latency(onnx_path, policy.num_obs, repeats=latency_repeats)
    files: dict[str, Any] = {"policy": {"file": ONNX_FILE, "sha256": file_sha256(onnx_path)},
                             "mjcf": {"file": model.file, "sha256": model.sha256, "assets": model.assets,
                                      "trained_from": model.source}}
    motion_copy = None
    if motion is not None:
        motion_copy = out_dir / Path(str(motion.source)).name
        with atomic_path(motion_copy) as tmp:
            shutil.copyfile(motion.source, tmp)
        files["motion"] = {"file": motion_copy.name, "sha256": metadata["motion_sha256"],
                           "steps": int(metadata["motion_num_steps"]),
                           "duration_s": round((int(metadata["motion_num_steps"]) - 1) * float(metadata["control_dt"]),
                                               9)}
    start_steps = _eval_start_steps(run_dir)
    fp16_result, fp16_error = None, None
    (out_dir / FP16_ONNX_FILE).unlink(missing_ok=True)  # a previous export's, for another policy
    if fp16:
        try:
            fp16_result = _export_fp16(modules["fp16"], modules["fp32"], out_dir, onnx_path, model, policy.num_obs,
                                       {**metadata, "precision": "fp16"}, obs, steps, batches, static_batch, opset,
                                       start_steps[:FP16_CLOSED_LOOP_STARTS], latency_repeats)
            files["policy_fp16"] = {"file": FP16_ONNX_FILE, "sha256": file_sha256(fp16_result["path"]),
                                    "actions_atol": FP16_ACTIONS_ATOL}
        except ExportError as exc:  # the fp32 bundle is still written, then the error raised
            fp16_error = exc
    document = deploy_document(metadata, files, static_batch=static_batch, opset=opset,
                               export_format=export_format, start_steps=start_steps)
    deploy_path = out_dir / DEPLOY_FILE
    atomic_write_text(deploy_path, yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    atomic_write_text(out_dir / README_FILE, bundle_readme(document))
    atomic_write_text(out_dir / REPORT_FILE, json.dumps({
        "onnx": str(onnx_path), "checkpoint": str(policy.checkpoint), "iteration": policy.iteration,
        "export_format": export_format, "static_batch": static_batch, "opset": opset,
        "parity_atol": atol, "parity_max_abs_diff": {str(b): d for b, d in report.items()},
        "parity_observations": int(len(obs)), "latency_batch1_onnxruntime_cpu": latency,
        "size_bytes": onnx_path.stat().st_size,
        "fp16": None if fp16_result is None else {k: v for k, v in fp16_result.items() if k != "path"}
        | {"onnx": str(fp16_result["path"])},
        "bundle_bytes_without_this_file": sum(p.stat().st_size for p in out_dir.rglob("*")
                                              if p.is_file() and p.name != REPORT_FILE and ".rejected." not in p.name),
    }, indent=2, default=float))
    if fp16_error is not None:
        raise fp16_error
    return ExportResult(onnx_path, deploy_path, motion_copy, report, latency, metadata, model, fp16_result)


def _tracked_bodies_only(env: Any, arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The motion's body axis cut to the tracked bodies (mjlab's layout); root, anchor and end effectors
    must be among them, since the deploy loop reads them from the reference."""
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
    body_keys = [k for k in MOTION_OUTPUTS if k.startswith("body_")]
    return {k: (v[:, columns] if k in body_keys else v) for k, v in arrays.items()}, tracked


def _eval_start_steps(run_dir: Path) -> list[int]:
    """eval.json's start steps (the ones ``primebot sim2sim`` replays), ``[0]`` without an evaluation."""
    from ..deploy.sim2sim import eval_start_steps

    path = run_dir / EVAL_FILE
    return eval_start_steps(json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None)


def _write_checked(module: torch.nn.Module, out_dir: Path, name: str, num_obs: int, metadata: dict[str, Any],
                   obs: np.ndarray, steps: np.ndarray | None, atol: dict[str, float], batches: tuple[int, ...],
                   static_batch: bool, opset: int, reference: torch.nn.Module | None = None,
                   ) -> tuple[Path, dict[int, dict[str, float]]]:
    """Write ``out_dir/name`` only if onnxruntime reproduces ``reference`` (default ``module``) on ``obs``
    at ``batches`` within ``atol`` per output; otherwise keep it as ``<stem>.rejected.onnx`` and raise."""
    stem = Path(name).stem
    rejected = out_dir / f"{stem}.rejected.onnx"
    candidate = write_onnx(module, out_dir / f".{stem}.candidate.onnx", num_obs, metadata,
                           static_batch=static_batch, opset=opset)
    report = parity(reference or module, candidate, obs, steps, batches)
    failures = [line for output, limit in atol.items()
                for line in parity_failures({b: {output: d[output]} for b, d in report.items()}, limit)]
    if failures:
        candidate.replace(rejected)
        raise ExportError(
            "onnxruntime does not reproduce PyTorch on recorded observations:\n    " + "\n    ".join(failures)
            + f"\n  the rejected graph is {rejected}; {out_dir / name} was not replaced",
            fix="check for ops that differ between torch and onnxruntime (report it with the file)",
        )
    onnx_path = out_dir / name
    candidate.replace(onnx_path)
    rejected.unlink(missing_ok=True)
    return onnx_path, report


def closed_loop_gate(fp32: dict, fp16: dict) -> tuple[dict[str, Any], list[str]]:
    """Compare two sim2sim reports of the same starts: figures, and one line per way fp16 is worse.

    Tracking (groups ``from_start``/``sampled``): no higher fall rate, MPKPE at most
    ``FP16_MPKPE_TOLERANCE_M`` above fp32's. Walk (``episodes``): no higher fall rate, forward
    speed within ``FP16_SPEED_TOLERANCE_M_S``.
    """
    figures: dict[str, Any] = {}
    problems: list[str] = []
    keys = {"from_start": ("mpkpe_m", FP16_MPKPE_TOLERANCE_M), "sampled": ("mpkpe_m", FP16_MPKPE_TOLERANCE_M),
            "episodes": ("mean_forward_speed_m_s", FP16_SPEED_TOLERANCE_M_S)}
    for group, (metric, tolerance) in keys.items():
        if group not in fp32 or group not in fp16:
            continue
        a, b = fp32[group], fp16[group]
        figures[group] = {"fp32": {k: a.get(k) for k in ("fall_rate", "success_rate", metric)},
                          "fp16": {k: b.get(k) for k in ("fall_rate", "success_rate", metric)}}
        if not b["fall_rate"] <= a["fall_rate"]:
            problems.append(f"{group}: fp16 fall rate {b['fall_rate']:.3g} > fp32 {a['fall_rate']:.3g}")
        worse = b[metric] - a[metric] if metric == "mpkpe_m" else abs(b[metric] - a[metric])
        if not worse <= tolerance:
            problems.append(f"{group}: fp16 {metric} {b[metric]:.4g} vs fp32 {a[metric]:.4g} (tolerance {tolerance:g})")
    if not fp16.get("checks_passed", False):
        problems.append("the sim2sim checks fail on the fp16 file")
    return figures, problems


def _export_fp16(module: torch.nn.Module, reference: torch.nn.Module, out_dir: Path, fp32_path: Path,
                 model: BundledModel, num_obs: int,
                 metadata: dict[str, Any], obs: np.ndarray, steps: np.ndarray | None, batches: tuple[int, ...],
                 static_batch: bool, opset: int, start_steps: list[int], latency_repeats: int) -> dict[str, Any]:
    """policy_fp16.onnx, accepted on parity with ``reference`` (the fp32 PyTorch policy) and on a
    closed-loop sim2sim against ``fp32_path`` on the bundled MJCF (``closed_loop_gate``)."""
    from ..deploy.sim2sim import run_policy_file

    atol = {name: (FP16_ACTIONS_ATOL if name == "actions" else PARITY_ATOL) for name in module.output_names}
    path, report = _write_checked(module, out_dir, FP16_ONNX_FILE, num_obs, metadata, obs, steps, atol, batches,
                                  static_batch, opset, reference=reference)
    fp32_report, fp16_report = (run_policy_file(p, out_dir / model.file, start_steps) for p in (fp32_path, path))
    figures, problems = closed_loop_gate(fp32_report, fp16_report)
    if problems:
        rejected = out_dir / "policy_fp16.rejected.onnx"
        path.replace(rejected)
        raise ExportError("the fp16 policy fails its closed-loop check against the fp32 one:\n    "
                          + "\n    ".join(problems) + f"\n  the rejected file is {rejected}; the fp32 bundle is kept",
                          fix="deploy policy.onnx (fp32), or export without --fp16")
    return {"path": path, "actions_atol": FP16_ACTIONS_ATOL,
            "parity_max_abs_diff": {str(b): d for b, d in report.items()},
            "closed_loop": {"start_steps": start_steps, **figures},
            "latency_batch1_onnxruntime_cpu": onnx_latency(path, num_obs, repeats=latency_repeats),
            "size_bytes": path.stat().st_size}
