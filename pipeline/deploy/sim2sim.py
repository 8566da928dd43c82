"""sim2sim: the exported policy in a deploy-style MuJoCo loop that uses no torch at all.

Reads only the ONNX file (graph and metadata) and the robot's MJCF, and
imports only numpy, mujoco, onnxruntime, the standard library and
``evaluate.metrics`` (numpy), so it runs wherever the robot-side stack runs
(``python -m primebot.pipeline.deploy.sim2sim policy.onnx robot.xml``). It differs
from training on purpose:

- a fresh ``MjData`` from the MJCF, physics at 1 kHz (training: 200 Hz);
- the MJCF's position servos become torque motors, and the loop computes
  τ = kp·(q* − q) − kd·q̇, clipped to the effort limit, every physics step
  from the metadata's gains (as a joint HAL does at 500 Hz–1 kHz);
- the policy runs at the metadata's control rate (50 Hz), no randomisation
  and no observation noise;
- observations come from ``deploy.observation.DeployObservation``, written
  independently of the training task, from what the robot senses (joint
  encoders, the root IMU's orientation and gyro, forward kinematics to the
  anchor body), in the order ``observation_names`` gives.

Before running, ``check_policy_robot`` refuses an ONNX whose observation size,
joints or bodies do not fit the MJCF (naming them), and checks catch
wrong metadata: the reference joints must reproduce the reference body
positions through the MJCF's kinematics at every step (a permuted
``joint_names`` fails it) and move at the metadata's rate (both in
``deploy.reference_state``), and the metadata's kp/kd must be the MJCF's.

Episodes run in the one deploy loop (``deploy.loop``), with this module's
``TrackingEpisode``. A policy without a reference motion on a planar base
(``export_kind: policy``, the walk task) runs there with ``deploy.planar``'s
``PlanarEpisode`` instead; the
command line and ``sim2sim_run_dir`` choose by the ONNX metadata, and the
rest of a run's sim2sim (comparison with eval.json, flags, video,
sim2sim.json) is one flow for both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime as ort

from ..errors import ExportError
from ..evaluate.metrics import (
    COMPARED_KEYS,
    PHYSICS_FAULT,
    EpisodeMetrics,
    FailureThresholds,
    TrackingSnapshot,
    failure_checks,
    first_failure,
    metric_gaps,
    pooled_summary,
    step_errors,
    threshold,
)
from ..rotations import quat_mul_about_z, rotate_about_z
from ..rundir import EVAL_FILE, EXPORT_DIR, SIM2SIM_FILE, VIDEO_DIR
from . import loop, planar
from .gaps import GAP_THRESHOLDS, checkpoint_flags, gap_flags
from .heading import align_reference
from .joint_hal import PHYSICS_HZ, setup_servo_loop, setup_torque_loop
from .observation import DeployObservation
from .onnx_policy import (
    POLICY_KEYS,
    DeployRobot,
    Sim2SimError,
    check_policy_robot,
    emit_report,
    initial_last_action,
    joint_targets,
    load_policy,
    reference_table,
    require_own_export,
    robot_spec_check,
)
from .planar import is_planar_policy, run_planar_sim2sim
from .reference_state import reference_pose_check, reference_rate_check, set_reference_state

SIM2SIM_VIDEO = "sim2sim.mp4"
"""In ``VIDEO_DIR``: the from-start episode with the reference as a ghost."""


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
    control_dt: float
    """Seconds per policy step (metadata ``control_dt``, else 1 / ``fps``)."""


def prepare(onnx_path: str | Path, mjcf_path: str | Path, physics_hz: float = PHYSICS_HZ,
            robot_spec=None, servo: bool = False) -> Sim2SimSetup:
    """Load both files, check that they fit, set up the PD loop and read the reference.

    ``physics_hz`` is the rate of the physics and of the PD loop (a joint HAL runs at 500 Hz–1 kHz).
    The actuators become torque motors driven by ``joint_hal.hold_joint_targets`` (one episode at
    a time), or with ``servo`` position servos that compute the same PD inside MuJoCo (a batch of
    episodes, ``deploy.stress``). ``robot_spec``: the run's registered robot, when known; its
    default pose and action scale are then checked against the metadata.
    """
    session, meta = load_policy(onnx_path)
    model = mujoco.MjModel.from_xml_path(str(mjcf_path))
    robot = check_policy_robot(session, meta, model)
    control_dt = float(meta.get("control_dt") or 1.0 / meta["fps"])
    substeps = (setup_servo_loop if servo else setup_torque_loop)(robot, meta, control_dt,
                                                                  physics_hz)
    ref = reference_table(session, meta)
    names = meta["body_names"]
    index = {
        "root": np.array([names.index(meta.get("root_body_name") or _root_name(robot))]),
        "anchor": np.array([names.index(meta["anchor_body_name"])]),
        "tracked": np.array([names.index(b) for b in meta.get("tracked_body_names") or names]),
        "ee": np.array([names.index(b) for b in meta.get("end_effector_body_names") or []],
                       dtype=np.int64),
    }
    robot.checks.append(reference_pose_check(robot, ref, int(index["root"][0])))
    robot.checks.append(reference_rate_check(ref, control_dt))
    if robot_spec is not None:
        robot.checks.append(robot_spec_check(meta, robot_spec))
    thresholds = FailureThresholds(
        anchor_height=threshold(meta, "termination_anchor_height", FailureThresholds.anchor_height),
        anchor_ori=threshold(meta, "termination_anchor_orientation", FailureThresholds.anchor_ori),
        ee_height=threshold(meta, "termination_end_effector_height", FailureThresholds.ee_height),
    )
    return Sim2SimSetup(session, meta, robot, ref, DeployObservation(robot, meta), thresholds,
                        substeps, index,
                        control_dt)


def _root_name(robot: DeployRobot) -> str:
    return mujoco.mj_id2name(robot.model, mujoco.mjtObj.mjOBJ_BODY, robot.root_body)


def snapshot(setup: Sim2SimSetup, data: mujoco.MjData, t: int,
             reference: dict[str, np.ndarray] | None = None) -> TrackingSnapshot:
    """Robot and reference at step ``t`` in the shared metrics' terms (one episode, N = 1)."""
    return batch_snapshot(setup, data.xpos[None], data.xquat[None], data.qpos[None],
                          data.qvel[None], np.array([t]),
                          reference)


