"""The reference motion in the MJCF's terms: the states that put a robot exactly on it, and the
two checks that a policy's reference fits the robot's model.

``deploy.sim2sim`` runs both checks before any episode (a permuted ``joint_names`` or a wrong
frame rate in the metadata fails them, naming the body and step or the rate), and starts each
episode from ``set_reference_state``; ``deploy.stress_episodes`` starts a batch of episodes from
``reference_states``. numpy and mujoco only, like the rest of the deploy side.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..rotations import quat_apply_inverse, quat_normalize
from .onnx_policy import DeployRobot

REFERENCE_POSE_TOLERANCE_M = 2e-3
"""float32 motion data reproduces body positions to well under a millimetre; more means wrong
metadata."""
def reference_states(robot: DeployRobot, ref: dict[str, np.ndarray], t: np.ndarray,
                     root_index: int) -> tuple[np.ndarray, np.ndarray]:
    """``qpos`` [N, nq] and ``qvel`` [N, nv] that put a robot exactly in the reference state of each
    step ``t[i]`` (root pose and velocity, joints); the rest of the state is the model's ``qpos0``
    and zero."""
    m = robot.model
    a, d = robot.root_qpos_adr, robot.root_dof_adr
    qpos = np.tile(m.qpos0, (len(t), 1))
    qvel = np.zeros((len(t), m.nv))
    quat = quat_normalize(ref["body_quat_w"][t, root_index])
    qpos[:, a:a + 3] = ref["body_pos_w"][t, root_index]
    qpos[:, a + 3:a + 7] = quat
    qpos[:, robot.qpos_adr] = ref["joint_pos"][t]
    qvel[:, d:d + 3] = ref["body_lin_vel_w"][t, root_index]
    # a free joint's: body frame
    qvel[:, d + 3:d + 6] = quat_apply_inverse(quat, ref["body_ang_vel_w"][t, root_index])
    qvel[:, robot.dof_adr] = ref["joint_vel"][t]
    return qpos, qvel


def set_reference_state(robot: DeployRobot, data: mujoco.MjData, ref: dict[str, np.ndarray], t: int,
                        root_index: int, stage: str = "forward") -> None:
    """Put the robot exactly in the reference state of step ``t`` (root pose and velocity, joints).

    ``stage="kinematics"`` computes only body poses (enough for the pose check).
    """
    mujoco.mj_resetData(robot.model, data)
    qpos, qvel = reference_states(robot, ref, np.array([t]), root_index)
    data.qpos[:], data.qvel[:] = qpos[0], qvel[0]
    (mujoco.mj_kinematics if stage == "kinematics" else mujoco.mj_forward)(robot.model, data)


def reference_pose_check(robot: DeployRobot, ref: dict[str, np.ndarray], root_index: int,
                         max_frames: int = 500) -> dict:
    """The reference joints through the MJCF's kinematics must land the bodies where the reference
    says.

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
    name = mujoco.mj_id2name(robot.model, mujoco.mjtObj.mjOBJ_BODY,
                             int(robot.motion_body_ids[worst_body]))
    detail = (f"reference joints reproduce the reference bodies at every step (worst {name}: "
              f"{worst_error:.2e} m)"
              if ok else
              f"at step {worst_step} body {name} is {worst_error:.3f} m from the reference when "
              "the reference joints "
              "are applied in joint_names order: the metadata's joint order does not match the "
              "motion")
    return {"name": "reference_pose_matches_kinematics", "ok": ok, "detail": detail,
            "max_error_m": worst_error}


REFERENCE_RATE_TOLERANCE = 0.1
"""The reference joint velocities may differ from d(joint_pos)/dt at control_dt by this fraction
(float32, finite differences); a wrong rate is off by its ratio (50 vs 30 fps: 40 %)."""


def reference_rate_check(ref: dict[str, np.ndarray], control_dt: float) -> dict:
    """The graph's reference motion must move at the metadata's rate: its joint velocities equal the
    finite differences of its joint positions at ``control_dt`` (a wrong fps/control_dt scales
    them)."""
    pos, vel = ref["joint_pos"], ref["joint_vel"]
    estimate = np.gradient(pos, control_dt, axis=0) if len(pos) > 2 else np.zeros_like(pos)
    power = float((estimate * estimate).sum())
    if power < 1e-12:
        return {"name": "reference_rate_matches_control_dt", "ok": True,
                "detail": "the reference joints do not move: nothing to compare"}
    scale = float((vel * estimate).sum() / power)
    ok = abs(scale - 1.0) <= REFERENCE_RATE_TOLERANCE
    detail = (f"reference joint_vel = {scale:.3f} x d(joint_pos)/dt at control_dt {control_dt:g} s"
              +
              ("" if ok
               else f": the motion in the graph runs at {1 / (control_dt * scale):.4g} fps, "
                             f"the metadata says {1 / control_dt:.4g}"))
    return {"name": "reference_rate_matches_control_dt", "ok": ok, "detail": detail, "scale": scale}
