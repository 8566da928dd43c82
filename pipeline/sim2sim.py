"""sim2sim: the exported policy in a deploy-style MuJoCo loop that uses no torch at all.

Reads only the ONNX file (graph and metadata) and the robot's MJCF, and
imports only numpy, mujoco, onnxruntime, the standard library and
``tracking_metrics`` (numpy), so it runs wherever the robot-side stack runs
(``python -m primebot.pipeline.sim2sim policy.onnx robot.xml``). It differs
from training on purpose:

- a fresh ``MjData`` from the MJCF, physics at 1 kHz (training: 200 Hz);
- the MJCF's position servos become torque motors, and the loop computes
  τ = kp·(q* − q) − kd·q̇, clipped to the effort limit, every physics step
  from the metadata's gains (as a joint HAL does at 500 Hz–1 kHz);
- the policy runs at the metadata's control rate (50 Hz), no randomisation
  and no observation noise;
- observations are built here, independently of the training task, from what
  the robot senses (joint encoders, the root IMU's orientation and gyro,
  forward kinematics to the anchor body), in the order ``observation_names``
  gives, with MuJoCo's own quaternion routines.

Before running, ``check_policy_robot`` refuses an ONNX whose observation size,
joints or bodies do not fit the MJCF (naming them), and two checks catch
wrong metadata: the reference joints must reproduce the reference body
positions through the MJCF's kinematics at every step (a permuted
``joint_names`` fails it), and the metadata's kp/kd must be the MJCF's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime as ort

from .errors import ExportError
from .tracking_metrics import (
    EpisodeMetrics,
    FailureThresholds,
    TrackingSnapshot,
    failure_checks,
    first_failure,
    step_errors,
)

PHYSICS_HZ = 1000.0
REFERENCE_POSE_TOLERANCE_M = 2e-3
"""float32 motion data reproduces body positions to well under a millimetre; more means wrong metadata."""
GAIN_RTOL = 1e-3
"""MJCF files carry gains rounded to a few digits; a swapped joint is off by far more."""
LIST_KEYS = ("joint_names", "observation_names", "body_names", "tracked_body_names", "end_effector_body_names")
FLOAT_LIST_KEYS = ("joint_stiffness", "joint_damping", "joint_effort_limit", "default_joint_pos", "action_scale")
INT_LIST_KEYS = ("observation_sizes", "observation_offsets")


class Sim2SimError(ExportError):
    """The ONNX file and the MJCF do not fit together; the message names what and how to fix it."""


# -- metadata -----------------------------------------------------------------------------------
def parse_metadata(raw: dict[str, str]) -> dict:
    """Typed metadata: lists split on commas, floats parsed exactly (they were written with repr)."""
    meta: dict = dict(raw)
    for key in LIST_KEYS:
        if key in raw:
            meta[key] = [s for s in raw[key].split(",") if s]
    for key in FLOAT_LIST_KEYS:
        if key in raw:
            meta[key] = np.array([float(s) for s in raw[key].split(",")], dtype=np.float64)
    for key in INT_LIST_KEYS:
        if key in raw:
            meta[key] = [int(s) for s in raw[key].split(",")]
    for key in ("fps", "control_dt"):
        if key in raw:
            meta[key] = float(raw[key])
    for key in ("motion_num_steps", "num_observations", "max_episode_steps"):
        if key in raw:
            meta[key] = int(raw[key])
    return meta


def load_policy(path: str | Path) -> tuple[ort.InferenceSession, dict]:
    """An onnxruntime CPU session and the parsed metadata of ``path``."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session, parse_metadata(dict(session.get_modelmeta().custom_metadata_map))


# -- the robot as the loop drives it ------------------------------------------------------------
@dataclass
class DeployRobot:
    """MJCF indices of everything the metadata names, in the metadata's order."""

    model: mujoco.MjModel
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    root_body: int
    root_qpos_adr: int
    root_dof_adr: int
    anchor_body: int
    motion_body_ids: np.ndarray
    """MJCF body id of each entry of the ONNX body axis (``body_names``)."""
    checks: list[dict] = field(default_factory=list)


def _body(model: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)


