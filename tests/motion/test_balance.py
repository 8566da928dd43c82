"""The balance geometry: convex hulls, signed margins and the zero-moment point of real motions."""

from __future__ import annotations

import numpy as np
import pytest

from primebot.pipeline.motion.balance import balance_margins, convex_hull, signed_margin
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.robot.model import robot_indices
from primebot.pipeline.rotations import quat_normalize

SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])


def test_the_hull_drops_inner_points_and_runs_counter_clockwise():
    points = np.vstack([SQUARE, [[0.5, 0.5], [0.2, 0.7]], SQUARE])
    hull = convex_hull(points)
    assert {tuple(p) for p in hull} == {tuple(p) for p in SQUARE}
    area2 = sum(a[0] * b[1] - b[0] * a[1]
                for a, b in zip(hull, np.roll(hull, -1, axis=0), strict=True))
    assert area2 > 0  # counter-clockwise


@pytest.mark.parametrize(("point", "margin"), [
    ((0.5, 0.5), 0.5), ((0.9, 0.5), 0.1), ((1.5, 0.5), -0.5), ((2.0, 2.0), -np.sqrt(2.0)),
    ((1.0, 0.5), 0.0),
])
def test_the_margin_is_the_distance_to_the_nearest_edge_signed_by_inside(point, margin):
    assert signed_margin(np.array(point), convex_hull(SQUARE)) == pytest.approx(margin)


def test_a_segment_or_a_point_has_no_inside():
    assert signed_margin(np.array([0.5, 0.1]), np.array([[0.0, 0.0], [1.0, 0.0]])) == pytest.approx(
        -0.1
    )
    assert signed_margin(np.array([0.3, 0.4]), np.array([[0.0, 0.0]])) == pytest.approx(-0.5)


def _margins(repo_root, spec, model, name):
    motion = load_motion(repo_root / "motions" / f"{name}.npz")
    indices = robot_indices(model, spec)
    root = indices.root_body_id - 1
    return balance_margins(model, indices, indices.feet_body_ids, motion.body_pos_w[:, root],
                           quat_normalize(motion.body_quat_w[:, root]), motion.joint_pos,
                           motion.fps)


def test_standing_and_waving_keeps_the_zmp_well_inside_both_feet(repo_root, spec, model):
    margins = _margins(repo_root, spec, model, "wave")
    assert not np.isnan(margins).any()  # the feet alone carry it in every frame
    assert margins.min() > 0.05  # q1's feet are 7 cm wide and stand 10 cm apart


def test_frames_the_feet_do_not_carry_alone_are_not_judged(repo_root, spec, model):
    margins = _margins(repo_root, spec, model, "getup")
    assert np.isnan(margins[0])  # lying on the floor