def batch_snapshot(setup: Sim2SimSetup, xpos: np.ndarray, xquat: np.ndarray, qpos: np.ndarray,
                   qvel: np.ndarray,
                   t: np.ndarray,
                   reference: dict[str, np.ndarray] | None = None) -> TrackingSnapshot:
    """N robots (body poses ``xpos``/``xquat`` [N, nbody, ·], ``qpos``/``qvel`` [N, ·]), robot i
    against the reference at step ``t[i]``, in the shared metrics' terms. ``reference``: the setup's
    unless given (an episode's heading-aligned copy, ``deploy.heading``)."""
    r, ref, ix = setup.robot, setup.reference if reference is None else reference, setup.index
    body = r.motion_body_ids
    pos = lambda ids: xpos[:, body[ids]]  # noqa: E731 - local shorthand
    rpos = lambda ids: ref["body_pos_w"][t][:, ids]  # noqa: E731
    return TrackingSnapshot(
        joint_pos=qpos[:, r.qpos_adr], joint_vel=qvel[:, r.dof_adr],
        body_pos_w=pos(ix["tracked"]), root_pos_w=pos(ix["root"])[:, 0], ee_pos_w=pos(ix["ee"]),
        anchor_pos_w=pos(ix["anchor"])[:, 0], anchor_quat_w=xquat[:, body[ix["anchor"]]][:, 0],
        ref_joint_pos=ref["joint_pos"][t], ref_joint_vel=ref["joint_vel"][t],
        ref_body_pos_w=rpos(ix["tracked"]), ref_root_pos_w=rpos(ix["root"])[:, 0],
        ref_ee_pos_w=rpos(ix["ee"]),
        ref_anchor_pos_w=rpos(ix["anchor"])[:, 0],
        ref_anchor_quat_w=ref["body_quat_w"][t][:, ix["anchor"]][:, 0],
    )