def check_policy_robot(session: ort.InferenceSession, meta: dict, model: mujoco.MjModel) -> DeployRobot:
    """Match the ONNX to the MJCF by name; raise ``Sim2SimError`` listing every mismatch."""
    problems: list[str] = []
    required = ("joint_names", "joint_stiffness", "joint_damping", "default_joint_pos", "action_scale",
                "observation_names", "observation_sizes", "anchor_body_name", "body_names", "fps")
    missing = [k for k in required if k not in meta]
    if missing:
        raise Sim2SimError(f"ONNX metadata lacks {', '.join(missing)}: not a primebot policy export "
                           "(re-export with `primebot export RUN_DIR`)")
    joints = meta["joint_names"]
    n = len(joints)
    for key in FLOAT_LIST_KEYS:
        if key in meta and len(meta[key]) != n:
            problems.append(f"metadata {key} has {len(meta[key])} values for {n} joints")
    obs_input = session.get_inputs()[0].shape[1]
    declared = sum(meta["observation_sizes"])
    if len(meta["observation_sizes"]) != len(meta["observation_names"]):
        problems.append("metadata observation_names and observation_sizes differ in length")
    if obs_input != declared:
        problems.append(f"observation size: the graph takes {obs_input} values, observation_sizes add up to {declared}")
    for name, size in zip(meta["observation_names"], meta["observation_sizes"], strict=False):
        expected = _expected_size(name, n)
        if expected is None:
            problems.append(f"observation term {name!r} is unknown to this deploy loop")
        elif size != expected:
            problems.append(f"observation term {name!r} has size {size}; with {n} joints it must be {expected}")
    actions = session.get_outputs()[0].shape[1]
    if actions != n:
        problems.append(f"the graph outputs {actions} actions for {n} joint_names")

    joint_ids, actuators = [], {}
    for act in range(model.nu):
        if model.actuator_trntype[act] == mujoco.mjtTrn.mjTRN_JOINT:
            actuators.setdefault(int(model.actuator_trnid[act, 0]), act)
    for name in joints:
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            problems.append(f"joint {name!r} (metadata joint_names) is not in the MJCF")
        elif model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            problems.append(f"joint {name!r} is not a hinge in the MJCF")
        elif j not in actuators:
            problems.append(f"joint {name!r} has no actuator in the MJCF")
        joint_ids.append(j)
    named = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)
             if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE}
    extra = sorted(named - set(joints))
    if extra:
        problems.append(f"MJCF hinge joint(s) the policy does not drive: {', '.join(extra)}")
    body_ids = [_body(model, b) for b in meta["body_names"]]
    unknown = [b for b, i in zip(meta["body_names"], body_ids, strict=True) if i < 0]
    if unknown:
        problems.append(f"body/bodies {', '.join(unknown)} (metadata body_names) not in the MJCF")
    for key in ("anchor_body_name", "root_body_name"):
        if key in meta and _body(model, meta[key]) < 0:
            problems.append(f"{key} {meta[key]!r} is not a body of the MJCF")
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if len(free) != 1:
        problems.append(f"the MJCF must have exactly one free joint (the floating base), it has {len(free)}")
    if problems:
        raise Sim2SimError("the ONNX policy does not fit the robot model:\n    " + "\n    ".join(problems)
                           + "\n  fix: export the policy for this robot, or pass the MJCF it was trained with")

    ids = np.array(joint_ids)
    root_body = int(model.jnt_bodyid[free[0]])
    robot = DeployRobot(
        model=model, qpos_adr=model.jnt_qposadr[ids].astype(np.int64), dof_adr=model.jnt_dofadr[ids].astype(np.int64),
        actuator_ids=np.array([actuators[j] for j in joint_ids], dtype=np.int64), root_body=root_body,
        root_qpos_adr=int(model.jnt_qposadr[free[0]]), root_dof_adr=int(model.jnt_dofadr[free[0]]),
        anchor_body=_body(model, meta["anchor_body_name"]), motion_body_ids=np.array(body_ids, dtype=np.int64),
    )
    robot.checks.append(_gain_check(model, robot, meta))
    return robot


def _expected_size(name: str, num_joints: int) -> int | None:
    return {"command": 2 * num_joints, "motion_anchor_ori_b": 6, "base_ang_vel": 3, "joint_pos": num_joints,
            "joint_vel": num_joints, "actions": num_joints}.get(name)


