"""Forward kinematics of a robot through MuJoCo: body poses and velocities from root + joint
trajectories.

The motion tools (authoring, conversion, validation, replay) all derive body
quantities here, so a stored ``body_pos_w`` and a recomputed one come from the
same code path.
"""

from __future__ import annotations

from collections.abc import Iterator

import mujoco
import numpy as np

from .contacts import collision_geoms
from .model import RobotIndices

_PLANE = mujoco.mjtGeom.mjGEOM_PLANE


def _mesh_vertical_half_ranges(model: mujoco.MjModel, data: mujoco.MjData, geoms: np.ndarray):
    """Lowest and highest z offset from its centre of each mesh geom in ``geoms``, from its
    vertices."""
    rot = data.geom_xmat.reshape(-1, 3, 3)
    low, high = np.empty(len(geoms)), np.empty(len(geoms))
    for k, g in enumerate(geoms):
        mesh = int(model.geom_dataid[g])
        adr, num = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        # mesh_vert is in the geom's frame (the compiler moves the geom to the mesh's frame)
        z = model.mesh_vert[adr : adr + num] @ rot[g, 2, :]
        low[k], high[k] = z.min(), z.max()
    return low, high


def geom_vertical_extent(
    model: mujoco.MjModel, data: mujoco.MjData
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest world z of each geom: exact for spheres, capsules, boxes, cylinders,
    ellipsoids and meshes (their vertices), the bounding sphere for anything else.

    Planes (the floor) get +inf/-inf so they never count as the robot's extremes.
    Needs ``mj_kinematics`` to have run on ``data``.
    """
    size = model.geom_size
    rot_z = data.geom_xmat.reshape(-1, 3, 3)[
        :, 2, :
    ]  # world z row: how each local axis projects on z
    half = np.zeros(model.ngeom)
    for kind in np.unique(model.geom_type):
        sel = model.geom_type == kind
        if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
            half[sel] = size[sel, 0]
        elif kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
            half[sel] = np.abs(rot_z[sel, 2]) * size[sel, 1] + size[sel, 0]
        elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
            half[sel] = (
                np.abs(rot_z[sel, 2]) * size[sel, 1]
                + np.hypot(rot_z[sel, 0], rot_z[sel, 1]) * size[sel, 0]
            )
        elif kind == mujoco.mjtGeom.mjGEOM_BOX:
            half[sel] = np.sum(np.abs(rot_z[sel]) * size[sel], axis=1)
        elif kind == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
            half[sel] = np.sqrt(np.sum((rot_z[sel] * size[sel]) ** 2, axis=1))
        elif kind != mujoco.mjtGeom.mjGEOM_MESH:  # heightfields, SDFs: a safe over-estimate
            half[sel] = model.geom_rbound[sel]
    z = data.geom_xpos[:, 2]
    low, high = z - half, z + half
    meshes = np.flatnonzero(
        (model.geom_type == mujoco.mjtGeom.mjGEOM_MESH) & (model.geom_dataid >= 0)
    )
    if len(meshes):
        mesh_low, mesh_high = _mesh_vertical_half_ranges(model, data, meshes)
        low[meshes], high[meshes] = z[meshes] + mesh_low, z[meshes] + mesh_high
    planes = model.geom_type == _PLANE
    low[planes], high[planes] = np.inf, -np.inf
    return low, high


def robot_geoms(model: mujoco.MjModel) -> np.ndarray:
    """The robot's collision geoms (on bodies other than the world), as a boolean mask.

    Visual-only geoms (contype = conaffinity = 0 and in no explicit pair, e.g.
    detailed meshes) never touch the floor, so they do not count for floor contact or height; a
    model without any collision geom falls back to every robot geom.
    """
    on_robot = model.geom_bodyid > 0
    colliding = on_robot & collision_geoms(model)
    return colliding if colliding.any() else on_robot


def set_qpos(qpos: np.ndarray, indices: RobotIndices, root_pos, root_quat, joint_pos) -> None:
    """Write root pose (xyz, wxyz) and policy-order joint angles into a qpos vector."""
    adr = indices.root_qpos_adr
    qpos[adr : adr + 3] = root_pos
    qpos[adr + 3 : adr + 7] = root_quat
    qpos[indices.qpos_adr] = joint_pos


def posed_frames(
    model: mujoco.MjModel, indices: RobotIndices, root_pos, root_quat, joint_pos
) -> Iterator[tuple[int, mujoco.MjData]]:
    """Yield (frame, data) with ``mj_kinematics`` done for each frame's root pose and joints.

    The one loop every per-frame geometry check shares (floor contact, feet,
    stored-vs-computed poses). ``data`` is reused: read it before the next step.
    """
    data = mujoco.MjData(model)
    for t in range(len(joint_pos)):
        set_qpos(data.qpos, indices, root_pos[t], root_quat[t], joint_pos[t])
        mujoco.mj_kinematics(model, data)
        yield t, data


def lowest_point(
    model: mujoco.MjModel, indices: RobotIndices, root_pos, root_quat, joint_pos
) -> np.ndarray:
    """[T] lowest world z over the robot's geoms at each frame."""
    mask = robot_geoms(model)
    out = np.empty(len(joint_pos))
    for t, data in posed_frames(model, indices, root_pos, root_quat, joint_pos):
        out[t] = geom_vertical_extent(model, data)[0][mask].min()
    return out


def standing_height(model: mujoco.MjModel, keyframe: str | int = 0) -> float:
    """Top minus bottom of the robot's collision geoms in a keyframe (the robot's height)."""
    data = mujoco.MjData(model)
    key = (
        keyframe
        if isinstance(keyframe, int)
        else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, keyframe)
    )
    if 0 <= key < model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, key)
    mujoco.mj_kinematics(model, data)
    low, high = geom_vertical_extent(model, data)
    mask = robot_geoms(model)
    return float(high[mask].max() - low[mask].min())