def turn_robot(robot: DeployRobot, data: mujoco.MjData, yaw: float) -> None:
    """Turn the robot in ``data`` by ``yaw`` [rad] about the vertical through its root: root
    orientation and world linear velocity turn, the body-frame angular velocity and the joints stay
    (a robot that does not face the reference's heading)."""
    a, d = robot.root_qpos_adr, robot.root_dof_adr
    angle = np.float64(yaw)
    data.qpos[a + 3:a + 7] = quat_mul_about_z(angle, data.qpos[a + 3:a + 7])
    data.qvel[d:d + 3] = rotate_about_z(angle, data.qvel[d:d + 3])
    mujoco.mj_forward(robot.model, data)


class TrackingEpisode:
    """The ``loop.EpisodeKind`` of a motion-tracking policy: from the reference state of the start
    step, the graph given ``time_step``, scored with the shared metrics against the reference it
    outputs.

    ``start_yaw`` [rad] starts the robot turned about the vertical (``turn_robot``);
    ``align_heading`` turns and moves the episode's reference to the robot at the start
    (``deploy.heading``): the observation, the targets and the metrics then read ``self.reference``.
    """

    def __init__(self, setup: Sim2SimSetup, metrics: EpisodeMetrics, *, align_heading: bool = False,
                 start_yaw: float = 0.0) -> None:
        self.setup, self.metrics = setup, metrics
        self.robot, self.meta = setup.robot, setup.meta
        self.align_heading, self.start_yaw = align_heading, start_yaw
        self.reference = setup.reference
        self.last = setup.reference["joint_pos"].shape[0] - 1
        self.failure: str | None = None
        self._time_step = np.zeros((1, 1), np.float32)
        self.history = setup.observation.history(1)

    def start(self, data: mujoco.MjData, start_step: int) -> int:
        t = int(min(max(start_step, 0), self.last))
        root = int(self.setup.index["root"][0])
        set_reference_state(self.robot, data, self.setup.reference, t, root)
        if self.start_yaw:
            turn_robot(self.robot, data, self.start_yaw)
        self.reference = (align_reference(self.setup.reference, root, t,
                                          data.xpos[self.robot.root_body],
                                          data.xquat[self.robot.root_body])
                          if self.align_heading else self.setup.reference)
        self.failure = None
        if self.history is not None:
            self.history.restart()
        return t

    def first_action(self, t: int) -> np.ndarray:
        return initial_last_action(self.meta, self.reference, np.array([t]))[0]

    def inputs(self, data: mujoco.MjData, t: int, last_action: np.ndarray) -> dict[str, np.ndarray]:
        obs = self.setup.observation.build(data, self.reference, t, last_action)[None]
        if self.history is not None:
            obs = self.history.push(obs)
        self._time_step[0, 0] = t
        return {"obs": obs, "time_step": self._time_step}

    def targets(self, t: int, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last_action = actions.astype(np.float64)
        return last_action, joint_targets(self.meta, self.reference, t, last_action)

    def next_step(self, t: int) -> int:
        return min(t + 1, self.last)

    def frame(self, data: mujoco.MjData, t: int) -> tuple[np.ndarray, int]:
        return data.qpos.copy(), t

    def end(self, data: mujoco.MjData, t: int, length: int, max_steps: int) -> bool:
        if not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()):
            self.failure = PHYSICS_FAULT
            return True
        snap = snapshot(self.setup, data, t, self.reference)
        self.metrics.add_step(step_errors(snap))
        self.failure = first_failure(failure_checks(snap, self.setup.thresholds))[0]
        return self.failure is not None or length >= max_steps or t >= self.last

    def fail(self, failure: str) -> None:
        self.failure = failure

    def record(self, data: mujoco.MjData, start_step: int, length: int) -> dict:
        self.metrics.finish([0], self.failure, [start_step])
        return self.metrics.episodes[-1]