def _gain_check(model: mujoco.MjModel, robot: DeployRobot, meta: dict) -> dict:
    """The metadata's kp/kd must be the MJCF position servos' (kp = gainprm[0], kd = −biasprm[2])."""
    bad = []
    for j, (name, act) in enumerate(zip(meta["joint_names"], robot.actuator_ids, strict=True)):
        if model.actuator_biastype[act] != mujoco.mjtBias.mjBIAS_AFFINE:
            continue  # a motor in the MJCF: the gains live only in the metadata
        kp, kd = float(model.actuator_gainprm[act, 0]), float(-model.actuator_biasprm[act, 2])
        mkp, mkd = float(meta["joint_stiffness"][j]), float(meta["joint_damping"][j])
        if not (np.isclose(kp, mkp, rtol=GAIN_RTOL) and np.isclose(kd, mkd, rtol=GAIN_RTOL)):
            bad.append(f"{name}: metadata kp={mkp:.6g} kd={mkd:.6g}, MJCF kp={kp:.6g} kd={kd:.6g}")
    return {"name": "pd_gains_match_mjcf", "ok": not bad,
            "detail": "; ".join(bad[:6]) if bad else "metadata kp/kd equal the MJCF servo gains"}


def to_torque_mode(robot: DeployRobot, effort: np.ndarray) -> None:
    """Make every policy joint's actuator a plain motor: ctrl is torque, clipped to ±effort."""
    m = robot.model
    for act, limit in zip(robot.actuator_ids, effort, strict=True):
        m.actuator_gaintype[act] = mujoco.mjtGain.mjGAIN_FIXED
        m.actuator_biastype[act] = mujoco.mjtBias.mjBIAS_NONE
        m.actuator_gainprm[act, :] = 0.0
        m.actuator_gainprm[act, 0] = 1.0
        m.actuator_biasprm[act, :] = 0.0
        m.actuator_gear[act, :] = 0.0
        m.actuator_gear[act, 0] = 1.0
        m.actuator_ctrllimited[act] = 1
        m.actuator_ctrlrange[act] = (-limit, limit)
        m.actuator_forcelimited[act] = 1
        m.actuator_forcerange[act] = (-limit, limit)


# -- the reference and the observation ------------------------------------------------------------
REFERENCE_OUTPUTS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")


def reference_table(session: ort.InferenceSession, meta: dict) -> dict[str, np.ndarray]:
    """The whole reference motion, [T, ...] per output, read from the graph in one batched call.

    The motion outputs do not depend on ``obs``, so a batch of every step with
    zero observations reads them all; the loop then builds each observation
    from the reference at its own step before calling the policy.
    """
    steps = int(meta.get("motion_num_steps") or 0)
    if steps < 1:
        raise Sim2SimError("ONNX metadata lacks motion_num_steps; re-export with `primebot export RUN_DIR`")
    obs = np.zeros((steps, session.get_inputs()[0].shape[1]), np.float32)
    time_step = np.arange(steps, dtype=np.float32)[:, None]
    values = session.run(list(REFERENCE_OUTPUTS), {"obs": obs, "time_step": time_step})
    return {k: np.asarray(v, dtype=np.float64) for k, v in zip(REFERENCE_OUTPUTS, values, strict=True)}


