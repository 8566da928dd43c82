"""Vectorised rotation math on numpy arrays. Quaternions are ``w x y z`` (MuJoCo's order).

Every function broadcasts over leading axes: ``q`` is ``[..., 4]``, vectors are
``[..., 3]``, matrices ``[..., 3, 3]``. Quaternions are assumed unit length
(the inverse is the conjugate). Written with explicit components instead of
``einsum`` because these run on [N, B, 4] arrays every control step.
"""

from __future__ import annotations

import numpy as np


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    """``q*`` = (w, -x, -y, -z): the inverse of a unit quaternion."""
    out = -q
    out[..., 0] = q[..., 0]
    return out


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``)."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        axis=-1,
    )


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """``q / |q|``."""
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` over the last axis (faster than ``np.cross`` on small vectors)."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx), axis=-1)


def quat_apply(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` by ``q`` (a frame's vector into the world: ``R(q) v``)."""
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + q[..., :1] * t + cross(u, t)


def quat_apply_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` by ``q⁻¹`` (a world vector into the frame: ``R(q)ᵀ v``)."""
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v - q[..., :1] * t + cross(u, t)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` of ``q``; column ``k`` is the frame's axis ``k`` in the
    world."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = (
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    )  # fmt: skip
    return np.stack(rows, axis=-1).reshape(*q.shape[:-1], 3, 3)


def matrix_first_two_columns(q: np.ndarray) -> np.ndarray:
    """The first two columns of ``R(q)``, row by row: ``[..., 6]`` = (r00, r01, r10, r11, r20, r21).

    A continuous 6-number encoding of an orientation (what mjlab feeds the
    policy for the reference anchor orientation).
    """
    return quat_to_matrix(q)[..., :2].reshape(*q.shape[:-1], 6)


def quat_error_magnitude(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle in [0, π] of the rotation between ``a`` and ``b`` (sign of either is irrelevant).

    Uses |a - ±b| = 2·sin(angle/4) (the sign making a·b ≥ 0): exact near zero,
    unlike arccos(|a·b|), and a quarter of the cost of forming a⁻¹b.
    """
    dot = np.einsum("...i,...i->...", a, b)
    diff = a - np.copysign(1.0, dot)[..., None] * b
    half_chord = 0.5 * np.sqrt(np.einsum("...i,...i->...", diff, diff))
    return 4.0 * np.arcsin(np.minimum(half_chord, 1.0))


def yaw_angle(q: np.ndarray) -> np.ndarray:
    """Heading of ``q`` in (-π, π]: the yaw of its z-y-x Euler decomposition."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def yaw_quat(q: np.ndarray) -> np.ndarray:
    """The rotation about world z alone (heading) of ``q``."""
    return quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw_angle(q))


def rotate_about_z(angle: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` [..., 3] by ``angle`` [...] about world z (cheaper than
    ``quat_apply``)."""
    c, s = np.cos(angle), np.sin(angle)
    x, y = v[..., 0], v[..., 1]
    return np.stack((c * x - s * y, s * x + c * y, v[..., 2]), axis=-1)


def quat_mul_about_z(angle: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``quat_from_axis_angle(z, angle) ⊗ q`` without forming the yaw quaternion."""
    c, s = np.cos(0.5 * angle), np.sin(0.5 * angle)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack((c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w), axis=-1)


def quat_from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations of ``angle`` [...] radians about unit ``axis`` [..., 3]."""
    half = 0.5 * np.asarray(angle, dtype=np.float64)
    axis = np.asarray(axis, dtype=np.float64)
    sin = np.sin(half)[..., None]
    xyz = axis * sin
    w = np.cos(half)[..., None]
    return np.concatenate((np.broadcast_to(w, xyz.shape[:-1] + (1,)), xyz), axis=-1)


def quat_from_euler_xyz(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Intrinsic roll (x), then pitch (y), then yaw (z): ``q = q_z(yaw) ⊗ q_y(pitch) ⊗
    q_x(roll)``."""
    cr, sr = np.cos(0.5 * np.asarray(roll)), np.sin(0.5 * np.asarray(roll))
    cp, sp = np.cos(0.5 * np.asarray(pitch)), np.sin(0.5 * np.asarray(pitch))
    cy, sy = np.cos(0.5 * np.asarray(yaw)), np.sin(0.5 * np.asarray(yaw))
    return np.stack(
        (
            cy * cp * cr + sy * sp * sr,
            cy * cp * sr - sy * sp * cr,
            cy * sp * cr + sy * cp * sr,
            sy * cp * cr - cy * sp * sr,
        ),
        axis=-1,
    )


def subtract_frame_transforms(
    pos_a: np.ndarray, quat_a: np.ndarray, pos_b: np.ndarray, quat_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pose of frame ``b`` expressed in frame ``a`` (both given in the world): ``T_a⁻¹ T_b``."""
    return quat_apply_inverse(quat_a, pos_b - pos_a), quat_mul(quat_conjugate(quat_a), quat_b)


def quat_slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical interpolation from ``a`` (t=0) to ``b`` (t=1) along the shorter arc; ``t`` is
    [...]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)  # q and -q are one rotation: take the short way
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    near = sin_theta < 1e-8  # nearly equal: lerp is exact to rounding and avoids 0/0
    safe = np.where(near, 1.0, sin_theta)
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    wb = np.where(near, t, np.sin(t * theta) / safe)
    return quat_normalize(wa * a + wb * b)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector (axis·angle, angle in [0, π]) of ``q``; q and −q give the same vector."""
    q = np.where(q[..., :1] < 0.0, -q, q)
    sin_half = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(sin_half, q[..., :1])
    # angle / sin(angle/2) → 2 as the angle → 0
    scale = np.where(sin_half > 1e-12, angle / np.where(sin_half > 1e-12, sin_half, 1.0), 2.0)
    return q[..., 1:] * scale