def run_episode(setup: Sim2SimSetup, start_step: int, max_steps: int, metrics: EpisodeMetrics,
                frames: list | None = None, *, align_heading: bool = False,
                start_yaw: float = 0.0) -> TrackingEpisode:
    """One episode from the reference state at ``start_step``; its record is
    ``metrics.episodes[-1]``.

    Ends like a training episode: on a failed check, after ``max_steps``
    policy steps, or at the motion's last step (and on a non-finite action,
    ``loop.run_episode``). ``frames`` collects (qpos, step) per policy step
    for rendering. ``align_heading``/``start_yaw``: ``TrackingEpisode``.
    Returns the episode (its ``reference`` is the one it tracked).
    """
    episode = TrackingEpisode(setup, metrics, align_heading=align_heading, start_yaw=start_yaw)
    loop.run_episode(setup.session, episode, setup.substeps, start_step, max_steps, frames)
    return episode


def run_sim2sim(onnx_path: str | Path, mjcf_path: str | Path, start_steps=(0,),
                max_steps: int | None = None,
                record_frames: bool = False, physics_hz: float = PHYSICS_HZ, robot_spec=None, *,
                align_heading: bool = False, start_yaw_deg: float = 0.0) -> dict:
    """Check the pair, run one episode per start step and return the sim2sim report (metrics and
    checks).

    ``align_heading``: align the reference's heading and horizontal position to the robot's at each
    episode's start (``deploy.heading``); ``start_yaw_deg``: start the robot turned by this many
    degrees about the vertical (a robot that does not face the reference's way).
    """
    t0 = time.perf_counter()
    setup = prepare(onnx_path, mjcf_path, physics_hz, robot_spec)
    meta, control_dt = setup.meta, setup.control_dt
    max_steps = int(max_steps or meta.get("max_episode_steps")
                    or setup.reference["joint_pos"].shape[0])
    groups: dict[str, dict] = {}
    frames: dict[int, list] = {}
    tracked = setup.index["tracked"]
    body_names = tuple(meta["body_names"][int(i)] for i in tracked)
    for group, starts in (("from_start", [int(start_steps[0])]),
                          ("sampled", [int(s) for s in start_steps[1:]])):
        if not starts:
            continue
        metrics = EpisodeMetrics(1, control_dt,
                                 reference_body_pos=setup.reference["body_pos_w"][:, tracked],
                                 max_episode_steps=max_steps, body_names=body_names)
        for start in starts:
            episode_frames = [] if record_frames and start not in frames else None
            episode = run_episode(setup, start, max_steps, metrics, episode_frames,
                                  align_heading=align_heading,
                                  start_yaw=np.deg2rad(start_yaw_deg))
            if episode_frames is not None:
                frames[start] = (episode_frames, episode.reference)
        groups[group] = {**metrics.summary(), "episode_records": metrics.episodes}
    if groups:
        groups["overall"] = pooled_summary(groups, control_dt, body_names)
    checks = setup.robot.checks
    return {
        "onnx": str(onnx_path), "mjcf": str(mjcf_path),
        "policy": {key: meta.get(key) for key in (*POLICY_KEYS, "motion_sha256")},
        "loop": {"physics_hz": 1.0 / setup.robot.model.opt.timestep, "policy_hz": 1.0 / control_dt,
                 "substeps": setup.substeps,
                 "actuation": "torque: kp*(target-q) - kd*qd, clipped to effort",
                 "randomization": False, "observation_noise": False, "max_episode_steps": max_steps,
                 "align_heading": align_heading, "start_yaw_deg": float(start_yaw_deg)},
        "checks": checks, "checks_passed": all(c["ok"] for c in checks),
        **groups, "wall_s": time.perf_counter() - t0,
        **({"_frames": frames, "_setup": setup} if record_frames else {}),
    }




CHECK_FIXES = {
    "pd_gains_match_mjcf": "the MJCF's position actuators must carry the spec's kp/kv, or be "
                           "motors (the gains "
    "contract, docs/robots.md); `primebot robots check ROBOT` finds this before training; fix the "
    "MJCF or "
    "the spec and train again (re-exporting does not change the trained gains)",
}
"""Fix text for checks whose cause is not the export (the default fix: re-export)."""