class DeployObservation:
    """The policy observation from sensed quantities, in the metadata's term order.

    Terms: ``command`` (reference joint pos then vel), ``motion_anchor_ori_b``
    (reference anchor orientation in the robot anchor frame, first two columns
    of its rotation matrix, row by row), ``base_ang_vel`` (root gyro, root
    frame), ``joint_pos`` (minus the default pose), ``joint_vel``, ``actions``
    (the previous policy output).
    """

    def __init__(self, robot: DeployRobot, meta: dict) -> None:
        self.robot = robot
        self.terms = list(zip(meta["observation_names"], meta["observation_sizes"], strict=True))
        self.default = np.asarray(meta["default_joint_pos"], dtype=np.float64)
        self.anchor_index = meta["body_names"].index(meta["anchor_body_name"])
        self.size = sum(size for _, size in self.terms)
        self._vel = np.zeros(6)
        self._quat = np.zeros(4)
        self._rel = np.zeros(4)
        self._mat = np.zeros(9)

    def build(self, data: mujoco.MjData, ref: dict[str, np.ndarray], t: int, last_action: np.ndarray) -> np.ndarray:
        r = self.robot
        parts = []
        for name, _ in self.terms:
            if name == "command":
                parts += [ref["joint_pos"][t], ref["joint_vel"][t]]
            elif name == "motion_anchor_ori_b":
                mujoco.mju_negQuat(self._quat, data.xquat[r.anchor_body])
                mujoco.mju_mulQuat(self._rel, self._quat, ref["body_quat_w"][t, self.anchor_index])
                mujoco.mju_quat2Mat(self._mat, self._rel)
                parts.append(self._mat.reshape(3, 3)[:, :2].reshape(6))
            elif name == "base_ang_vel":
                mujoco.mj_objectVelocity(r.model, data, mujoco.mjtObj.mjOBJ_XBODY, r.root_body, self._vel, 1)
                parts.append(self._vel[:3])
            elif name == "joint_pos":
                parts.append(data.qpos[r.qpos_adr] - self.default)
            elif name == "joint_vel":
                parts.append(data.qvel[r.dof_adr])
            elif name == "actions":
                parts.append(last_action)
        return np.concatenate(parts).astype(np.float32)


# -- episodes -------------------------------------------------------------------------------------
def set_reference_state(robot: DeployRobot, data: mujoco.MjData, ref: dict[str, np.ndarray], t: int,
                        root_index: int, stage: str = "forward") -> None:
    """Put the robot exactly in the reference state of step ``t`` (root pose and velocity, joints).

    ``stage="kinematics"`` computes only body poses (enough for the pose check).
    """
    m = robot.model
    mujoco.mj_resetData(m, data)
    a, d = robot.root_qpos_adr, robot.root_dof_adr
    quat = ref["body_quat_w"][t, root_index]
    data.qpos[a:a + 3] = ref["body_pos_w"][t, root_index]
    data.qpos[a + 3:a + 7] = quat / np.linalg.norm(quat)
    data.qpos[robot.qpos_adr] = ref["joint_pos"][t]
    data.qvel[d:d + 3] = ref["body_lin_vel_w"][t, root_index]
    inverse, local = np.zeros(4), np.zeros(3)
    mujoco.mju_negQuat(inverse, data.qpos[a + 3:a + 7])
    mujoco.mju_rotVecQuat(local, ref["body_ang_vel_w"][t, root_index], inverse)
    data.qvel[d + 3:d + 6] = local  # a free joint's angular velocity is in its body frame
    data.qvel[robot.dof_adr] = ref["joint_vel"][t]
    (mujoco.mj_kinematics if stage == "kinematics" else mujoco.mj_forward)(m, data)


def reference_pose_check(robot: DeployRobot, ref: dict[str, np.ndarray], root_index: int,
                         max_frames: int = 500) -> dict:
    """The reference joints through the MJCF's kinematics must land the bodies where the reference says.

    Checked over the whole motion (up to ``max_frames`` evenly spread steps):
    two swapped joints that agree at the first frame differ somewhere later.
    """
    data = mujoco.MjData(robot.model)
    steps = ref["joint_pos"].shape[0]
    worst_error, worst_body, worst_step = -1.0, 0, 0
    for t in np.unique(np.linspace(0, steps - 1, min(steps, max_frames)).astype(int)):
        set_reference_state(robot, data, ref, int(t), root_index, stage="kinematics")
        error = np.linalg.norm(data.xpos[robot.motion_body_ids] - ref["body_pos_w"][t], axis=-1)
        if error.max() > worst_error:
            worst_error, worst_body, worst_step = float(error.max()), int(np.argmax(error)), int(t)
    ok = worst_error <= REFERENCE_POSE_TOLERANCE_M
    name = mujoco.mj_id2name(robot.model, mujoco.mjtObj.mjOBJ_BODY, int(robot.motion_body_ids[worst_body]))
    detail = (f"reference joints reproduce the reference bodies at every step (worst {name}: {worst_error:.2e} m)"
              if ok else
              f"at step {worst_step} body {name} is {worst_error:.3f} m from the reference when the reference joints "
              "are applied in joint_names order: the metadata's joint order does not match the motion")
    return {"name": "reference_pose_matches_kinematics", "ok": ok, "detail": detail, "max_error_m": worst_error}


