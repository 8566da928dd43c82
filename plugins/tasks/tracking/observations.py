"""Policy and critic observations of the tracking task, written into preallocated float32 buffers.

Policy (5·J + 9; no state estimation needed on the robot):

    command               2J  reference joint positions, then velocities
    motion_anchor_ori_b    6  reference anchor orientation in the robot anchor frame,
                              first two rotation-matrix columns (r00 r01 r10 r11 r20 r21)
    base_ang_vel           3  root angular velocity, root frame
    joint_pos             J   joint positions minus the default pose
    joint_vel             J   joint velocities
    actions               J   the last action

Critic (privileged, no noise): command, motion_anchor_pos_b (3), motion_anchor_ori_b,
body_pos (3K, tracked bodies in the robot anchor frame), body_ori (6K),
base_lin_vel (3), base_ang_vel, joint_pos, joint_vel, actions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from primebot.pipeline.api import matrix_first_two_columns, quat_conjugate, quat_mul, quat_to_matrix

from .state import TrackingState

NOISY_TERMS = ("motion_anchor_ori_b", "base_ang_vel", "joint_pos", "joint_vel")
"""Policy terms that get uniform noise ±scale (mjlab's noise magnitudes by default)."""


@dataclass(frozen=True)
class ObservationLayout:
    """Names and widths of the observation terms, in order."""

    terms: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        return sum(width for _, width in self.terms)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.terms)

    def slice(self, name: str) -> slice:
        start = 0
        for term, width in self.terms:
            if term == name:
                return slice(start, start + width)
            start += width
        raise KeyError(name)


def policy_layout(num_joints: int) -> ObservationLayout:
    j = num_joints
    return ObservationLayout(
        (
            ("command", 2 * j),
            ("motion_anchor_ori_b", 6),
            ("base_ang_vel", 3),
            ("joint_pos", j),
            ("joint_vel", j),
            ("actions", j),
        )
    )


def critic_layout(num_joints: int, num_bodies: int) -> ObservationLayout:
    j, k = num_joints, num_bodies
    return ObservationLayout(
        (
            ("command", 2 * j),
            ("motion_anchor_pos_b", 3),
            ("motion_anchor_ori_b", 6),
            ("body_pos", 3 * k),
            ("body_ori", 6 * k),
            ("base_lin_vel", 3),
            ("base_ang_vel", 3),
            ("joint_pos", j),
            ("joint_vel", j),
            ("actions", j),
        )
    )


class ObservationBuilder:
    """Fills the [N, O] policy and [N, P] critic buffers from a ``TrackingState``."""

    def __init__(
        self,
        state: TrackingState,
        default_joint_pos: np.ndarray,
        noise: Mapping[str, float] | None,
        rng: np.random.Generator,
    ) -> None:
        n, j = state.joint_pos.shape
        k = state.body_pos_w.shape[1]
        self.state = state
        self.default_joint_pos = np.asarray(default_joint_pos, dtype=np.float64)
        self.policy = policy_layout(j)
        self.critic = critic_layout(j, k)
        self.obs = np.zeros((n, self.policy.size), np.float32)
        self.critic_obs = np.zeros((n, self.critic.size), np.float32)
        self.rng = rng
        # Noise is one contiguous block of the policy vector (anchor ori .. joint vel),
        # drawn in one call: scale per column, zero where a term has none.
        first = self.policy.slice(NOISY_TERMS[0]).start
        last = self.policy.slice(NOISY_TERMS[-1]).stop
        self._noise_cols = slice(first, last)
        scale = np.zeros(last - first, np.float32)
        for name in NOISY_TERMS:
            cols = self.policy.slice(name)
            scale[cols.start - first : cols.stop - first] = float((noise or {}).get(name, 0.0))
        self._noise_scale = 2.0 * scale
        self._noise_offset = -scale
        self._noise = np.zeros((n, last - first), np.float32) if np.any(scale) else None

    def compute(self, encoder_bias: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Fill and return (obs, critic_obs), both float32; the policy's joint positions read
        ``encoder_bias`` [N, J] off (the critic's are true)."""
        s, p, c = self.state, self.policy, self.critic
        obs, critic = self.obs, self.critic_obs
        n = obs.shape[0]
        j = s.joint_pos.shape[1]
        anchor_ori = matrix_first_two_columns(
            quat_mul(quat_conjugate(s.anchor_quat_w), s.ref_anchor_quat_w)
        )
        joint_pos = s.joint_pos - self.default_joint_pos

        command = p.slice("command")
        obs[:, command.start : command.start + j] = s.ref_joint_pos
        obs[:, command.start + j : command.stop] = s.ref_joint_vel
        obs[:, p.slice("motion_anchor_ori_b")] = anchor_ori
        obs[:, p.slice("base_ang_vel")] = s.base_ang_vel_b
        obs[:, p.slice("joint_pos")] = joint_pos if encoder_bias is None else joint_pos + encoder_bias
        obs[:, p.slice("joint_vel")] = s.joint_vel
        obs[:, p.slice("actions")] = s.action

        critic[:, c.slice("command")] = obs[:, command]
        # Frame changes as matrix products against the anchor rotation R_a:
        # v_b = R_aᵀ v is the row vector v·R_a, and body rotations come from
        # MuJoCo's xmat, so no per-body quaternion algebra is needed.
        rot_anchor = quat_to_matrix(s.anchor_quat_w)
        anchor_offset = (s.ref_anchor_pos_w - s.anchor_pos_w)[:, None]
        critic[:, c.slice("motion_anchor_pos_b")] = np.matmul(anchor_offset, rot_anchor)[:, 0]
        critic[:, c.slice("motion_anchor_ori_b")] = anchor_ori
        body_offsets = s.body_pos_w - s.anchor_pos_w[:, None]
        critic[:, c.slice("body_pos")] = np.matmul(body_offsets, rot_anchor).reshape(n, -1)
        body_ori = np.matmul(rot_anchor.transpose(0, 2, 1)[:, None], s.body_mat_w[..., :2])
        critic[:, c.slice("body_ori")] = body_ori.reshape(n, -1)
        critic[:, c.slice("base_lin_vel")] = s.base_lin_vel_b
        critic[:, c.slice("base_ang_vel")] = s.base_ang_vel_b
        critic[:, c.slice("joint_pos")] = joint_pos
        critic[:, c.slice("joint_vel")] = s.joint_vel
        critic[:, c.slice("actions")] = s.action

        if self._noise is not None:
            noise = self._noise
            self.rng.random(out=noise, dtype=np.float32)
            noise *= self._noise_scale
            noise += self._noise_offset
            obs[:, self._noise_cols] += noise
        return obs, critic
