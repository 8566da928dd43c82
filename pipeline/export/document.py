"""deploy.yaml and README.md of the deploy bundle, from the ONNX metadata (docs/deploy.md).

What the documents hold follows the ONNX contract kind (docs/architecture.md
§7): a ``motion_tracking`` file (no ``export_kind`` key; inputs obs and
time_step, the motion inside) gets its bodies, time-step rule and reference
check; a ``policy`` file its base joints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..deploy.onnx_policy import ACTION_OFFSET_BAKED, parse_clip, trained_offset
from ..sim.task import (
    ACTION_OFFSET_DEFAULT,
    ACTION_OFFSET_SERVO_TARGET,
    ACTION_TARGET_FORMULA,
    EXPORT_MOTION_TRACKING,
)
from .graph import INPUT_NAMES, OUTPUT_NAMES, SERVO_TARGET_OUTPUT, ActionPolicy

BUNDLE_FORMAT = "primebot-deploy-bundle/1"


TIME_STEP_RULE = ("float32 [B, 1], the reference step (policy steps since the motion's first "
                  "frame); "
                  "NaN reads step 0, values are clamped to [0, motion_num_steps - 1] (-inf: 0, "
                  "+inf and past "
                  "the end: the last frame), fractions are truncated; exact for integers below "
                  "2^24")
BAKED_OFFSET_RULE = ("the policy was trained relative to the reference pose; the graph adds "
                     "shift[t] = "
                     "(origin[t] - default_joint_pos) / action_scale to its actions, origin the "
                     "reference joint_pos (action_offset_baked: reference_joint_pos) or the "
                     "servo_target output (reference_servo_target), "
                     "and subtracts "
                     "shift[t - 1] from the observation's actions term (nothing at step 0), so "
                     "feed back the "
                     "previous actions output as it is and start from zero at step 0")
TERMINATION_MEANINGS = {
    "anchor_height": "a fall: |z_anchor - z_ref_anchor| above this (m), anchor = anchor_body",
    "anchor_orientation": "a fall: |g_z - g_z_ref| above this, g_z = z of gravity in the anchor "
                          "frame "
                          "(tilt, not heading)",
    "end_effector_height": "a failure: any end effector's |z - z_ref| above this (m)",
    "min_height": "a fall: the root body below this height (m)",
    "max_pitch": "a fall: |base pitch| above this (rad)",
}


def _plain(value: Any) -> Any:
    """A metadata value as plain YAML (lists, floats, ints, strings) that ``format_value`` writes
    back exactly."""
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


def deploy_document(metadata: dict[str, Any], files: dict[str, Any], *, static_batch: bool,
                    opset: int,
                    export_format: str, start_steps: list[int]) -> dict[str, Any]:
    """deploy.yaml: every metadata key (``metadata``, values as the ONNX has them) and, derived from
    them, what robot-side code configures: files and hashes, I/O, rates, joints, bodies and roles,
    IMU frame, observation layout, termination thresholds and how an episode starts.

    ``files``: role → ``{file, sha256, ...}`` of the bundle's files.
    """
    m = metadata
    tracking = m.get("export_kind", EXPORT_MOTION_TRACKING) == EXPORT_MOTION_TRACKING
    floats = lambda key: [float(v) for v in m[key]]  # noqa: E731 - local shorthand
    layout = [
        {"name": n, "offset": int(o), "size": int(s), "scale": float(sc),
         "clip": list(parse_clip(c)), "history_length": int(h), "flatten_history_dim": bool(f)}
        for n, o, s, sc, c, h, f in zip(m["observation_names"], m["observation_offsets"],
                                        m["observation_sizes"],
                                         m["observation_terms_scale"], m["observation_terms_clip"],
                                         m["observation_terms_history_length"],
                                         m["observation_terms_flatten_history_dim"], strict=True)
    ]
    inputs, outputs = (INPUT_NAMES, OUTPUT_NAMES) if tracking else (ActionPolicy.input_names,
                                                                       ActionPolicy.output_names)
    if tracking and trained_offset(m) == ACTION_OFFSET_SERVO_TARGET:
        outputs = (*outputs, SERVO_TARGET_OUTPUT)
    root = m["root_body_name"]
    document: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "robot": m["robot"],
        "files": files,
        "policy": {
            "inputs": list(inputs), "outputs": list(outputs),
            "bind_outputs_by": "name (the order of the outputs is not part of the contract)",
            "dtype": "float32 (inputs and outputs; policy_fp16 computes in float16 inside)",
            "batch": 1 if static_batch else "dynamic", "opset": opset,
            "export_format": export_format,
            **({"time_step": TIME_STEP_RULE} if tracking else {}),
        },
        "control": {
            "period_s": float(m["control_dt"]), "rate_hz": float(m["fps"]),
            "training_physics_dt": float(m["training_physics_dt"]),
            "max_episode_steps": int(m["max_episode_steps"]),
            "action_offset": m.get("action_offset", ACTION_OFFSET_DEFAULT),
            "action_to_target": ACTION_TARGET_FORMULA[m.get("action_offset", ACTION_OFFSET_DEFAULT)]
            + ("" if tracking
               else f" after clipping actions to +-{m['action_clip']}, then clipped to "
               "[joint_pos_lower, joint_pos_upper]"),
            **({ACTION_OFFSET_BAKED: BAKED_OFFSET_RULE} if ACTION_OFFSET_BAKED in m else {}),
            "torque": "tau = kp * (joint_pos_target - q) - kd * qd, clipped to +-effort_limit",
        },
        "joints": [
            {"name": n, "kp": kp, "kd": kd, "effort_limit": eff, "default_pos": d,
             "action_scale": sc,
             "lower": lo, "upper": hi}
            for n, kp, kd, eff, d, sc, lo, hi in zip(
                m["joint_names"], floats("joint_stiffness"), floats("joint_damping"),
                floats("joint_effort_limit"),
                floats("default_joint_pos"), floats("action_scale"), floats("joint_pos_lower"),
                floats("joint_pos_upper"), strict=True)
        ],
        "imu": {
            "body": root,
            "orientation": f"world orientation of {root} (w x y z)"
            + (f"; the anchor's ({m['anchor_body_name']}) follows by forward kinematics of the "
               "joint encoders"
               if tracking else ""),
            "gyro": f"angular velocity of {root} in {root}'s own frame, rad/s",
            "frame": f"{root}'s body frame as in the bundled MJCF; an IMU mounted elsewhere or "
                     "rotated must be "
                     "transformed into it first (docs/deploy.md, 'The IMU')",
        },
        "observation": {"size": int(m["num_observations"]), "layout": layout},
        "termination": {
            key.removeprefix("termination_"): {
                "threshold": None if value == "none" else float(value),
                "meaning": TERMINATION_MEANINGS.get(key.removeprefix("termination_"),
                                                    "see docs/tasks.md"),
            }
            for key, value in m.items() if key.startswith("termination_")
        },
    }
    if tracking:
        document["bodies"] = {
            "root": root, "anchor": m["anchor_body_name"],
            "motion_outputs": list(m["body_names"]),
            "tracked": list(m["tracked_body_names"]),
            "end_effectors": list(m["end_effector_body_names"]),
        }
        document["episode_start"] = (
            "the robot in the reference state of the start step (root pose and velocity, joint "
            "positions and "
            "velocities), time_step = that step, last action zero; on hardware: start at step 0 "
            "after blending "
            "to its reference pose. Metrics at policy step t compare the state after the step with "
            "the "
            "reference at t + 1. The episode ends at max_episode_steps, at the motion's last step, "
            "or on a "
            "termination.")
        document["reference_check"] = {
            "runner": "python -m primebot.pipeline.bundle .",
            "start_steps": [int(s) for s in start_steps],
        }
    else:
        document["base_joints"] = m["base_joint_names"]
        document["episode_start"] = ("the default pose (the MJCF's first keyframe), last action "
                                     "zero; the "
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
        f"Exported by primebot {document['primebot_version']} from run "
        f"`{document['metadata']['run_path']}` "
        f"(checkpoint `{document['metadata']['checkpoint']}`). The full contract is docs/deploy.md "
        "in the "
        "primebot repository; `deploy.yaml` holds every value named here.",
        "",
        "| file | what |",
        "|---|---|",
        f"| `{files['policy']['file']}` | the policy (float32), inputs "
        f"{', '.join(document['policy']['inputs'])}; "
        "outputs bound by name |",
    ]
    if "policy_fp16" in files:
        lines.append(f"| `{files['policy_fp16']['file']}` | the same policy computing in float16 "
                     "(float32 I/O), "
                     "checked against the fp32 one in closed loop |")
    lines.append(f"| `{files['mjcf']['file']}` | the robot model it was trained on, byte for byte "
                 f"(SHA-256 `{files['mjcf']['sha256'][:16]}…`); training replaced its actuators' "
                 "kp/kd by "
                 "`deploy.yaml`'s exact values |")
    if tracking:
        lines.append(f"| `{files['motion']['file']}` | the reference motion (also inside the ONNX) "
                     "|")
    lines += [
        "| `deploy.yaml` | every ONNX metadata key, plus joints, bodies, IMU frame, observation "
        "layout, "
        "thresholds |",
        "",
        "## Check it on this computer (no torch needed)",
        "",
        "```",
        "pip install numpy mujoco onnxruntime pyyaml",
        "pip install --no-deps /path/to/primebot       # the runner needs none of primebot's "
        "training dependencies",
        "python -m primebot.pipeline.bundle .          # verifies the SHA-256s, runs the policy on "
        "the MJCF",
        "```",
        "",
        "## On the robot",
        "",
        f"- every {document['control']['period_s'] * 1000:g} ms: build `obs` in the "
        "`observation.layout` "
        "order, run the policy, bind outputs by name;",
        f"- {document['control']['action_to_target']}; send it per joint, by name, with kp and kd "
        "from "
        f"`joints`; the joint HAL closes {document['control']['torque']};",
        f"- IMU ({document['imu']['body']}): {document['imu']['frame']};",
        f"- episode start: {document['episode_start']}",
        "",
        "TensorRT has not been run on this file by primebot (no NVIDIA GPU was available); "
        "onnxruntime's CPU "
        "provider is enough for this MLP. See docs/deploy.md, 'Running on a Jetson'.",
        "",
    ]
    return "\n".join(lines)