@dataclass
class Sim2SimSetup:
    session: ort.InferenceSession
    meta: dict
    robot: DeployRobot
    reference: dict[str, np.ndarray]
    observation: DeployObservation
    thresholds: FailureThresholds
    substeps: int
    index: dict[str, np.ndarray]


def _threshold(meta: dict, key: str, default: float) -> float:
    value = meta.get(key)
    if value is None:
        return default
    return float("inf") if value == "none" else float(value)


def prepare(onnx_path: str | Path, mjcf_path: str | Path) -> Sim2SimSetup:
    """Load both files, check that they fit, switch the actuators to torque mode and read the reference."""
    session, meta = load_policy(onnx_path)
    model = mujoco.MjModel.from_xml_path(str(mjcf_path))
    robot = check_policy_robot(session, meta, model)
    control_dt = float(meta.get("control_dt") or 1.0 / meta["fps"])
    substeps = max(1, int(round(control_dt * PHYSICS_HZ)))
    model.opt.timestep = control_dt / substeps
    to_torque_mode(robot, meta.get("joint_effort_limit", np.full(len(meta["joint_names"]), np.inf)))
    ref = reference_table(session, meta)
    names = meta["body_names"]
    index = {
        "root": np.array([names.index(meta.get("root_body_name") or _root_name(robot))]),
        "anchor": np.array([names.index(meta["anchor_body_name"])]),
        "tracked": np.array([names.index(b) for b in meta.get("tracked_body_names") or names]),
        "ee": np.array([names.index(b) for b in meta.get("end_effector_body_names") or []], dtype=np.int64),
    }
    robot.checks.append(reference_pose_check(robot, ref, int(index["root"][0])))
    thresholds = FailureThresholds(
        anchor_height=_threshold(meta, "termination_anchor_height", FailureThresholds.anchor_height),
        anchor_ori=_threshold(meta, "termination_anchor_orientation", FailureThresholds.anchor_ori),
        ee_height=_threshold(meta, "termination_end_effector_height", FailureThresholds.ee_height),
    )
    return Sim2SimSetup(session, meta, robot, ref, DeployObservation(robot, meta), thresholds, substeps, index)


def _root_name(robot: DeployRobot) -> str:
    return mujoco.mj_id2name(robot.model, mujoco.mjtObj.mjOBJ_BODY, robot.root_body)


def snapshot(setup: Sim2SimSetup, data: mujoco.MjData, t: int) -> TrackingSnapshot:
    """Robot and reference at step ``t`` in the shared metrics' terms (one episode, N = 1)."""
    r, ref, ix = setup.robot, setup.reference, setup.index
    body = r.motion_body_ids
    pos = lambda ids: data.xpos[body[ids]][None]  # noqa: E731 - local shorthand
    rpos = lambda ids: ref["body_pos_w"][t, ids][None]  # noqa: E731
    return TrackingSnapshot(
        joint_pos=data.qpos[r.qpos_adr][None], joint_vel=data.qvel[r.dof_adr][None],
        body_pos_w=pos(ix["tracked"]), root_pos_w=pos(ix["root"])[:, 0], ee_pos_w=pos(ix["ee"]),
        anchor_pos_w=pos(ix["anchor"])[:, 0], anchor_quat_w=data.xquat[body[ix["anchor"]]].copy(),
        ref_joint_pos=ref["joint_pos"][t][None], ref_joint_vel=ref["joint_vel"][t][None],
        ref_body_pos_w=rpos(ix["tracked"]), ref_root_pos_w=rpos(ix["root"])[:, 0], ref_ee_pos_w=rpos(ix["ee"]),
        ref_anchor_pos_w=rpos(ix["anchor"])[:, 0], ref_anchor_quat_w=ref["body_quat_w"][t, ix["anchor"]],
    )


