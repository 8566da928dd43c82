"""The robot-side view of an exported policy: metadata, fit checks, reference table and observation.

Everything a deploy loop needs besides the physics, written against numpy,
mujoco and onnxruntime only (never torch): ``load_policy`` parses the ONNX
metadata (lists split on commas, floats exact); ``check_policy_robot``
matches the policy to an MJCF by name and refuses, listing every mismatch,
an ONNX whose observation size, joints or bodies do not fit;
``reference_table`` reads the whole reference motion out of the graph in one
batched call (one call per step for a static batch); ``joint_targets``
turns actions into joint targets (the observation: ``deploy.observation``). ``sim2sim`` drives a
simulated robot with these (its joints' PD in ``joint_hal``); a robot-side
port replaces the simulator with the real sensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime as ort

from ..errors import ExportError
from ..robot.actuators import actuator_kind, gain_problems
from ..sim.task import (
    ACTION_OFFSET_DEFAULT,
    ACTION_OFFSET_REFERENCE,
    ACTION_TARGET_FORMULA,
    REFERENCE_OFFSETS,
)
from .observation import expected_size, history_lengths

LIST_KEYS = ("joint_names", "observation_names", "body_names", "tracked_body_names",
             "end_effector_body_names",
             "base_joint_names", "command_names", "observation_terms_clip")
FLOAT_LIST_KEYS = ("joint_stiffness", "joint_damping", "joint_effort_limit", "default_joint_pos",
                   "action_scale",
                   "joint_pos_lower", "joint_pos_upper")
"""Per-joint float lists (``joint_names`` order)."""
INT_LIST_KEYS = ("observation_sizes", "observation_offsets", "observation_terms_history_length",
                 "observation_terms_flatten_history_dim")
TERM_FLOAT_LIST_KEYS = ("observation_terms_scale",)
"""Per-observation-term float lists."""
FLOAT_KEYS = ("fps", "control_dt", "training_physics_dt", "action_scale_factor")
INT_KEYS = ("motion_num_steps", "num_observations", "num_actions", "max_episode_steps")


POLICY_KEYS = ("robot", "task", "checkpoint", "iteration", "checkpoint_digest", "run_id")
"""The metadata keys a deploy-side report (sim2sim.json, stress.json) copies as its ``policy``:
which checkpoint of which run it ran (train/provenance.py compares them with the run's policy)."""
NON_FINITE_ACTION = "non_finite_action"
"""The failure of an episode whose policy output a NaN or an infinity: the joints keep the last
finite targets and the episode ends there (the deploy loop, the stress test; docs/deploy.md, "What
the loop does")."""
ACTION_OFFSET_BAKED = "action_offset_baked"
"""Metadata key of a graph whose actions are relative to the default pose although its policy was
trained with the offset this key names (``--format mjlab``; docs/deploy.md)."""


class Sim2SimError(ExportError):
    """The ONNX file and the MJCF do not fit together; the message names what and how to fix it."""


# -- command-line reports -----------------------------------------------------------------------
def require_own_export(run_dir: str | Path, onnx_path: str | Path, meta: dict) -> None:
    """Refuse to judge a run by an ONNX that another run exported (its ``run_id`` metadata differs
    from the run's args.yaml ``run.id``), or by one without a run identity (an older primebot
    exported it)."""
    from ..rundir import read_run_id

    exported_from, run_id = meta.get("run_id"), read_run_id(run_dir)
    if not exported_from:
        raise Sim2SimError(
            f"{onnx_path} carries no run_id metadata: an older primebot exported it, and this one "
            "cannot tell whether it holds this run's policy",
            fix=f"export this run's policy again: primebot export {run_dir}",
        )
    if exported_from != run_id:
        raise Sim2SimError(
            f"{onnx_path} was exported from another run (run id {exported_from[:12]}…; "
            f"{run_dir} is {(run_id or 'no run')[:12]}…): a report on it would not be this run's",
            fix=f"export this run's policy first: primebot export {run_dir}",
        )


def emit_report(report: dict, output: str | None) -> int:
    """Print a deploy-loop report as JSON (and write it to ``output``); the exit code: 0 when its
    checks passed."""
    import json

    text = json.dumps(report, indent=2)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    print(text)
    return 0 if report["checks_passed"] else 1


# -- actions ------------------------------------------------------------------------------------
def joint_targets(meta: dict, reference: dict[str, np.ndarray] | None, t: int,
                  actions: np.ndarray) -> np.ndarray:
    """The joint position targets ``actions`` stand for at reference step ``t`` (metadata
    ``action_offset``).

    ``default_joint_pos`` (also a file without the key): default + scale·actions;
    ``reference_joint_pos``: the reference's joint positions at ``t`` (the step
    the policy was given) + scale·actions; ``reference_servo_target``: the
    graph's ``servo_target`` at ``t`` + scale·actions. Every deploy-side loop
    that turns actions into targets calls this one function.
    """
    offset = meta.get("action_offset", ACTION_OFFSET_DEFAULT)
    if offset in REFERENCE_OFFSETS:
        origin = reference_origin(reference, offset)[t]
    elif offset == ACTION_OFFSET_DEFAULT:
        origin = meta["default_joint_pos"]
    else:
        raise ExportError(f"unknown action_offset {offset!r} in the ONNX metadata",
                          fix=f"one of: {', '.join(ACTION_TARGET_FORMULA)}; re-export with this "
                              "primebot")
    return origin + meta["action_scale"] * np.asarray(actions, dtype=np.float64)


def reference_origin(reference: dict[str, np.ndarray] | None, offset: str) -> np.ndarray:
    """[T, J] the targets of a zero action per step for a reference-relative ``offset``
    (``REFERENCE_OFFSETS``): the reference's ``joint_pos``, or the graph's ``servo_target``."""
    table = REFERENCE_OFFSETS[offset]
    if reference is None or table not in reference:
        raise ExportError(f"action_offset {offset!r} needs the {table} table of the ONNX "
                          "(its reference outputs), and there is none",
                          fix="run the policy file as exported, with its reference outputs")
    return reference[table]


def trained_offset(meta: dict) -> str:
    """The ``action_offset`` the policy was trained with, whether or not its graph bakes it into
    the actions (``action_offset_baked``, ``--format mjlab``)."""
    return meta.get(ACTION_OFFSET_BAKED, meta.get("action_offset", ACTION_OFFSET_DEFAULT))


def replay_targets(meta: dict, reference: dict[str, np.ndarray]) -> np.ndarray:
    """[T, J] the joint targets of the stress test's replay (no policy): the reference's joint
    positions, plus each servo's feedforward for a policy trained with the servo-target offset
    (baked into the graph or not), whose zero action that is."""
    trained = trained_offset(meta)
    return reference_origin(reference, trained if trained in REFERENCE_OFFSETS else
                            ACTION_OFFSET_REFERENCE)


def initial_last_action(meta: dict, reference: dict[str, np.ndarray] | None,
                        t: np.ndarray) -> np.ndarray:
    """The ``actions`` observation term [N, J] of N episodes' first steps, robot i starting at step
    ``t[i]``.

    Zero (no previous action), as training starts every episode. A graph that bakes the reference
    offset into its actions (metadata ``action_offset_baked``, ``--format mjlab``) subtracts the
    previous step's offset from that term, so an episode starting past step 0 feeds the action that
    stands for zero there: (reference ``joint_pos[t − 1]`` − ``default_joint_pos``) /
    ``action_scale`` (docs/deploy.md).
    """
    t = np.atleast_1d(np.asarray(t, dtype=np.int64))
    zero = np.zeros((len(t), len(meta["joint_names"])))
    baked = meta.get(ACTION_OFFSET_BAKED)
    if baked not in REFERENCE_OFFSETS:
        return zero
    shift = (reference_origin(reference, baked)[np.maximum(t - 1, 0)]
             - meta["default_joint_pos"]) / meta["action_scale"]
    return np.where((t > 0)[:, None], shift, zero)


# -- metadata -----------------------------------------------------------------------------------
def parse_metadata(raw: dict[str, str]) -> dict:
    """Typed metadata: lists split on commas, floats parsed exactly (they were written with repr).

    A value that does not parse, or a non-finite number, is a ``Sim2SimError`` naming the key.
    """
    meta: dict = dict(raw)

    def parse(key: str, kind: type, text: str):
        try:
            value = kind(text)
        except ValueError:
            raise Sim2SimError(f"ONNX metadata {key}: {text!r} is not "
                               f"a{'n integer' if kind is int else ' number'}",
                               fix="re-export the policy (`primebot export RUN_DIR`); never "
                                   "hand-edit its metadata"
                               ) from None
        if kind is float and not np.isfinite(value):
            raise Sim2SimError(f"ONNX metadata {key}: {text!r} is not finite",
                               fix="re-export the policy")
        return value

    for key in LIST_KEYS:
        if key in raw:
            meta[key] = [s for s in raw[key].split(",") if s]
    for key in FLOAT_LIST_KEYS:
        if key in raw:
            meta[key] = np.array([parse(key, float, s) for s in raw[key].split(",")],
                                 dtype=np.float64)
    for key in INT_LIST_KEYS:
        if key in raw:
            # mjlab writes "0.000"
            meta[key] = [int(parse(key, float, s)) for s in raw[key].split(",") if s]
    for key in TERM_FLOAT_LIST_KEYS:
        if key in raw:
            meta[key] = [parse(key, float, s) for s in raw[key].split(",") if s]
    for key in FLOAT_KEYS:
        if key in raw:
            meta[key] = parse(key, float, raw[key])
    for key in INT_KEYS:
        if key in raw:
            meta[key] = parse(key, int, raw[key])
    return meta


def parse_clip(term: str) -> tuple[float, float]:
    """One ``observation_terms_clip`` entry, ``lo;hi`` (``-inf;inf`` when unclipped) → (lo, hi)."""
    lo, _, hi = term.partition(";")
    return float(lo), float(hi)


def load_policy(path: str | Path) -> tuple[ort.InferenceSession, dict]:
    """An onnxruntime CPU session and the parsed metadata of ``path``; an unreadable file is a
    ``Sim2SimError``."""
    from ..limits import MAX_ONNX_BYTES, over_budget

    path = Path(path)
    if not path.is_file():
        raise Sim2SimError(f"{path} does not exist", fix="export first: primebot export RUN_DIR")
    problem = over_budget(f"{path}", path.stat().st_size, MAX_ONNX_BYTES)
    if problem:
        raise Sim2SimError(problem, fix="a policy export is a few MiB; check the file")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    # onnxruntime raises its own types for truncated/invalid graphs
    except Exception as exc:  # noqa: BLE001
        raise Sim2SimError(f"{path} is not a loadable ONNX model ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''})",
                           fix="the file is truncated or corrupt; export it again: primebot export "
                               "RUN_DIR") from None
    return session, parse_metadata(dict(session.get_modelmeta().custom_metadata_map))


def _graph_problems(session: ort.InferenceSession, inputs: tuple[str, ...],
                    outputs: tuple[str, ...]) -> list[str]:
    """The named graph inputs/outputs that are missing, and a 2-D ``obs`` input and ``actions``
    output."""
    have_in = {i.name: i for i in session.get_inputs()}
    have_out = {o.name: o for o in session.get_outputs()}
    problems = [f"the graph has no input {name!r}" for name in inputs if name not in have_in]
    problems += [f"the graph has no output {name!r}" for name in outputs if name not in have_out]
    for name, node in (("obs", have_in.get("obs")), ("actions", have_out.get("actions"))):
        if node is not None and (len(node.shape) != 2 or not isinstance(node.shape[1], int)):
            problems.append(f"graph {name!r} has shape {node.shape}, expected [batch, size]")
    return problems


def graph_width(session: ort.InferenceSession, name: str) -> int:
    """The fixed second dimension of graph input or output ``name`` (checked by
    ``_graph_problems``)."""
    nodes = {n.name: n for n in [*session.get_inputs(), *session.get_outputs()]}
    return int(nodes[name].shape[1])


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


def check_policy_robot(session: ort.InferenceSession, meta: dict,
                       model: mujoco.MjModel) -> DeployRobot:
    """Match the ONNX to the MJCF by name; raise ``Sim2SimError`` listing every mismatch."""
    problems: list[str] = []
    required = ("joint_names", "joint_stiffness", "joint_damping", "default_joint_pos",
                "action_scale",
                "observation_names", "observation_sizes", "anchor_body_name", "body_names", "fps")
    missing = [k for k in required if k not in meta]
    if missing:
        raise Sim2SimError(f"ONNX metadata lacks {', '.join(missing)}: not a primebot policy "
                           "export "
                           "(re-export with `primebot export RUN_DIR`)")
    joints = meta["joint_names"]
    n = len(joints)
    graph = _graph_problems(session, ("obs", "time_step"), ("actions", *REFERENCE_OUTPUTS))
    if graph:
        raise Sim2SimError("the ONNX graph is not a primebot tracking policy:\n    "
                           + "\n    ".join(graph),
                           fix="re-export the policy with `primebot export RUN_DIR`")
    for key in FLOAT_LIST_KEYS:
        if key in meta and len(meta[key]) != n:
            problems.append(f"metadata {key} has {len(meta[key])} values for {n} joints")
    obs_input = graph_width(session, "obs")
    if "num_observations" in meta and meta["num_observations"] != obs_input:
        problems.append(f"metadata num_observations is {meta['num_observations']}; the graph takes "
                        f"{obs_input}")
    problems += rate_problems(meta, model)
    declared = sum(meta["observation_sizes"])
    if len(meta["observation_sizes"]) != len(meta["observation_names"]):
        problems.append("metadata observation_names and observation_sizes differ in length")
    if obs_input != declared:
        problems.append(f"observation size: the graph takes {obs_input} values, observation_sizes "
                        f"add up to {declared}")
    lengths = history_lengths(meta)
    if len(lengths) != len(meta["observation_names"]):
        problems.append("metadata observation_names and observation_terms_history_length differ "
                        "in length")
    flat = meta.get("observation_terms_flatten_history_dim") or [1] * len(lengths)
    for name, size, length, flattened in zip(meta["observation_names"], meta["observation_sizes"],
                                             lengths, flat, strict=False):
        expected = expected_size(name, n)
        steps = f" and a history of {length} steps" if length > 1 else ""
        if expected is None:
            problems.append(f"observation term {name!r} is unknown to this deploy loop")
        elif size != expected * length:
            problems.append(f"observation term {name!r} has size {size}; with {n} joints{steps} "
                            f"it must be {expected * length}")
        if length > 1 and not flattened:
            problems.append(f"observation term {name!r} keeps its history as a dimension of its "
                            "own; this loop reads it flattened")
    actions = graph_width(session, "actions")
    if actions != n:
        problems.append(f"the graph outputs {actions} actions for {n} joint_names")

    joint_ids, actuators = match_joints(model, joints, problems)
    body_ids = [_body(model, b) for b in meta["body_names"]]
    unknown = [b for b, i in zip(meta["body_names"], body_ids, strict=True) if i < 0]
    if unknown:
        problems.append(f"body/bodies {', '.join(unknown)} (metadata body_names) not in the MJCF")
    for key in ("anchor_body_name", "root_body_name"):
        if key in meta and _body(model, meta[key]) < 0:
            problems.append(f"{key} {meta[key]!r} is not a body of the MJCF")
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if len(free) != 1:
        problems.append("the MJCF must have exactly one free joint (the floating base), it has "
                        f"{len(free)}")
    if problems:
        raise Sim2SimError("the ONNX policy does not fit the robot model:\n    "
                           + "\n    ".join(problems)
                           + "\n  fix: export the policy for this robot, or pass the MJCF it was "
                             "trained with")

    ids = np.array(joint_ids)
    root_body = int(model.jnt_bodyid[free[0]])
    robot = DeployRobot(
        model=model, qpos_adr=model.jnt_qposadr[ids].astype(np.int64),
        dof_adr=model.jnt_dofadr[ids].astype(np.int64),
        actuator_ids=np.array([actuators[j] for j in joint_ids], dtype=np.int64),
        root_body=root_body,
        root_qpos_adr=int(model.jnt_qposadr[free[0]]), root_dof_adr=int(model.jnt_dofadr[free[0]]),
        anchor_body=_body(model, meta["anchor_body_name"]),
        motion_body_ids=np.array(body_ids, dtype=np.int64),
    )
    robot.checks.append(gain_check(model, robot, meta))
    return robot


def rate_problems(meta: dict, model: mujoco.MjModel) -> list[str]:
    """``control_dt`` and ``fps`` agree with each other and with the MJCF: the policy step is a
    whole number of the robot's physics steps (training ran ``decimation`` MJCF steps per policy
    step)."""
    fps, dt = meta.get("fps"), meta.get("control_dt")
    problems = []
    if fps is not None and not fps > 0:
        problems.append(f"metadata fps is {fps}")
    elif dt is not None and not dt > 0:
        problems.append(f"metadata control_dt is {dt}")
    elif fps is not None and dt is not None:
        if not np.isclose(fps * dt, 1.0, rtol=1e-6):
            problems.append(f"metadata fps {fps:g} and control_dt {dt:g} disagree (fps x "
                            f"control_dt = {fps * dt:.6g})")
        ratio = dt / model.opt.timestep
        if round(ratio) < 1 or not np.isclose(ratio, round(ratio), rtol=1e-6):
            problems.append(f"metadata control_dt {dt:g} s is not a whole number of the MJCF's "
                            f"{model.opt.timestep:g} s "
                            "physics steps")
    return problems


def robot_spec_check(meta: dict, spec) -> dict:
    """The metadata's robot name, default pose and action scale must be those of the run's
    registered robot.

    ``spec``: the ``RobotSpec`` (anything with ``name``, ``joint_names``, ``default_joint_pos`` and
    ``action_scale``). Joints are matched by name. A wrong value here moves every joint target
    (``default + scale * action``) and only shows in the rollout as a worse score.
    """
    bad = []
    if meta.get("robot") and meta["robot"] != spec.name:
        bad.append(f"metadata robot {meta['robot']!r}, the run's robot is {spec.name!r}")
    index = {name: i for i, name in enumerate(spec.joint_names)}
    for key in ("default_joint_pos", "action_scale"):
        want = np.asarray(getattr(spec, key), dtype=np.float64)
        # the task may scale the robot's action_scale (tracking: actions.scale)
        if key == "action_scale":
            want = want * float(meta.get("action_scale_factor", 1.0))
        for j, name in enumerate(meta["joint_names"]):
            if name in index and not np.isclose(meta[key][j], want[index[name]], rtol=1e-6,
                                                atol=1e-9):
                bad.append(f"{key} of {name}: metadata {meta[key][j]:.6g}, robot {spec.name} "
                           f"{want[index[name]]:.6g}")
    return {"name": "metadata_matches_robot", "ok": not bad,
            "detail": "; ".join(bad[:6]) + (f" (+{len(bad) - 6} more)" if len(bad) > 6 else "")
            if bad else
            f"robot, default_joint_pos and action_scale equal robot {spec.name!r}'s"}


def match_joints(model: mujoco.MjModel, joints: list[str], problems: list[str],
                 base: tuple[str, ...] = ()) -> tuple[list[int], dict[int, int]]:
    """MJCF joint ids of ``joints`` (by name) and the actuator of every actuated joint.

    Appends to ``problems`` every policy joint that is missing, not a hinge or
    not actuated, and every MJCF hinge the policy does not drive (except the ``base`` joints).
    """
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
    extra = sorted(named - set(joints) - set(base))
    if extra:
        problems.append(f"MJCF hinge joint(s) the policy does not drive: {', '.join(extra)}")
    return joint_ids, actuators


def gain_check(model: mujoco.MjModel, robot: DeployRobot, meta: dict) -> dict:
    """The gains contract (``robot.actuators.gain_problems``): every MJCF position servo carries the
    metadata's kp/kd (kp = gain, kd = kv); a motor carries none, so there is nothing to compare for
    it.

    ``robot``: anything with ``actuator_ids`` in the metadata's joint order.
    """
    bad, compared = gain_problems(model, meta["joint_names"], robot.actuator_ids,
                                  np.asarray(meta["joint_stiffness"]),
                                  np.asarray(meta["joint_damping"]),
                                  source="metadata")
    motors = sum(actuator_kind(model, int(act)) == "motor" for act in robot.actuator_ids)
    if bad:
        detail = "; ".join(bad[:6])
    elif compared:
        detail = f"metadata kp/kd equal the MJCF's {compared} position servo(s)"
        detail += f"; {motors} motor(s) carry no gains" if motors else ""
    else:
        detail = (
            f"the MJCF's {motors} actuator(s) are motors: no gains in the MJCF to compare (the "
            "loop applies the metadata's)"
        )
    return {"name": "pd_gains_match_mjcf", "ok": not bad, "detail": detail}


# -- the reference and the observation ------------------------------------------------------------
REFERENCE_OUTPUTS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w",
                     "body_ang_vel_w")