def require_checks_passed(report: dict, report_path: str | Path) -> None:
    """Raise ``ExportError`` naming the failed checks of a sim2sim report (written to
    ``report_path``)."""
    if report.get("checks_passed", True):
        return
    failed = [c for c in report.get("checks", []) if not c.get("ok")]
    fixes = [CHECK_FIXES[c["name"]] for c in failed if c["name"] in CHECK_FIXES]
    if len(fixes) < len(failed):
        fixes.append("re-export the policy; check the metadata against the robot (docs/deploy.md)")
    raise ExportError(f"sim2sim checks failed: {', '.join(c['name'] for c in failed)} (see "
                      f"{report_path})"
                      + "".join(f"\n    {c['name']}: {c.get('detail', '')}" for c in failed),
                      fix="; ".join(fixes))

def eval_start_steps(evaluation: dict | None) -> list[int]:
    """eval.json's episode start steps, from_start's first (``[0]`` without an evaluation)."""
    starts = [int(e["start_step"]) for group in ("from_start", "sampled")
              for e in (evaluation or {}).get(group, {}).get("episode_records", [])
              if e.get("start_step") is not None]
    return starts or [0]


def sim2sim_run_dir(run_dir: str | Path, mjcf: str | Path, *, video: bool = False,
                    physics_hz: float = PHYSICS_HZ, robot_spec=None, align_heading: bool = False,
                    start_yaw_deg: float = 0.0) -> dict:
    """sim2sim for a run: its export/policy.onnx on ``mjcf``, compared with its eval.json when
    present.

    One flow for every export: the deploy loop the ONNX metadata calls for
    (this module's from eval.json's start frames for a motion-tracking
    policy, ``deploy.planar``'s for a policy without a motion), then the
    same comparison with eval.json's groups (``checkpoint_flags``,
    ``metric_gaps``, ``gap_flags``). Writes ``sim2sim.json`` (metrics,
    checks, differences from eval and flags) and returns it. ``video``
    renders the (from-start) episode into ``videos/sim2sim.mp4``, with the
    reference as a ghost where there is one. ``align_heading`` and
    ``start_yaw_deg``: ``run_sim2sim`` (motion-tracking policies only).
    """
    from ..atomic import atomic_write_text

    run_dir = Path(run_dir)
    onnx_path = run_dir / EXPORT_DIR / "policy.onnx"
    if not onnx_path.is_file():
        raise Sim2SimError(f"{onnx_path} does not exist; export first: primebot export {run_dir}")
    eval_path = run_dir / EVAL_FILE
    evaluation = json.loads(eval_path.read_text(encoding="utf-8")) if eval_path.is_file() else None
    meta = load_policy(onnx_path)[1]
    require_own_export(run_dir, onnx_path, meta)
    if is_planar_policy(meta):  # a policy without a motion (walk)
        _no_heading_options(onnx_path, align_heading, start_yaw_deg)
        report = run_planar_sim2sim(onnx_path, mjcf, record_frames=video, physics_hz=physics_hz)
        frames, robot = report.pop("_frames", []), report.pop("_robot", None)
        fps = report["loop"]["policy_hz"]
        render = (lambda path: planar.render_episode(robot, frames, path, fps)) if frames else None
        groups, keys, thresholds = ("episodes",), planar.COMPARED_KEYS, planar.GAP_THRESHOLDS
    else:
        starts = eval_start_steps(evaluation)
        report = run_sim2sim(onnx_path, mjcf, starts, record_frames=video, physics_hz=physics_hz,
                             robot_spec=robot_spec, align_heading=align_heading,
                             start_yaw_deg=start_yaw_deg)
        episodes, setup = report.pop("_frames", {}), report.pop("_setup", None)
        # the run's own setup: the ONNX and MJCF are loaded and checked once
        render = (lambda path: render_episode(setup, episodes[starts[0]][0], path,
                                              reference=episodes[starts[0]][1])
                  ) if episodes else None
        groups, keys, thresholds = ("from_start", "sampled"), COMPARED_KEYS, GAP_THRESHOLDS
    report["eval"] = str(eval_path) if evaluation else None
    flags: list[str] = []
    if evaluation and any(group in evaluation for group in groups):
        flags += checkpoint_flags(report["policy"], evaluation)
        report["gap_vs_eval"] = {}
        for group in groups:
            if group in report and group in evaluation:
                gaps = metric_gaps(evaluation[group], report[group], keys)
                report["gap_vs_eval"][group] = gaps
                flags += [f"{group} {line}" for line in gap_flags(gaps, thresholds)]
    report["gap_thresholds"] = thresholds
    report["gap_flags"] = flags
    report["gap_flagged"] = bool(flags)
    if video and render is not None:
        path = render(run_dir / VIDEO_DIR / SIM2SIM_VIDEO)
        if path is not None:
            report["video"] = str(path)
    atomic_write_text(run_dir / SIM2SIM_FILE, json.dumps(report, indent=2))
    if "video" not in report:  # an earlier sim2sim's video would otherwise pass for this one's
        (run_dir / VIDEO_DIR / SIM2SIM_VIDEO).unlink(missing_ok=True)
    return report


