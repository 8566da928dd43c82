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
body_mat_w                  [N, K, 3, 3] the same orientations as rotation matrices
body_lin_vel_w, ..ang_vel_w [N, K, 3]   robot tracked-body velocities (at the body origin)
ref_body_*_w                [N, K, ...] the same for the reference
ref_body_pos_relative_w     [N, K, 3]   reference bodies moved so that the reference anchor
ref_body_quat_relative_w    [N, K, 4]   sits at the robot anchor's xy and heading (mjlab)
base_lin_vel_b, ..ang_vel_b [N, 3]      root body velocity in the root frame
self_contacts               [N]         robot-robot contacts
action, prev_action         [N, J]      this step's and the previous step's policy action
soft_joint_pos_limits       [J, 2]      joint limits shrunk by the soft-limit factor
default_joint_pos           [J]         the robot's default pose (joint observations are relative
                                        to it)
encoder_bias                [N, J]|None what the joint encoders add to each reading (None: nothing)
time_steps                  [N] int     reference step each env is at
reference                               the ``MotionReference`` (e.g. its anchor_gravity_z [T])
end_effectors               [E] int     end-effector columns of the ``all_body_*`` axes
==========================  ==========  ===================================================
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import (
    BatchSim,
    cross,
    quat_apply_inverse,
    quat_conjugate,
    quat_mul,
    quat_mul_about_z,
    rotate_about_z,
    yaw_angle,
)

from .model import TrackingModel
from .reference import MotionReference

# Reference quantities packed side by side per step, so that one gather by
# time step fetches them all: (name, array attribute of MotionReference).
_PACKED_REFERENCE = (
    ("ref_joint_pos", "joint_pos"),
    ("ref_joint_vel", "joint_vel"),
    ("ref_anchor_pos_w", "anchor_pos_w"),
    ("ref_anchor_quat_w", "anchor_quat_w"),
    ("all_ref_body_pos_w", "body_pos_w"),
    ("all_ref_body_quat_w", "body_quat_w"),
    ("all_ref_body_lin_vel_w", "body_lin_vel_w"),
    ("all_ref_body_ang_vel_w", "body_ang_vel_w"),
)


def _gather(src: np.ndarray, index, axis: int, rows, out: np.ndarray) -> None:
    """``out[rows] = take(src[rows], index, axis)``, without temporaries when ``rows`` is all."""
    if isinstance(rows, slice):
        np.take(src, index, axis=axis, out=out)
    else:
        out[rows] = np.take(src[rows], index, axis=axis)


