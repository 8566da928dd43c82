"""Pull a retargeted motion's zero-moment point back over its planted feet (on unless --no-balance).

A person's motion scaled onto a robot keeps the person's lean and timing, not the robot's mass:
bending over a box that the person's own counterweight (or the box) balanced, or shifting weight
faster than a robot's small flat feet allow, puts the robot's zero-moment point (motion/balance.py)
outside its feet, where no policy can follow (the validator's ``balance`` warning). After the first
IK pass, every frame whose ZMP is outside the support polygon of the planted feet, or closer than
``MARGIN_M`` to its edge, gets a centre-of-mass target shifted by the shortfall, towards the
polygon's centroid; the shifts are smoothed in time (a shift accelerates the body too) and the
frames are solved again with mink's ComTask (horizontal only) beside the body targets, the planted
feet held by theirs. ``PASSES`` rounds; the quality report gives the frames outside before and
after (docs/motions.md, "From human motion").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...robot.model import RobotIndices
from ...robot.stance import polygon_centroid, signed_margin
from ..balance import GRAVITY, support_margins, zmp_and_support

MARGIN_M = 0.01
"""m: how far inside the support polygon's edge the ZMP is brought."""
PASSES = 3
"""Rounds of measure, shift and solve again."""
STAY_WEIGHT = 1e-3
"""Least-squares weight of staying at the first pass's centre of mass (against 1 for the ZMP)."""
COM_COST = 20.0
"""mink ComTask cost (x and y; z is free), against 10 for a foot in the built-in maps …"""
FEET_HOLD = 10.0
"""… whose position costs are multiplied by this while the centre of mass moves: the feet stay."""
BISECTIONS = 24


@dataclass
class BalanceReport:
    """The frames whose ZMP is outside the feet, and the worst distance outside, before and
    after."""

    frames_outside_before: int
    frames_outside_after: int
    worst_outside_before_m: float
    worst_outside_after_m: float
    largest_shift_m: float

    def line(self) -> str:
        return (f"balance: ZMP outside the planted feet in {self.frames_outside_before} frames "
                f"(up to {self.worst_outside_before_m:.3f} m) before, {self.frames_outside_after} "
                f"(up to {self.worst_outside_after_m:.3f} m) after moving the centre of mass by up "
                f"to {self.largest_shift_m:.3f} m")


def inside_point(point: np.ndarray, hull: np.ndarray, margin: float = MARGIN_M) -> np.ndarray:
    """The point nearest ``point`` on the segment from ``hull``'s centroid to it that lies
    ``margin`` inside ``hull`` (the centroid itself when the polygon is too small to have such a
    point)."""
    centre = polygon_centroid(hull)
    if signed_margin(point, hull) >= margin:
        return np.asarray(point, dtype=float)
    if len(hull) < 3 or signed_margin(centre, hull) < margin:
        return centre
    low, high = 0.0, 1.0  # fraction of the way from the centre to the point
    for _ in range(BISECTIONS):
        mid = 0.5 * (low + high)
        if signed_margin(centre + mid * (point - centre), hull) >= margin:
            low = mid
        else:
            high = mid
    return centre + low * (point - centre)


def _measure(model, indices: RobotIndices, frames: tuple, fps: float):
    com, zmp, hulls = zmp_and_support(model, indices, indices.feet_body_ids, *frames, fps)
    return com, zmp, hulls, support_margins(zmp, hulls)


def _outside(margins: np.ndarray) -> tuple[int, float]:
    bad = margins[np.isfinite(margins) & (margins < 0)]
    return int(len(bad)), float(-bad.min()) if len(bad) else 0.0


def com_path(com: np.ndarray, zmp: np.ndarray, hulls: list, margins: np.ndarray,
             fps: float) -> np.ndarray:
    """[T, 2] a horizontal centre-of-mass path whose zero-moment point (linear inverted pendulum,
    ``zmp = com - z / g · com''``) is each frame's own, brought ``MARGIN_M`` inside the support
    polygon where it was not; least squares, staying near ``com`` where nothing asks."""
    frames, dt = len(com), 1.0 / fps
    wanted = zmp.copy()
    for t, hull in enumerate(hulls):
        if hull is not None and margins[t] < MARGIN_M:
            wanted[t] = inside_point(zmp[t], hull)
    rows, rhs = [], []
    for t in range(1, frames - 1):  # a frame nothing judges keeps its own ZMP: no jolt at its ends
        k = com[t, 2] / GRAVITY / dt ** 2
        row = np.zeros(frames)
        row[t - 1:t + 2] = (-k, 1.0 + 2.0 * k, -k)
        rows.append(row)
        rhs.append(wanted[t])
    for t in {0, frames - 1}:  # the ends have no ZMP rows: held where they are, not swung
        rows.append(np.eye(frames)[t])
        rhs.append(com[t, :2])
    anchor = np.sqrt(STAY_WEIGHT) * np.eye(frames)
    system = np.vstack([*rows, anchor])
    target = np.vstack([*rhs, np.sqrt(STAY_WEIGHT) * com[:, :2]])
    return np.linalg.lstsq(system, target, rcond=None)[0]


def rebalance(ik, indices: RobotIndices, qpos: np.ndarray, solve_frame, fps: float,
              floor) -> tuple[np.ndarray, BalanceReport]:
    """``qpos`` [T, nq] from the first IK pass, solved again with centre-of-mass targets.

    ``solve_frame(t, q, com)`` solves frame ``t`` from ``q`` with the target ``com`` [3];
    ``floor(qpos)`` returns (root positions, root orientations, joint angles) with the feet on the
    floor as the final motion will have them: the support is judged there, as the validator does."""
    model = ik.model
    com, zmp, hulls, margins = _measure(model, indices, floor(qpos), fps)
    before = _outside(margins)
    start = com[:, :2].copy()
    for _ in range(PASSES):
        if not (np.isfinite(margins) & (margins < MARGIN_M)).any():
            break
        target = com.copy()
        target[:, :2] = com_path(com, zmp, hulls, margins, fps)
        qpos = np.stack([solve_frame(t, qpos[t], target[t]) for t in range(len(qpos))])
        com, zmp, hulls, margins = _measure(model, indices, floor(qpos), fps)
    after = _outside(margins)
    largest = float(np.linalg.norm(com[:, :2] - start, axis=1).max()) if len(qpos) else 0.0
    return qpos, BalanceReport(before[0], after[0], before[1], after[1], largest)