def render_episode(setup: Sim2SimSetup, frames: list, output: Path, title: str = "sim2sim",
                   reference: dict[str, np.ndarray] | None = None) -> Path | None:
    """The episode's robot with the reference (the setup's unless given) as a ghost
    (``render.ghost``); None without OpenGL."""
    from ..render.ghost import reference_ghosts, render_ghost_video

    r, ref = setup.robot, setup.reference if reference is None else reference
    root = int(setup.index["root"][0])
    qpos = [q for q, _ in frames]
    # DeployRobot has the root_qpos_adr and qpos_adr set_qpos reads from RobotIndices
    ghosts = reference_ghosts(qpos, [t for _, t in frames], r, ref["body_pos_w"][:, root],
                              ref["body_quat_w"][:, root],
                              ref["joint_pos"])
    return render_ghost_video(r.model, qpos, ghosts, r.root_body, output, 1.0 / setup.control_dt,
                              title=title)


def _no_heading_options(onnx_path: str | Path, align_heading: bool, start_yaw_deg: float) -> None:
    if align_heading or start_yaw_deg:
        raise Sim2SimError(f"{onnx_path} tracks no reference motion: heading alignment and a "
                           "turned start apply to "
                           "a motion-tracking policy", fix="drop --align-heading / --start-yaw")


def run_policy_file(onnx_path: str | Path, mjcf: str | Path, start_steps,
                    physics_hz: float = PHYSICS_HZ, *,
                    align_heading: bool = False, start_yaw_deg: float = 0.0) -> dict:
    """The sim2sim report of one ONNX file on ``mjcf``: the tracking loop from ``start_steps``, or
    the planar loop for a policy without a motion (walk)."""
    if is_planar_policy(load_policy(onnx_path)[1]):
        _no_heading_options(onnx_path, align_heading, start_yaw_deg)
        return run_planar_sim2sim(onnx_path, mjcf, physics_hz=physics_hz)
    return run_sim2sim(onnx_path, mjcf, start_steps, physics_hz=physics_hz,
                       align_heading=align_heading,
                       start_yaw_deg=start_yaw_deg)


def add_heading_arguments(parser: argparse.ArgumentParser) -> None:
    """The runners' ``--align-heading`` and ``--start-yaw`` options (``run_sim2sim``)."""
    parser.add_argument("--align-heading", action="store_true",
                        help="turn and move the reference to the robot's heading and position at "
                             "each episode start")
    parser.add_argument("--start-yaw", type=float, default=0.0, metavar="DEG",
                        help="start the robot turned by DEG degrees about the vertical (default 0)")


def main(argv: list[str] | None = None) -> int:
    """``python -m primebot.pipeline.deploy.sim2sim POLICY.onnx ROBOT.xml``: a torch-free deploy
    check."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("onnx")
    parser.add_argument("mjcf")
    parser.add_argument("--start", type=int, nargs="*", default=[0],
                        help="start steps (the first is 'from_start')")
    parser.add_argument("--output", help="write the report here as JSON")
    parser.add_argument("--physics-hz", type=float, default=PHYSICS_HZ,
                        help="physics and PD rate (default 1000)")
    add_heading_arguments(parser)
    args = parser.parse_args(argv)
    try:
        report = run_policy_file(args.onnx, args.mjcf, args.start, args.physics_hz,
                                 align_heading=args.align_heading,
                                 start_yaw_deg=args.start_yaw)
    except Sim2SimError as exc:
        print(f"sim2sim: error: {exc}", file=sys.stderr)
        return 2
    return emit_report(report, args.output)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
