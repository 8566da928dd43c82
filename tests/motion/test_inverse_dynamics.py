"""A motion's joint torques by inverse dynamics, and the servo feedforward that gives them: q1 held
in the squat's deepest pose on real MuJoCo stays there only with the feedforward."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from primebot.pipeline.motion.convert import root_trajectory
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.motion.inverse_dynamics import (
    MotionTorques,
    motion_torques,
    servo_feedforward,
)
from primebot.pipeline.robot.model import robot_indices


def _held(repo_root, model, spec, frame: int, frames: int = 25):
    """The squat's ``frame`` held still for ``frames`` frames: root pose, joints."""
    motion = load_motion(repo_root / "motions" / "squat.npz")
    ix = robot_indices(model, spec)
    root_pos, root_quat = root_trajectory(motion, ix)
    hold = np.full(frames, frame)
    return ix, root_pos[hold], root_quat[hold], motion.joint_pos[hold], motion.fps


def _sag_after_one_second(model, ix, root_pos, root_quat, joint_pos, targets) -> float:
    """Largest |q − reference| (rad) after 1 s of the servos holding ``targets``, the robot started
    still in the reference pose on the floor."""
    data = mujoco.MjData(model)
    data.qpos[ix.root_qpos_adr:ix.root_qpos_adr + 3] = root_pos
    data.qpos[ix.root_qpos_adr + 3:ix.root_qpos_adr + 7] = root_quat
    data.qpos[ix.qpos_adr] = joint_pos
    data.ctrl[ix.actuator_ids] = targets
    for _ in range(round(1.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    return float(np.abs(data.qpos[ix.qpos_adr] - joint_pos).max())


def test_the_squats_deepest_pose_is_held_only_with_the_feedforward(repo_root, model, spec):
    motion = load_motion(repo_root / "motions" / "squat.npz")
    deepest = int(np.argmin(motion.body_pos_w[:, 0, 2]))
    ix, root_pos, root_quat, joint_pos, fps = _held(repo_root, model, spec, deepest)
    torques = motion_torques(model, ix, root_pos, root_quat, joint_pos, fps)
    assert torques.supported.all()
    # held still, the pose needs no velocity: the servo pushes τ from an offset of τ / kp
    assert np.abs(torques.joint_vel).max() < 1e-9
    offset = servo_feedforward(torques, spec.stiffness, spec.damping, spec.effort_limit)
    np.testing.assert_allclose(offset, torques.torque / spec.stiffness)
    knees = [spec.joint_names.index(n) for n in ("left_knee_joint", "right_knee_joint")]
    # bent knees carry the robot: the largest torques, alike on both sides of a symmetric pose
    assert np.abs(torques.torque[0, knees]).min() > 2.0
    assert torques.torque[0, knees[0]] == pytest.approx(torques.torque[0, knees[1]], rel=0.05)
    plain = _sag_after_one_second(model, ix, root_pos[0], root_quat[0], joint_pos[0], joint_pos[0])
    fed = _sag_after_one_second(model, ix, root_pos[0], root_quat[0], joint_pos[0],
                                joint_pos[0] + offset[0])
    assert plain > 0.05  # the servos give several degrees under the load (q1: 7°)
    assert fed < 0.1 * plain


def test_a_robot_off_the_floor_has_no_support(repo_root, model, spec):
    ix, root_pos, root_quat, joint_pos, fps = _held(repo_root, model, spec, 0, frames=4)
    raised = root_pos + [0.0, 0.0, 0.3]
    torques = motion_torques(model, ix, raised, root_quat, joint_pos, fps)
    assert not torques.supported.any()
    assert motion_torques(model, ix, root_pos, root_quat, joint_pos, fps).supported.all()


def test_the_feedforward_pays_the_dampers_way_and_stops_at_the_effort_limit():
    torques = MotionTorques(torque=np.array([[10.0, 100.0]]), joint_vel=np.array([[2.0, 0.0]]),
                            supported=np.array([True]))
    offset = servo_feedforward(torques, stiffness=[100.0, 50.0], damping=[5.0, 1.0],
                               effort_limit=[40.0, 30.0])
    # (10 + 5·2) / 100; the second servo can push 30 N·m at most
    np.testing.assert_allclose(offset, [[0.2, 0.6]])
