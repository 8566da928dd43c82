"""Can the robot's body do a motion at all? The reference replayed under PD, no policy.

``primebot motion pd-replay`` plays one episode of the default task's open-loop replay
(``play.open_loop``, docs/plugin_hooks.md) from the motion's first frame with every action zero:
for motion tracking each joint's PD target is the reference's joint angle, with no
randomisation, no observation noise and no terminations. A motion a policy can learn usually
stays close under open-loop PD while the feet carry the robot (balance needs feedback, so it may
drift and fall late); one whose root never follows the reference (a sit-up that lifts the legs
instead of the torso, a jump the motors cannot push) asks the body for something it cannot do,
and no training will fix that.

The figures: per second, the reference's and the robot's root height and the tracked bodies'
mean error; the episode's MPKPE and a statue's (frozen at frame 0); when the tracked bodies first
drift ``OFF_TRACK_M`` from the reference; and the joints furthest from their targets before that
(the first second by default): a joint that sags far under its servo while the robot is still up
is where the body needs the policy's help first (or a stiffer servo: docs/robots.md, "Gains").
With ``feedforward`` every target also carries the servo feedforward of the motion's own torques
(``play.open_loop_feedforward``; tracking: ``actions.offset: servo_target``, docs/tasks.md,
"Actions"), so no servo sags: what still falls is balance, which open-loop PD cannot give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MotionError
from ..motion.format import load_motion
from ..registry import DEFAULT_TASK, Registry
from ..robot.spec import RobotSpec
from .metrics import statue_mpkpe, step_errors

OFF_TRACK_M = 0.05
"""Tracked bodies this far from the reference (mean) count as off track."""
WORST_JOINTS = 5
"""Joints listed by their error under PD."""


def pd_replay(motion_path: str | Path, robot: RobotSpec, registry: Registry,
              feedforward: bool = False, video: str | Path | None = None) -> dict[str, Any]:
    """Replay ``motion_path`` under PD on ``robot`` in the default task; per-step root heights,
    tracked-body errors and joint errors (a JSON-ready dict; ``video``: where the film of the robot
    beside its reference went, None without OpenGL). A task without the replay asked for is a
    ``MotionError`` naming it."""
    task = registry.get("tasks", DEFAULT_TASK)
    if feedforward and task.play.open_loop_feedforward is None:
        raise MotionError(f"task {task.name!r} declares no servo feedforward "
                          "(play.open_loop_feedforward)",
                          fix="leave out --feedforward; see docs/plugin_hooks.md (PlaySettings)")
    motion = load_motion(motion_path)
    env = task.open_loop_env(robot, motion, registry,
                             task.play.open_loop_feedforward if feedforward else None)
    view = task.evaluation_view(env)
    heights, reference_heights, errors, joint_offsets = [], [], [], []
    frames: list[np.ndarray] = []
    steps: list[int] = []
    try:
        env.reset()
        zero = np.zeros((1, env.num_actions), dtype=np.float32)
        for _ in range(env.reference.num_steps - 1):
            frames.append(env.sim.qpos[0].copy())
            steps.append(int(view.reference_steps()[0]))
            result = env.step(zero)
            if result.truncated.any() or result.terminated.any():
                break  # the motion's last frame: what follows is the next episode's start
            snap = view.snapshot(np.arange(1))
            heights.append(float(snap.root_pos_w[0, 2]))
            reference_heights.append(float(snap.ref_root_pos_w[0, 2]))
            errors.append(float(step_errors(snap)["mpkpe_m"][0]))
            joint_offsets.append(snap.joint_pos[0] - snap.ref_joint_pos[0])
        filmed = None if video is None else view.render(frames, steps, Path(video),
                                                        title="PD replay, no policy")
    finally:
        env.close()
    return {"motion": str(motion_path), "robot": robot.name, "task": task.name,
            "step_dt": env.step_dt, "feedforward": feedforward,
            "root_height_m": heights, "reference_root_height_m": reference_heights,
            "mpkpe_m": errors, "mean_mpkpe_m": float(np.mean(errors)),
            # frozen in the first frame, over the steps replayed
            "statue_mpkpe_m": statue_mpkpe(view.reference_body_pos, 0, len(errors)),
            "joint_names": list(robot.joint_names),
            "joint_error_rad": np.asarray(joint_offsets).tolist(),
            "video": None if filmed is None else str(filmed)}


def off_track_s(out: dict[str, Any]) -> float | None:
    """Seconds until the tracked bodies' mean error first reaches ``OFF_TRACK_M`` (None: never)."""
    far = np.flatnonzero(np.asarray(out["mpkpe_m"]) >= OFF_TRACK_M)
    return None if far.size == 0 else float((far[0] + 1) * out["step_dt"])


def joint_errors(out: dict[str, Any], window_s: float) -> list[tuple[str, float, float]]:
    """``(joint, RMS, max |error|)`` in radians over the first ``window_s`` seconds, the largest RMS
    first."""
    steps = max(1, round(window_s / out["step_dt"]))
    error = np.abs(np.asarray(out["joint_error_rad"])[:steps])
    rms, peak = np.sqrt((error ** 2).mean(axis=0)), error.max(axis=0)
    order = np.argsort(-rms)
    return [(out["joint_names"][j], float(rms[j]), float(peak[j])) for j in order]


def report_lines(out: dict[str, Any], window_s: float = 1.0) -> list[str]:
    """What ``primebot motion pd-replay`` prints of a replay."""
    targets = ("the reference joints plus the servo feedforward" if out["feedforward"]
               else "the reference joints")
    lines = [f"{out['motion']} on {out['robot']}, PD on {targets}, no policy:",
             "    t   ref root z   robot root z   tracked-body error"]
    for i in range(0, len(out["mpkpe_m"]), round(1.0 / out["step_dt"])):
        lines.append(f"{(i + 1) * out['step_dt']:5.1f} s "
                     f"{out['reference_root_height_m'][i]:9.3f} m "
                     f"{out['root_height_m'][i]:12.3f} m {out['mpkpe_m'][i]:14.3f} m")
    lines.append(f"MPKPE {out['mean_mpkpe_m']:.3f} m over the episode (a statue frozen at frame 0: "
                 f"{out['statue_mpkpe_m']:.3f} m)")
    off = off_track_s(out)
    lines.append(f"the tracked bodies are {OFF_TRACK_M * 100:.0f} cm off the reference "
                 + ("at no step" if off is None else f"from {off:.2f} s"))
    worst = joint_errors(out, window_s)[:WORST_JOINTS]
    lines.append(f"joints furthest from their reference in the first {window_s:g} s "
                 "(RMS / max, deg): "
                 + ", ".join(f"{name} {np.degrees(rms):.1f} / {np.degrees(peak):.1f}"
                             for name, rms, peak in worst))
    if out.get("video"):
        lines.append(f"wrote {out['video']} (the robot, and its reference as a ghost)")
    return lines