def run_episode(setup: Sim2SimSetup, start_step: int, max_steps: int, metrics: EpisodeMetrics,
                frames: list | None = None) -> dict:
    """One episode from the reference state at ``start_step``; returns its record (also in ``metrics``).

    Ends like a training episode: on a failed check, after ``max_steps``
    policy steps, or at the motion's last step. ``frames`` collects
    (qpos, step) per policy step for rendering.
    """
    m, r, meta = setup.robot.model, setup.robot, setup.meta
    kp, kd = meta["joint_stiffness"], meta["joint_damping"]
    effort = meta.get("joint_effort_limit", np.full(len(kp), np.inf))
    default, scale = meta["default_joint_pos"], meta["action_scale"]
    last = setup.reference["joint_pos"].shape[0] - 1
    data = mujoco.MjData(m)  # fresh, as on a robot that boots
    t = int(min(max(start_step, 0), last))
    set_reference_state(r, data, setup.reference, t, int(setup.index["root"][0]))
    last_action = np.zeros(len(kp))
    failure, length = None, 0
    time_step = np.zeros((1, 1), np.float32)
    if frames is not None:
        frames.append((data.qpos.copy(), t))
    while True:
        obs = setup.observation.build(data, setup.reference, t, last_action)
        time_step[0, 0] = t
        actions = setup.session.run(["actions"], {"obs": obs[None], "time_step": time_step})[0][0]
        last_action = actions.astype(np.float64)
        target = default + scale * last_action
        for _ in range(setup.substeps):  # the joint HAL: PD at the physics rate
            tau = kp * (target - data.qpos[r.qpos_adr]) - kd * data.qvel[r.dof_adr]
            data.ctrl[r.actuator_ids] = np.clip(tau, -effort, effort)
            mujoco.mj_step(m, data)
        mujoco.mj_forward(m, data)  # sensed quantities at the new state
        length += 1
        t = min(t + 1, last)
        if frames is not None:
            frames.append((data.qpos.copy(), t))
        if not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()):
            failure = "physics_fault"
            break
        snap = snapshot(setup, data, t)
        metrics.add_step(step_errors(snap))
        failure = first_failure(failure_checks(snap, setup.thresholds))[0]
        if failure is not None or length >= max_steps or t >= last:
            break
    metrics.finish([0], failure, [start_step])
    return metrics.episodes[-1]


def run_sim2sim(onnx_path: str | Path, mjcf_path: str | Path, start_steps=(0,), max_steps: int | None = None,
                record_frames: bool = False) -> dict:
    """Check the pair, run one episode per start step and return the sim2sim report (metrics and checks)."""
    t0 = time.perf_counter()
    setup = prepare(onnx_path, mjcf_path)
    meta = setup.meta
    control_dt = float(meta.get("control_dt") or 1.0 / meta["fps"])
    max_steps = int(max_steps or meta.get("max_episode_steps") or setup.reference["joint_pos"].shape[0])
    groups: dict[str, dict] = {}
    frames: dict[int, list] = {}
    for group, starts in (("from_start", [int(start_steps[0])]), ("sampled", [int(s) for s in start_steps[1:]])):
        if not starts:
            continue
        metrics = EpisodeMetrics(1, control_dt)
        for start in starts:
            episode_frames = [] if record_frames and start not in frames else None
            run_episode(setup, start, max_steps, metrics, episode_frames)
            if episode_frames is not None:
                frames[start] = episode_frames
        groups[group] = {**metrics.summary(), "episode_records": metrics.episodes}
    checks = setup.robot.checks
    return {
        "onnx": str(onnx_path), "mjcf": str(mjcf_path),
        "loop": {"physics_hz": 1.0 / setup.robot.model.opt.timestep, "policy_hz": 1.0 / control_dt,
                 "substeps": setup.substeps, "actuation": "torque: kp*(target-q) - kd*qd, clipped to effort",
                 "randomization": False, "observation_noise": False, "max_episode_steps": max_steps},
        "checks": checks, "checks_passed": all(c["ok"] for c in checks),
        **groups, "wall_s": time.perf_counter() - t0,
        **({"_frames": frames} if record_frames else {}),
    }


GAP_THRESHOLDS = {
    "success_rate": 0.2,
    "fall_rate": 0.2,
    "mpkpe_m": 0.05,
    "mpkpe_root_relative_m": 0.05,
    "joint_pos_error_rad": 0.1,
    "anchor_ori_error_rad": 0.2,
}
"""|sim2sim − eval| beyond these is flagged: the policy leans on something training had and the robot lacks."""
SIM2SIM_FILE = "sim2sim.json"