OPTIONAL_REFERENCE_OUTPUTS = ("servo_target",)
"""Per-step tables a graph has only for some policies (``servo_target``: the servo-target offset's
zero-action targets)."""


def reference_table(session: ort.InferenceSession, meta: dict) -> dict[str, np.ndarray]:
    """The whole reference motion, [T, ...] per output, read from the graph in one batched call.

    The motion outputs do not depend on ``obs``, so a batch of every step with
    zero observations reads them all; the loop then builds each observation
    from the reference at its own step before calling the policy.
    """
    steps = int(meta.get("motion_num_steps") or 0)
    if steps < 1:
        raise Sim2SimError("ONNX metadata lacks motion_num_steps; re-export with `primebot export "
                           "RUN_DIR`")
    batch = session.get_inputs()[0].shape[0]
    # a static batch (--static-batch, mjlab)
    chunk = batch if isinstance(batch, int) and batch > 0 else steps
    obs = np.zeros((chunk, session.get_inputs()[0].shape[1]), np.float32)
    present = {o.name for o in session.get_outputs()}
    names = [*REFERENCE_OUTPUTS, *(n for n in OPTIONAL_REFERENCE_OUTPUTS if n in present)]
    parts = []
    for start in range(0, steps, chunk):
        time_step = np.minimum(np.arange(start, start + chunk), steps - 1).astype(np.float32)[
            :, None
        ]
        parts.append(session.run(names, {"obs": obs, "time_step": time_step}))
    return {k: np.concatenate([p[i] for p in parts])[:steps].astype(np.float64)
            for i, k in enumerate(names)}
