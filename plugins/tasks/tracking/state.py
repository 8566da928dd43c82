"""The tracking task's state: robot and reference quantities every term reads, for N envs at once.

``TrackingState.update(ids)`` refreshes the buffers from the simulator's live
arrays and the reference at each env's current step; reward terms,
observations and terminations then read the attributes below (numpy float64,
world frame ``_w`` unless the name says ``_b``, body frame). Body axes:
``body_*`` hold the K tracked bodies (views), ``all_body_*`` the tracked
bodies followed by end effectors that are not tracked.

==========================  ==========  ===================================================
attribute                   shape       meaning
==========================  ==========  ===================================================
joint_pos, joint_vel        [N, J]      robot joints, policy order
ref_joint_pos, ref_joint_vel[N, J]      reference joints at the env's step
anchor_pos_w, anchor_quat_w [N, 3|4]    robot anchor body pose
ref_anchor_pos_w, ..._quat_w[N, 3|4]    reference anchor pose
body_pos_w, body_quat_w     [N, K, 3|4] robot tracked-body poses
body_lin_vel_w, ..ang_vel_w [N, K, 3]   robot tracked-body velocities (at the body origin)
ref_body_*_w                [N, K, ...] the same for the reference
ref_body_pos_relative_w     [N, K, 3]   reference bodies moved so that the reference anchor
ref_body_quat_relative_w    [N, K, 4]   sits at the robot anchor's xy and heading (mjlab)
base_lin_vel_b, ..ang_vel_b [N, 3]      root body velocity in the root frame
self_contacts               [N]         robot-robot contacts
action, prev_action         [N, J]      this step's and the previous step's policy action
soft_joint_pos_limits       [J, 2]      joint limits shrunk by the soft-limit factor
time_steps                  [N] int     reference step each env is at
==========================  ==========  ===================================================
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.rotations import (
    quat_apply,
    quat_apply_inverse,
    quat_conjugate,
    quat_mul,
    yaw_quat,
)
from primebot.pipeline.sim import BatchSim

from .model import TrackingModel
from .reference import MotionReference


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack(
        (
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ),
        axis=-1,
    )


class TrackingState:
    """Preallocated buffers of robot and reference quantities; see the module docstring."""

    def __init__(self, sim: BatchSim, tm: TrackingModel, reference: MotionReference) -> None:
        n, j, b = sim.num_envs, len(tm.indices.qpos_adr), len(tm.body_ids)
        k = tm.num_tracked
        self.num_envs = n
        self._sim, self._tm, self._ref = sim, tm, reference
        self._xpos, self._xquat = sim.bind("xpos"), sim.bind("xquat")
        self._cvel, self._subtree_com = sim.bind("cvel"), sim.bind("subtree_com")
        self._sensordata = sim.bind("sensordata") if tm.self_collision_adr.size else None
        self._tree_root = tm.model.body_rootid[tm.body_ids]
        self._uniform_tree = bool((self._tree_root == self._tree_root[0]).all())
        idx = tm.indices
        self._root_quat = slice(idx.root_qpos_adr + 3, idx.root_qpos_adr + 7)
        self._root_lin = slice(idx.root_dof_adr, idx.root_dof_adr + 3)
        self._root_ang = slice(idx.root_dof_adr + 3, idx.root_dof_adr + 6)

        z = np.zeros
        self.time_steps = z(n, np.int64)
        self.joint_pos, self.joint_vel = z((n, j)), z((n, j))
        self.ref_joint_pos, self.ref_joint_vel = z((n, j)), z((n, j))
        self.anchor_pos_w, self.anchor_quat_w = z((n, 3)), z((n, 4))
        self.ref_anchor_pos_w, self.ref_anchor_quat_w = z((n, 3)), z((n, 4))
        self.all_body_pos_w, self.all_body_quat_w = z((n, b, 3)), z((n, b, 4))
        self.all_body_lin_vel_w, self.all_body_ang_vel_w = z((n, b, 3)), z((n, b, 3))
        self.all_ref_body_pos_w, self.all_ref_body_quat_w = z((n, b, 3)), z((n, b, 4))
        self.all_ref_body_lin_vel_w, self.all_ref_body_ang_vel_w = z((n, b, 3)), z((n, b, 3))
        self.all_ref_body_pos_relative_w, self.all_ref_body_quat_relative_w = (
            z((n, b, 3)),
            z((n, b, 4)),
        )
        self.base_lin_vel_b, self.base_ang_vel_b = z((n, 3)), z((n, 3))
        self.self_contacts = z(n)
        self.action, self.prev_action = z((n, j)), z((n, j))
        self.soft_joint_pos_limits = tm.soft_joint_pos_limits

        # the tracked bodies: views of the first K of every body axis
        self.body_pos_w, self.body_quat_w = self.all_body_pos_w[:, :k], self.all_body_quat_w[:, :k]
        self.body_lin_vel_w, self.body_ang_vel_w = (
            self.all_body_lin_vel_w[:, :k],
            self.all_body_ang_vel_w[:, :k],
        )
        self.ref_body_pos_w, self.ref_body_quat_w = (
            self.all_ref_body_pos_w[:, :k],
            self.all_ref_body_quat_w[:, :k],
        )
        self.ref_body_lin_vel_w = self.all_ref_body_lin_vel_w[:, :k]
        self.ref_body_ang_vel_w = self.all_ref_body_ang_vel_w[:, :k]
        self.ref_body_pos_relative_w = self.all_ref_body_pos_relative_w[:, :k]
        self.ref_body_quat_relative_w = self.all_ref_body_quat_relative_w[:, :k]

    def update(self, ids: np.ndarray | None = None) -> None:
        """Refresh every buffer for envs ``ids`` (all when ``None``) from the simulator and reference."""
        rows = slice(None) if ids is None else ids
        self._update_robot(rows)
        self._update_reference(rows)

    def _update_robot(self, rows) -> None:
        sim, tm, idx = self._sim, self._tm, self._tm.indices
        qpos, qvel = sim.qpos[rows], sim.qvel[rows]
        self.joint_pos[rows] = qpos[:, idx.qpos_adr]
        self.joint_vel[rows] = qvel[:, idx.dof_adr]
        root_quat = qpos[:, self._root_quat]
        self.base_lin_vel_b[rows] = quat_apply_inverse(root_quat, qvel[:, self._root_lin])
        self.base_ang_vel_b[rows] = qvel[
            :, self._root_ang
        ]  # a free joint's angular qvel is in its body frame

        xpos, xquat, cvel = self._xpos[rows], self._xquat[rows], self._cvel[rows]
        pos = xpos[:, tm.body_ids]
        self.all_body_pos_w[rows] = pos
        self.all_body_quat_w[rows] = xquat[:, tm.body_ids]
        self.anchor_pos_w[rows] = xpos[:, idx.anchor_body_id]
        self.anchor_quat_w[rows] = xquat[:, idx.anchor_body_id]
        # cvel is (angular, linear) about the subtree centre of mass of the body's
        # tree root; move the linear part to each body's origin: v + w x (p - c)
        body_vel = cvel[:, tm.body_ids]
        com = self._subtree_com[rows]
        com = com[:, self._tree_root[:1]] if self._uniform_tree else com[:, self._tree_root]
        ang = body_vel[..., :3]
        self.all_body_ang_vel_w[rows] = ang
        self.all_body_lin_vel_w[rows] = body_vel[..., 3:] + _cross(ang, pos - com)
        if self._sensordata is not None:
            self.self_contacts[rows] = self._sensordata[rows][:, tm.self_collision_adr].sum(axis=1)

    def _update_reference(self, rows) -> None:
        ref = self._ref
        t = self.time_steps[rows]
        self.ref_joint_pos[rows] = ref.joint_pos[t]
        self.ref_joint_vel[rows] = ref.joint_vel[t]
        ref_anchor_pos, ref_anchor_quat = ref.anchor_pos_w[t], ref.anchor_quat_w[t]
        self.ref_anchor_pos_w[rows] = ref_anchor_pos
        self.ref_anchor_quat_w[rows] = ref_anchor_quat
        ref_pos, ref_quat = ref.body_pos_w[t], ref.body_quat_w[t]
        self.all_ref_body_pos_w[rows] = ref_pos
        self.all_ref_body_quat_w[rows] = ref_quat
        self.all_ref_body_lin_vel_w[rows] = ref.body_lin_vel_w[t]
        self.all_ref_body_ang_vel_w[rows] = ref.body_ang_vel_w[t]

        # Re-anchor the reference at the robot: keep its height, take the robot
        # anchor's xy and heading, so body terms score the pose, not the drift.
        anchor_pos = self.anchor_pos_w[rows]
        delta_pos = anchor_pos.copy()
        delta_pos[:, 2] = ref_anchor_pos[:, 2]
        delta_yaw = yaw_quat(quat_mul(self.anchor_quat_w[rows], quat_conjugate(ref_anchor_quat)))[
            :, None
        ]
        self.all_ref_body_quat_relative_w[rows] = quat_mul(delta_yaw, ref_quat)
        self.all_ref_body_pos_relative_w[rows] = delta_pos[:, None] + quat_apply(
            delta_yaw, ref_pos - ref_anchor_pos[:, None]
        )
