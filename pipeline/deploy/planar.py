"""sim2sim for a policy without a reference motion on a planar base (``export_kind: policy``, e.g.
walk).

``PlanarEpisode`` is this kind of policy for the one deploy loop
(``deploy.loop``, as ``sim2sim`` uses it: a fresh ``MjData`` from the MJCF,
physics at 1 kHz, τ = kp·(q* − q) − kd·q̇ from the metadata's gains clipped
to the effort limit every physics step, the policy at the metadata's control
rate, no randomisation or noise), for a robot whose base is the joints named
in ``base_joint_names`` (biped4: slide x, slide z, hinge pitch) instead of a
free joint. Reads only the ONNX file and the MJCF; imports numpy, mujoco and
onnxruntime (never torch).

The observation is built by name from ``observation_names``, from what the
robot senses, with the names the metadata defines: ``<root>_pitch`` and
``<root>_pitch_rate`` (``<root>``: ``root_body_name``, e.g. walk's
``torso_pitch``) from the base's hinge (an IMU's pitch and gyro on
hardware), ``<joint>_pos`` (minus the default pose) and ``<joint>_vel`` from
the encoders (``<joint>``: ``joint_names``), ``<joint>_last_action`` from the
previous policy output. A name it does not know is refused, as is an MJCF
whose joints do not fit. Episodes start in the metadata's default pose,
actions are clipped to ``action_clip`` and targets to the MJCF joint range
as in training, and an episode ends at ``max_episode_steps`` or on the fall
the metadata gives (``termination_min_height`` of the root body,
``termination_max_pitch``).

Checks: the metadata's kp/kd are the MJCF servos' (``gain_check``), and its
default pose is the MJCF's first keyframe (biped4's ``stand``) by joint name,
which a permuted ``joint_names`` (hip ↔ knee) fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime as ort

from ..evaluate.metrics import summarise, threshold
from . import loop
from .joint_hal import PHYSICS_HZ, setup_torque_loop
from .onnx_policy import (
    POLICY_KEYS,
    Sim2SimError,
    gain_check,
    joint_targets,
    load_policy,
    match_joints,
)

POSE_TOLERANCE_RAD = 1e-6
GAP_THRESHOLDS = {"fall_rate": 0.2, "mean_forward_speed_m_s": 0.2, "mean_episode_length_s": 2.0}
"""|sim2sim − eval| beyond these is flagged."""
WALK_MEANS = ("forward_speed_m_s", "distance_m")
"""Per-episode values of the records that the summary averages (``mean_<key>``), as eval's walk
metrics do."""
COMPARED_KEYS = ("mean_forward_speed_m_s", "mean_distance_m", "fall_rate", "mean_episode_length",
                 "mean_episode_length_s")


@dataclass
class PlanarRobot:
    """MJCF indices of the policy joints (metadata order) and of the planar base."""

    model: mujoco.MjModel
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    actuator_ids: np.ndarray
    joint_range: np.ndarray
    forward_qpos_adr: int
    pitch_qpos_adr: int
    pitch_dof_adr: int
    root_body: int
    checks: list[dict] = field(default_factory=list)


def is_planar_policy(meta: dict) -> bool:
    """Whether ``meta`` is a policy without a motion (``export_kind: policy``)."""
    return meta.get("export_kind") == "policy"


def check_planar_robot(session: ort.InferenceSession, meta: dict,
                       model: mujoco.MjModel) -> PlanarRobot:
    """Match the ONNX to the planar MJCF by name; raise ``Sim2SimError`` listing every mismatch."""
    base = list(meta.get("base_joint_names") or [])
    if base in ([], ["free"]):
        raise Sim2SimError(
            "sim2sim replays a policy without a reference motion only on a planar base "
            "(base_joint_names "
            "slide x, slide z, hinge pitch); this export's base is "
            f"{meta.get('base_joint_names', 'unknown')!r}",
            fix="evaluate it with `primebot eval RUN_DIR`; a free-base deploy loop for such tasks "
                "is not written yet",
        )
    problems: list[str] = []
    joints = list(meta["joint_names"])
    obs_input = session.get_inputs()[0].shape[1]
    if obs_input != len(meta["observation_names"]):
        problems.append(f"observation size: the graph takes {obs_input} values, observation_names "
                        "lists "
                        f"{len(meta['observation_names'])}")
    unknown = [n for n in meta["observation_names"] if n not in observation_sources(meta)]
    if unknown:
        problems.append("observation term(s) unknown to the planar deploy loop: "
                        f"{', '.join(unknown)}")
    joint_ids, actuators = match_joints(model, joints, problems, base=tuple(base))
    types = {}
    for name in base:
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            problems.append(f"base joint {name!r} (metadata base_joint_names) is not in the MJCF")
        else:
            types[name] = (j, int(model.jnt_type[j]))
    slides = [(j, n) for n, (j, t) in types.items() if t == mujoco.mjtJoint.mjJNT_SLIDE]
    hinges = [j for j, t in types.values() if t == mujoco.mjtJoint.mjJNT_HINGE]
    if types and len(types) == len(base) and (len(slides) != 2 or len(hinges) != 1):
        problems.append(f"base joints {', '.join(base)} must be two slides (x, z) and one hinge "
                        "(pitch)")
    if problems:
        raise Sim2SimError("the ONNX policy does not fit the robot model:\n    "
                           + "\n    ".join(problems)
                           + "\n  fix: export the policy for this robot, or pass the MJCF it was "
                             "trained with")
    forward = max(slides, key=lambda s: abs(model.jnt_axis[s[0], 0]))[0]  # the slide along x
    ids = np.array(joint_ids)
    robot = PlanarRobot(
        model=model, qpos_adr=model.jnt_qposadr[ids].astype(np.int64),
        dof_adr=model.jnt_dofadr[ids].astype(np.int64),
        actuator_ids=np.array([actuators[j] for j in joint_ids], dtype=np.int64),
        joint_range=np.where(model.jnt_limited[ids, None] > 0, model.jnt_range[ids],
                             [-np.inf, np.inf]),
        forward_qpos_adr=int(model.jnt_qposadr[forward]),
        pitch_qpos_adr=int(model.jnt_qposadr[hinges[0]]),
        pitch_dof_adr=int(model.jnt_dofadr[hinges[0]]), root_body=int(model.jnt_bodyid[hinges[0]]),
    )
    robot.checks += [gain_check(model, robot, meta), _default_pose_check(robot, meta)]
    return robot


def _default_pose_check(robot: PlanarRobot, meta: dict) -> dict:
    """The metadata's default pose must be the MJCF's first keyframe at the policy joints (when it
    has one)."""
    m = robot.model
    if m.nkey == 0:
        return {"name": "default_pose_matches_keyframe", "ok": True,
                "detail": "the MJCF has no keyframe to compare"}
    key = m.key_qpos[0][robot.qpos_adr]
    default = np.asarray(meta["default_joint_pos"])
    bad = [f"{n}: metadata {d:.4g}, keyframe {k:.4g}"
           for n, d, k in zip(meta["joint_names"], default, key, strict=True)
           if abs(d - k) > POSE_TOLERANCE_RAD]
    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, 0) or "0"
    return {"name": "default_pose_matches_keyframe", "ok": not bad,
            "detail": (f"metadata default_joint_pos differs from keyframe {name!r}: "
                       + "; ".join(bad)
                       + " (is joint_names in the MJCF's order?)") if bad
            else f"metadata default_joint_pos equals keyframe {name!r}"}


def observation_sources(meta: dict) -> dict[str, tuple[str, int]]:
    """The observation names this loop can sense, each → (quantity, joint index), from the
    metadata's names.

    ``<root_body_name>_pitch`` and ``_pitch_rate`` (the base hinge), and per
    ``joint_names`` entry ``<joint>_pos``, ``<joint>_vel``, ``<joint>_last_action``.
    """
    root = meta.get("root_body_name")
    sources = (
        {f"{root}_pitch": ("pitch", -1), f"{root}_pitch_rate": ("pitch_rate", -1)} if root else {}
    )
    for j, joint in enumerate(meta["joint_names"]):
        sources.update({f"{joint}_{quantity}": (quantity, j)
                        for quantity in ("pos", "vel", "last_action")})
    return sources


def build_observation(robot: PlanarRobot, meta: dict, data: mujoco.MjData,
                      last_action: np.ndarray) -> np.ndarray:
    """The policy observation, term by term in ``observation_names`` order, from sensed
    quantities."""
    sources = observation_sources(meta)
    default = meta["default_joint_pos"]
    values = []
    for name in meta["observation_names"]:  # check_planar_robot let no other name through
        quantity, j = sources[name]
        if quantity == "pitch":
            values.append(data.qpos[robot.pitch_qpos_adr])
        elif quantity == "pitch_rate":
            values.append(data.qvel[robot.pitch_dof_adr])
        elif quantity == "last_action":
            values.append(last_action[j])
        elif quantity == "pos":
            values.append(data.qpos[robot.qpos_adr[j]] - default[j])
        else:
            values.append(data.qvel[robot.dof_adr[j]])
    return np.asarray(values, dtype=np.float32)


class PlanarEpisode:
    """The ``loop.EpisodeKind`` of a policy without a motion on a planar base: from the default
    pose, actions clipped to ``action_clip``, targets to the joint range, ended by the metadata's
    fall."""

    def __init__(self, meta: dict, robot: PlanarRobot) -> None:
        self.meta, self.robot = meta, robot
        self.clip = threshold(meta, "action_clip", np.inf, disabled=np.inf)
        self.min_height = threshold(meta, "termination_min_height", -np.inf, disabled=-np.inf)
        self.max_pitch = threshold(meta, "termination_max_pitch", np.inf, disabled=np.inf)
        self.start_x, self.fell = 0.0, False

    def start(self, data: mujoco.MjData, start_step: int) -> int:
        data.qpos[self.robot.qpos_adr] = self.meta["default_joint_pos"]
        mujoco.mj_forward(self.robot.model, data)
        self.start_x, self.fell = float(data.qpos[self.robot.forward_qpos_adr]), False
        return 0

    def first_action(self, t: int) -> np.ndarray:
        return np.zeros(len(self.meta["joint_names"]))

    def inputs(self, data: mujoco.MjData, t: int, last_action: np.ndarray) -> dict[str, np.ndarray]:
        return {"obs": build_observation(self.robot, self.meta, data, last_action)[None]}

    def targets(self, t: int, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last_action = np.clip(actions.astype(np.float64), -self.clip, self.clip)
        limits = self.robot.joint_range
        return last_action, np.clip(joint_targets(self.meta, None, t, last_action), limits[:, 0],
                                    limits[:, 1])

    def next_step(self, t: int) -> int:
        return t + 1

    def frame(self, data: mujoco.MjData, t: int) -> np.ndarray:
        return data.qpos.copy()

    def end(self, data: mujoco.MjData, t: int, length: int, max_steps: int) -> bool:
        broken = not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all())
        height, pitch = data.xpos[self.robot.root_body, 2], data.qpos[self.robot.pitch_qpos_adr]
        self.fell = bool(broken or height < self.min_height or abs(pitch) > self.max_pitch)
        return self.fell or length >= max_steps

    def fail(self, failure: str) -> None:
        self.fell = True

    def record(self, data: mujoco.MjData, start_step: int, length: int) -> dict:
        """Length, fall, distance along the forward slide and speed."""
        finite = np.isfinite(data.qpos).all()
        distance = float(data.qpos[self.robot.forward_qpos_adr]) - self.start_x if finite else 0.0
        duration = length * float(self.meta["control_dt"])
        return {"length": length, "terminated": self.fell, "distance_m": distance,
                "forward_speed_m_s": distance / duration}


def run_episode(session: ort.InferenceSession, meta: dict, robot: PlanarRobot, substeps: int,
                max_steps: int, frames: list | None = None) -> dict:
    """One episode from the default pose; returns its record (length, fell, distance, speed)."""
    return loop.run_episode(session, PlanarEpisode(meta, robot), substeps, 0, max_steps, frames)


def run_planar_sim2sim(onnx_path: str | Path, mjcf_path: str | Path, episodes: int = 1,
                       max_steps: int | None = None, record_frames: bool = False,
                       physics_hz: float = PHYSICS_HZ) -> dict:
    """Check the pair, run ``episodes`` episodes (identical: nothing is random) and return the
    report."""
    t0 = time.perf_counter()
    session, meta = load_policy(onnx_path)
    model = mujoco.MjModel.from_xml_path(str(mjcf_path))
    robot = check_planar_robot(session, meta, model)
    control_dt = float(meta["control_dt"])
    substeps = setup_torque_loop(robot, meta, control_dt, physics_hz)
    max_steps = int(max_steps or meta.get("max_episode_steps") or 1000)
    frames: list = []
    records = [run_episode(session, meta, robot, substeps, max_steps,
                           frames if record_frames and k == 0 else None)
               for k in range(episodes)]
    return {
        "onnx": str(onnx_path), "mjcf": str(mjcf_path),
        "policy": {key: meta.get(key) for key in (*POLICY_KEYS, "export_kind")},
        "loop": {"physics_hz": 1.0 / model.opt.timestep, "policy_hz": 1.0 / control_dt,
                 "substeps": substeps,
                 "actuation": "torque: kp*(target-q) - kd*qd, clipped to effort",
                 "base": meta["base_joint_names"],
                 "randomization": False, "observation_noise": False,
                 "max_episode_steps": max_steps},
        "checks": robot.checks, "checks_passed": all(c["ok"] for c in robot.checks),
        "episodes": {**summarise(records, control_dt, means=WALK_MEANS),
                     "episode_records": records},
        "wall_s": time.perf_counter() - t0,
        **({"_frames": frames, "_robot": robot} if record_frames else {}),
    }


def render_episode(robot: PlanarRobot, frames: list, output: Path, fps: float) -> Path | None:
    """The episode's qpos frames through the MJCF's first camera (no ghost: there is no
    reference)."""
    from ..render.ghost import render_ghost_video

    camera = (
        mujoco.mj_id2name(robot.model, mujoco.mjtObj.mjOBJ_CAMERA, 0) if robot.model.ncam else None
    )
    return render_ghost_video(robot.model, frames, None, robot.root_body, output, fps,
                              title="sim2sim",
                              camera_name=camera)