def qpos_trajectory(
    model: mujoco.MjModel, indices: RobotIndices, root_pos, root_quat, joint_pos
) -> np.ndarray:
    """[T, nq] qpos rows (model defaults elsewhere) from root pose and policy-order joints."""
    qpos = np.tile(model.qpos0, (len(joint_pos), 1))
    for t in range(len(joint_pos)):
        set_qpos(qpos[t], indices, root_pos[t], root_quat[t], joint_pos[t])
    return qpos


def qvel_from_qpos(model: mujoco.MjModel, qpos: np.ndarray, dt: float) -> np.ndarray:
    """[T, nv] velocities by finite differences of qpos on the joint manifold.

    Central differences inside, one-sided at the ends (``np.gradient``'s
    scheme), with ``mj_differentiatePos`` so the free joint's rotation is
    differentiated as an angular velocity, not as quaternion components.
    """
    frames = len(qpos)
    qvel = np.zeros((frames, model.nv))
    if frames < 2:
        return qvel
    for t in range(frames):
        lo, hi = max(t - 1, 0), min(t + 1, frames - 1)
        mujoco.mj_differentiatePos(model, qvel[t], (hi - lo) * dt, qpos[lo], qpos[hi])
    return qvel


def body_states(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> dict[str, np.ndarray]:
    """Every non-world body's world pose and velocity at each frame.

    Returns ``body_pos_w``, ``body_quat_w`` (w x y z), ``body_lin_vel_w`` (of the
    body frame's origin) and ``body_ang_vel_w``, all world-frame, [T, B, ...].
    """
    data = mujoco.MjData(model)
    frames, bodies = len(qpos), model.nbody - 1
    out = {
        "body_pos_w": np.empty((frames, bodies, 3)),
        "body_quat_w": np.empty((frames, bodies, 4)),
        "body_lin_vel_w": np.empty((frames, bodies, 3)),
        "body_ang_vel_w": np.empty((frames, bodies, 3)),
    }
    root_of = model.body_rootid[1:]
    for t in range(frames):
        data.qpos[:] = qpos[t]
        data.qvel[:] = qvel[t]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_comVel(model, data)
        # cvel is (angular, linear) at the subtree centre of mass of each body's tree;
        # shift the linear part to the body origin: v_p = v_c + ω × (p − c).
        ang = data.cvel[1:, :3]
        offset = data.xpos[1:] - data.subtree_com[root_of]
        out["body_pos_w"][t] = data.xpos[1:]
        out["body_quat_w"][t] = data.xquat[1:]
        out["body_ang_vel_w"][t] = ang
        out["body_lin_vel_w"][t] = data.cvel[1:, 3:] + np.cross(ang, offset)
    return out


