"""The policy observation as a deploy loop builds it: from sensed quantities, term by term.

``SensedState`` is what a robot's sensors give (encoders, the root IMU, forward
kinematics; the root's linear velocity only from a state estimator);
``DeployObservation`` turns it into the policy's observation in the order the
ONNX metadata's ``observation_names`` gives (docs/deploy.md), with MuJoCo's
quaternion conventions; a term the policy observes with history goes through
``sim.observation_history``, the same class the training env stacks with.
Written against numpy and mujoco only (never torch); ``robot`` is the
``onnx_policy.DeployRobot`` the policy was matched to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from ..rotations import matrix_first_two_columns, quat_apply_inverse, quat_conjugate, quat_mul
from ..sim.observation_history import ObservationHistory, stacked_lengths


def history_lengths(meta: dict) -> list[int]:
    """Per observation term, the steps of its values the policy sees, the current one last
    (metadata ``observation_terms_history_length``; 0, 1 or absent: the current alone)."""
    return stacked_lengths(meta.get("observation_terms_history_length")
                           or [0] * len(meta["observation_names"]))


def expected_size(name: str, num_joints: int) -> int | None:
    """A term's width in a frame of a policy driving ``num_joints`` joints (None: a term this
    loop does not know)."""
    return {"command": 2 * num_joints, "motion_anchor_ori_b": 6, "base_ang_vel": 3,
            "base_lin_vel": 3,
            "joint_pos": num_joints,
            "joint_vel": num_joints, "actions": num_joints}.get(name)


@dataclass
class SensedState:
    """What N robots sense at one control step, in the metadata's joint order (arrays float64).

    The encoders (``joint_pos``, ``joint_vel``), the root IMU's gyro in the
    root frame (``root_ang_vel_b``), the anchor body's world orientation
    from forward kinematics and the IMU (``anchor_quat_w``, w x y z), and the
    root's linear velocity in the root frame (``root_lin_vel_b``: what a state
    estimator gives; only a policy trained to observe it reads it).
    """

    joint_pos: np.ndarray
    """[N, J] rad."""
    joint_vel: np.ndarray
    """[N, J] rad/s."""
    root_ang_vel_b: np.ndarray
    """[N, 3] rad/s."""
    anchor_quat_w: np.ndarray
    """[N, 4]."""
    root_quat_w: np.ndarray
    """[N, 4], the root body's world orientation."""
    root_lin_vel_w: np.ndarray
    """[N, 3] m/s, the root's linear velocity in the world frame."""

    @property
    def root_lin_vel_b(self) -> np.ndarray:
        """[N, 3] m/s in the root frame (computed only for a policy that reads it)."""
        return quat_apply_inverse(self.root_quat_w, self.root_lin_vel_w)

    @classmethod
    def of(cls, robot: Any, qpos: np.ndarray, qvel: np.ndarray,
           xquat: np.ndarray) -> SensedState:
        """From N simulations' ``qpos`` [N, nq], ``qvel`` [N, nv] and body orientations ``xquat``
        [N, nbody, 4].

        The free joint's angular velocity is already in the root body's frame (what a gyro there
        reads); its linear velocity is in the world frame, rotated here into the root's.
        """
        d, a = robot.root_dof_adr, robot.root_qpos_adr
        return cls(joint_pos=qpos[:, robot.qpos_adr], joint_vel=qvel[:, robot.dof_adr],
                   root_ang_vel_b=qvel[:, d + 3:d + 6], anchor_quat_w=xquat[:, robot.anchor_body],
                   root_quat_w=qpos[:, a + 3:a + 7], root_lin_vel_w=qvel[:, d:d + 3])


class DeployObservation:
    """The policy observation from sensed quantities, in the metadata's term order.

    Terms: ``command`` (reference joint pos then vel), ``motion_anchor_ori_b``
    (reference anchor orientation in the robot anchor frame, first two columns
    of its rotation matrix, row by row), ``base_ang_vel`` (root gyro, root
    frame), ``joint_pos`` (minus the default pose), ``joint_vel``, ``actions``
    (the previous policy output); ``base_lin_vel`` (root frame) for a policy
    trained to observe it. ``build_batch`` makes N observations at
    once (each robot at its own reference step); ``build`` one, from an ``MjData``.

    Both build a *frame*: each term's current values. For a policy that observes a term with
    history (``history_lengths``) the frame goes through the ``ObservationHistory`` that
    ``history`` makes, one per episode (or batch of episodes).
    """

    def __init__(self, robot: Any, meta: dict) -> None:
        self.robot = robot
        self.history_lengths = history_lengths(meta)
        self.terms = [(name, size // length) for name, size, length in zip(
            meta["observation_names"], meta["observation_sizes"], self.history_lengths,
            strict=True)]
        """Each term's name and width in a frame (its current values)."""
        self.default = np.asarray(meta["default_joint_pos"], dtype=np.float64)
        self.anchor_index = meta["body_names"].index(meta["anchor_body_name"])
        self.size = sum(meta["observation_sizes"])

    def history(self, num_rows: int) -> ObservationHistory | None:
        """A fresh history for ``num_rows`` robots starting their episodes; None when the policy
        observes no term with history (the frame is the observation)."""
        history = ObservationHistory([width for _, width in self.terms], self.history_lengths,
                                     num_rows)
        return history if history.active else None

    def build(self, data: mujoco.MjData, ref: dict[str, np.ndarray], t: int,
              last_action: np.ndarray) -> np.ndarray:
        """The frame of the robot in ``data`` at reference step ``t``."""
        state = SensedState.of(self.robot, data.qpos[None], data.qvel[None], data.xquat[None])
        return self.build_batch(state, ref, np.array([t]), np.asarray(last_action)[None])[0]

    def build_batch(self, state: SensedState, ref: dict[str, np.ndarray], t: np.ndarray,
                    last_action: np.ndarray) -> np.ndarray:
        """The frames [N, frame size] of N robots, robot i at reference step ``t[i]``
        (float32)."""
        parts = []
        for name, _ in self.terms:
            if name == "command":
                parts += [ref["joint_pos"][t], ref["joint_vel"][t]]
            elif name == "motion_anchor_ori_b":
                relative = quat_mul(quat_conjugate(state.anchor_quat_w),
                                    ref["body_quat_w"][t, self.anchor_index])
                parts.append(matrix_first_two_columns(relative))
            elif name == "base_ang_vel":
                parts.append(state.root_ang_vel_b)
            elif name == "base_lin_vel":
                parts.append(state.root_lin_vel_b)
            elif name == "joint_pos":
                parts.append(state.joint_pos - self.default)
            elif name == "joint_vel":
                parts.append(state.joint_vel)
            elif name == "actions":
                parts.append(last_action)
        return np.concatenate(parts, axis=-1).astype(np.float32)
