"""Rotation math against hand-computed values and MuJoCo's own quaternion functions."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from primebot.pipeline import rotations as rot

RNG = np.random.default_rng(7)


def _random_quats(n: int) -> np.ndarray:
    return rot.quat_normalize(RNG.normal(size=(n, 4)))


def test_quarter_turn_about_z_maps_x_to_y():
    q = rot.quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), np.pi / 2)
    np.testing.assert_allclose(q, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)])
    np.testing.assert_allclose(rot.quat_apply(q, np.array([1.0, 0, 0])), [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(
        rot.quat_apply_inverse(q, np.array([1.0, 0, 0])), [0, -1, 0], atol=1e-12
    )
    np.testing.assert_allclose(
        rot.quat_to_matrix(q), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12
    )
    np.testing.assert_allclose(rot.matrix_first_two_columns(q), [0, -1, 1, 0, 0, 0], atol=1e-12)


def test_product_rotation_and_matrix_match_mujoco():
    a, b, v = _random_quats(20), _random_quats(20), RNG.normal(size=(20, 3))
    prod, rotated, mat = rot.quat_mul(a, b), rot.quat_apply(a, v), rot.quat_to_matrix(a)
    for i in range(20):
        expect_prod, expect_vec, expect_mat = np.zeros(4), np.zeros(3), np.zeros(9)
        mujoco.mju_mulQuat(expect_prod, a[i], b[i])
        mujoco.mju_rotVecQuat(expect_vec, v[i], a[i])
        mujoco.mju_quat2Mat(expect_mat, a[i])
        np.testing.assert_allclose(prod[i], expect_prod, atol=1e-12)
        np.testing.assert_allclose(rotated[i], expect_vec, atol=1e-12)
        np.testing.assert_allclose(mat[i], expect_mat.reshape(3, 3), atol=1e-12)


def test_inverse_rotation_undoes_rotation_and_broadcasts_over_bodies():
    q, v = _random_quats(6).reshape(2, 3, 4), RNG.normal(size=(2, 3, 3))
    np.testing.assert_allclose(rot.quat_apply_inverse(q, rot.quat_apply(q, v)), v, atol=1e-12)
    identity = rot.quat_mul(rot.quat_conjugate(q), q)
    np.testing.assert_allclose(np.abs(identity[..., 0]), 1.0, atol=1e-12)


def test_error_magnitude_is_the_angle_between_and_ignores_sign():
    a = _random_quats(5)
    turn = rot.quat_from_axis_angle(
        np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.3, 1.0, 2.5, np.pi])
    )
    b = rot.quat_mul(a, turn)
    np.testing.assert_allclose(
        rot.quat_error_magnitude(a, b), [0.0, 0.3, 1.0, 2.5, np.pi], atol=1e-7
    )
    np.testing.assert_allclose(
        rot.quat_error_magnitude(a, -b), [0.0, 0.3, 1.0, 2.5, np.pi], atol=1e-7
    )


def test_yaw_quat_keeps_heading_only():
    q = rot.quat_from_euler_xyz(0.4, -0.3, 1.2)
    np.testing.assert_allclose(rot.yaw_quat(q), rot.quat_from_euler_xyz(0.0, 0.0, 1.2), atol=1e-12)


@pytest.mark.parametrize("euler", [(0.3, 0.0, 0.0), (0.0, 0.5, 0.0), (0.2, -0.4, 1.1)])
def test_euler_matches_composition_of_axis_rotations(euler):
    roll, pitch, yaw = euler
    qx = rot.quat_from_axis_angle(np.array([1.0, 0, 0]), roll)
    qy = rot.quat_from_axis_angle(np.array([0, 1.0, 0]), pitch)
    qz = rot.quat_from_axis_angle(np.array([0, 0, 1.0]), yaw)
    expect = rot.quat_mul(qz, rot.quat_mul(qy, qx))
    np.testing.assert_allclose(rot.quat_from_euler_xyz(roll, pitch, yaw), expect, atol=1e-12)


def test_subtract_frame_transforms_expresses_b_in_a():
    pos_a, quat_a = (
        np.array([1.0, 0, 0]),
        rot.quat_from_axis_angle(np.array([0, 0, 1.0]), np.pi / 2),
    )
    pos_b, quat_b = np.array([1.0, 2.0, 0.5]), quat_a
    pos, quat = rot.subtract_frame_transforms(pos_a, quat_a, pos_b, quat_b)
    np.testing.assert_allclose(pos, [2.0, 0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(quat, [1, 0, 0, 0], atol=1e-12)


def test_rotations_about_z_match_the_general_quaternion_forms():
    q, v = _random_quats(8), RNG.normal(size=(8, 3))
    yaw = rot.yaw_angle(q)
    turn = rot.quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw)
    np.testing.assert_allclose(turn, rot.yaw_quat(q), atol=1e-12)
    np.testing.assert_allclose(rot.rotate_about_z(yaw, v), rot.quat_apply(turn, v), atol=1e-12)
    np.testing.assert_allclose(rot.quat_mul_about_z(yaw, q), rot.quat_mul(turn, q), atol=1e-12)


def test_cross_matches_numpy():
    a, b = RNG.normal(size=(4, 5, 3)), RNG.normal(size=(4, 5, 3))
    np.testing.assert_allclose(rot.cross(a, b), np.cross(a, b), atol=1e-12)