class TrackingState:
    """Preallocated buffers of robot and reference quantities; see the module docstring."""

    def __init__(self, sim: BatchSim, tm: TrackingModel, reference: MotionReference,
                 default_joint_pos: np.ndarray) -> None:
        n, j, b = sim.num_envs, len(tm.indices.qpos_adr), len(tm.body_ids)
        k = tm.num_tracked
        self.num_envs = n
        self.reference, self.end_effectors = reference, tm.end_effector_index
        self.default_joint_pos = np.asarray(default_joint_pos, dtype=np.float64)
        self.encoder_bias: np.ndarray | None = None
        self._sim, self._tm, self._ref = sim, tm, reference
        self._xpos, self._xquat = sim.bind("xpos"), sim.bind("xquat")
        self._xmat = sim.bind("xmat").reshape(n, -1, 3, 3)
        self._cvel, self._subtree_com = sim.bind("cvel"), sim.bind("subtree_com")
        self._sensordata = sim.bind("sensordata") if tm.self_collision_adr.size else None
        tree_root = tm.model.body_rootid[tm.body_ids]
        self._tree_root = tree_root[:1] if (tree_root == tree_root[0]).all() else tree_root
        self._root_quat, self._root_lin, self._root_ang = (
            tm.root_quat_qpos,
            tm.root_lin_vel_qvel,
            tm.root_ang_vel_qvel,
        )
        self._anchor = np.array([tm.indices.anchor_body_id])

        z = np.zeros
        self.time_steps = z(n, np.int64)
        self.joint_pos, self.joint_vel = z((n, j)), z((n, j))
        self.anchor_pos_w, self.anchor_quat_w = z((n, 3)), z((n, 4))
        self.all_body_pos_w, self.all_body_quat_w = z((n, b, 3)), z((n, b, 4))
        self.all_body_mat_w = z((n, b, 3, 3))
        self.all_body_lin_vel_w, self.all_body_ang_vel_w = z((n, b, 3)), z((n, b, 3))
        self.all_ref_body_pos_relative_w = z((n, b, 3))
        self.all_ref_body_quat_relative_w = z((n, b, 4))
        self.base_lin_vel_b, self.base_ang_vel_b = z((n, 3)), z((n, 3))
        self.self_contacts = z(n)
        self.action, self.prev_action = z((n, j)), z((n, j))
        self.soft_joint_pos_limits = tm.soft_joint_pos_limits
        self._body_vel = z((n, b, 6))

        # The reference, packed: [T, F] rows, and an [N, F] buffer whose column
        # blocks are the ref_* attributes (views).
        arrays = [getattr(reference, attr) for _, attr in _PACKED_REFERENCE]
        steps = arrays[0].shape[0]
        self._ref_packed = np.ascontiguousarray(
            np.concatenate([a.reshape(steps, -1) for a in arrays], axis=1)
        )
        self._ref_buffer = z((n, self._ref_packed.shape[1]))
        start = 0
        for (name, _), array in zip(_PACKED_REFERENCE, arrays, strict=True):
            width = int(np.prod(array.shape[1:]))
            view = self._ref_buffer[:, start : start + width].reshape(n, *array.shape[1:])
            setattr(self, name, view)
            start += width

        # the tracked bodies: views of the first K of every body axis
        self.body_pos_w = self.all_body_pos_w[:, :k]
        self.body_quat_w = self.all_body_quat_w[:, :k]
        self.body_mat_w = self.all_body_mat_w[:, :k]
        self.body_lin_vel_w = self.all_body_lin_vel_w[:, :k]
        self.body_ang_vel_w = self.all_body_ang_vel_w[:, :k]
        self.ref_body_pos_w = self.all_ref_body_pos_w[:, :k]
        self.ref_body_quat_w = self.all_ref_body_quat_w[:, :k]
        self.ref_body_lin_vel_w = self.all_ref_body_lin_vel_w[:, :k]
        self.ref_body_ang_vel_w = self.all_ref_body_ang_vel_w[:, :k]
        self.ref_body_pos_relative_w = self.all_ref_body_pos_relative_w[:, :k]
        self.ref_body_quat_relative_w = self.all_ref_body_quat_relative_w[:, :k]

    def update(self, ids: np.ndarray | None = None) -> None:
        """Refresh every buffer for envs ``ids`` (all when ``None``) from the simulator and
        reference."""
        rows = slice(None) if ids is None else ids
        self._update_robot(rows)
        self._update_reference(rows)

    def _update_robot(self, rows) -> None:
        sim, tm, idx = self._sim, self._tm, self._tm.indices
        qpos, qvel = sim.qpos[rows], sim.qvel[rows]
        _gather(sim.qpos, idx.qpos_adr, 1, rows, self.joint_pos)
        _gather(sim.qvel, idx.dof_adr, 1, rows, self.joint_vel)
        self.base_lin_vel_b[rows] = quat_apply_inverse(
            qpos[:, self._root_quat], qvel[:, self._root_lin]
        )
        # a free joint's angular qvel is already in its body frame
        self.base_ang_vel_b[rows] = qvel[:, self._root_ang]

        _gather(self._xpos, tm.body_ids, 1, rows, self.all_body_pos_w)
        _gather(self._xquat, tm.body_ids, 1, rows, self.all_body_quat_w)
        _gather(self._xmat, tm.body_ids, 1, rows, self.all_body_mat_w)
        _gather(self._xpos, self._anchor, 1, rows, self.anchor_pos_w[:, None])
        _gather(self._xquat, self._anchor, 1, rows, self.anchor_quat_w[:, None])
        # cvel is (angular, linear) about the subtree centre of mass of the body's
        # tree root; move the linear part to each body's origin: v + w x (p - c)
        _gather(self._cvel, tm.body_ids, 1, rows, self._body_vel)
        body_vel = self._body_vel[rows]
        lever = self.all_body_pos_w[rows] - self._subtree_com[rows][:, self._tree_root]
        ang = body_vel[..., :3]
        self.all_body_ang_vel_w[rows] = ang
        self.all_body_lin_vel_w[rows] = body_vel[..., 3:] + cross(ang, lever)
        if self._sensordata is not None:
            self.self_contacts[rows] = self._sensordata[rows][:, tm.self_collision_adr].sum(axis=1)

    def _update_reference(self, rows) -> None:
        if isinstance(rows, slice):
            np.take(self._ref_packed, self.time_steps, axis=0, out=self._ref_buffer)
        else:
            self._ref_buffer[rows] = self._ref_packed[self.time_steps[rows]]
        ref_anchor_pos, ref_anchor_quat = self.ref_anchor_pos_w[rows], self.ref_anchor_quat_w[rows]
        # Re-anchor the reference at the robot: keep its height, take the robot
        # anchor's xy and heading, so body terms score the pose, not the drift.
        delta_pos = self.anchor_pos_w[rows].copy()
        delta_pos[:, 2] = ref_anchor_pos[:, 2]
        yaw = yaw_angle(quat_mul(self.anchor_quat_w[rows], quat_conjugate(ref_anchor_quat)))[
            :, None
        ]
        offsets = self.all_ref_body_pos_w[rows] - ref_anchor_pos[:, None]
        self.all_ref_body_quat_relative_w[rows] = quat_mul_about_z(
            yaw, self.all_ref_body_quat_w[rows]
        )
        self.all_ref_body_pos_relative_w[rows] = delta_pos[:, None] + rotate_about_z(yaw, offsets)