def gap_flags(gaps: dict[str, float], thresholds: dict[str, float] | None = None) -> list[str]:
    """One line per metric whose sim2sim − eval difference is beyond its threshold."""
    thresholds = GAP_THRESHOLDS if thresholds is None else thresholds
    return [f"{key}: sim2sim − eval = {gaps[key]:+.4g} (threshold ±{limit:g})"
            for key, limit in thresholds.items() if key in gaps and not abs(gaps[key]) <= limit]


def sim2sim_run_dir(run_dir: str | Path, mjcf: str | Path, *, video: bool = False) -> dict:
    """sim2sim for a run: its export/policy.onnx on ``mjcf``, from eval.json's start frames when present.

    Writes ``sim2sim.json`` (metrics, checks, differences from eval and flags)
    and returns it. ``video`` renders the from-start episode with the
    reference as a ghost into ``videos/sim2sim.mp4``.
    """
    from .atomic import atomic_write_text
    from .tracking_metrics import metric_gaps

    run_dir = Path(run_dir)
    onnx_path = run_dir / "export" / "policy.onnx"
    if not onnx_path.is_file():
        raise Sim2SimError(f"{onnx_path} does not exist; export first: primebot export {run_dir}")
    eval_path = run_dir / "eval.json"
    evaluation = json.loads(eval_path.read_text(encoding="utf-8")) if eval_path.is_file() else None
    starts = [0]
    if evaluation:
        for group in ("from_start", "sampled"):
            starts += [int(e["start_step"]) for e in evaluation.get(group, {}).get("episode_records", [])
                       if e.get("start_step") is not None]
        starts = starts[1:] or [0]
    report = run_sim2sim(onnx_path, mjcf, starts, record_frames=video)
    frames = report.pop("_frames", {})
    report["eval"] = str(eval_path) if evaluation else None
    flags: list[str] = []
    if evaluation:
        report["gap_vs_eval"] = {}
        for group in ("from_start", "sampled"):
            if group in report and group in evaluation:
                gaps = metric_gaps(evaluation[group], report[group])
                report["gap_vs_eval"][group] = gaps
                flags += [f"{group} {line}" for line in gap_flags(gaps)]
    report["gap_thresholds"] = GAP_THRESHOLDS
    report["gap_flags"] = flags
    report["gap_flagged"] = bool(flags)
    if video and frames:
        path = render_episode(prepare(onnx_path, mjcf), frames[starts[0]], run_dir / "videos" / "sim2sim.mp4")
        if path is not None:
            report["video"] = str(path)
    atomic_write_text(run_dir / SIM2SIM_FILE, json.dumps(report, indent=2))
    return report


def render_episode(setup: Sim2SimSetup, frames: list, output: Path) -> Path | None:
    """The episode's robot with the reference as a ghost (``ghost_video``); None without OpenGL."""
    from .ghost_video import render_ghost_video

    r, ref = setup.robot, setup.reference
    root = int(setup.index["root"][0])
    ghosts = []
    for qpos, t in frames:
        ghost = qpos.copy()
        ghost[r.root_qpos_adr:r.root_qpos_adr + 3] = ref["body_pos_w"][t, root]
        ghost[r.root_qpos_adr + 3:r.root_qpos_adr + 7] = ref["body_quat_w"][t, root]
        ghost[r.qpos_adr] = ref["joint_pos"][t]
        ghosts.append(ghost)
    fps = 1.0 / float(setup.meta.get("control_dt") or 1.0 / setup.meta["fps"])
    return render_ghost_video(r.model, [q for q, _ in frames], ghosts, r.root_body, output, fps, title="sim2sim")


def main(argv: list[str] | None = None) -> int:
    """``python -m primebot.pipeline.sim2sim POLICY.onnx ROBOT.xml``: a torch-free deploy check."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("onnx")
    parser.add_argument("mjcf")
    parser.add_argument("--start", type=int, nargs="*", default=[0], help="start steps (the first is 'from_start')")
    parser.add_argument("--output", help="write the report here as JSON")
    args = parser.parse_args(argv)
    try:
        report = run_sim2sim(args.onnx, args.mjcf, args.start)
    except Sim2SimError as exc:
        print(f"sim2sim: error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(report, indent=2)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    print(text)
    return 0 if report["checks_passed"] else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
