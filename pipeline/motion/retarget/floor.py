"""The floor of a retarget: planted soles rest on it, and nothing goes through it.

The solved frames are raised or lowered so that a planted foot's sole rests on the floor
(``floor_shift``). A person reaching down to a box on the floor puts their hands at its level; on
a robot whose arms are longer for its legs the same targets put a hand below it. Raising the whole
robot to clear the hand would hang the planted feet in the air (the G1's wrists in OMOMO's sub3:
both feet 2 cm up for half a second, the hands carrying the robot), so ``lift_off_floor`` raises
the hand's target instead, by what it went through, and solves the frame again with the feet held:
the hand then rests on the floor and the feet stay on it (docs/motions.md, "From human motion").
"""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np

from ...robot.kinematics import geom_vertical_extent, posed_frames, robot_geoms
from ...robot.model import RobotIndices
from .targets import Targets, gaussian_smooth

FLOOR_SMOOTHING_S = 0.05
"""Gaussian smoothing (s) of the root's height change that puts the planted soles on the floor."""
LIFT_TOLERANCE_M = 0.002
"""A body this far below the floor (after the feet's shift) has its target raised."""
LIFT_SPREAD_S = 0.1
"""A raise is held this long around the frames that need it and faded in and out (a target that
jumps up for one frame would jerk the arm)."""
LIFT_ROUNDS = 3
"""Rounds of measure, raise and solve again (a raised wrist can bend the elbow lower)."""


def below(model: mujoco.MjModel, top: int, body: int) -> bool:
    """``body`` is ``top`` or one of its descendants."""
    while body > 0:
        if body == top:
            return True
        body = int(model.body_parentid[body])
    return False


def foot_lows(model: mujoco.MjModel, indices: RobotIndices, root_pos, root_quat,
              joint_pos) -> tuple[np.ndarray, np.ndarray]:
    """[T] lowest point of every collision geom, and per foot body [T, F] the lowest of its
    geoms."""
    mask = robot_geoms(model)
    lows = _geom_lows(model, indices, root_pos, root_quat, joint_pos)
    return lows[:, mask].min(axis=1), _feet_of(model, indices, lows)


def _geom_lows(model, indices, root_pos, root_quat, joint_pos) -> np.ndarray:
    """[T, ngeom] each geom's lowest point in each frame."""
    return np.array([geom_vertical_extent(model, data)[0]
                     for _, data in posed_frames(model, indices, root_pos, root_quat, joint_pos)])


def _feet_of(model: mujoco.MjModel, indices: RobotIndices, lows: np.ndarray) -> np.ndarray:
    """[T, F] per foot body the lowest of its collision geoms (``lows``: ``_geom_lows``)."""
    mask = robot_geoms(model)
    return np.stack([lows[:, mask & np.isin(model.geom_bodyid,
                                            [b for b in range(model.nbody)
                                             if below(model, int(f), b)])].min(axis=1)
                     for f in indices.feet_body_ids], axis=1)


def feet_shift(feet: np.ndarray, targets: Targets, sides: list[str]) -> np.ndarray:
    """[T] root height change that puts the lowest planted sole on the floor (``feet``: per foot
    body its lowest point, ``foot_lows``), smoothed; 0 where no foot is planted."""
    planted = np.stack([targets.contact[side] for side in sides], axis=1)
    shift = np.where(planted.any(axis=1), -np.where(planted, feet, np.inf).min(axis=1), 0.0)
    return gaussian_smooth(shift, FLOOR_SMOOTHING_S * targets.fps)


def floor_shift(model, indices, root_pos, root_quat, joint_pos, targets: Targets,
                sides: list[str]) -> np.ndarray:
    """[T] root height change: a planted foot's sole rests on the floor, and nothing ever goes below
    it."""
    lowest, feet = foot_lows(model, indices, root_pos, root_quat, joint_pos)
    return np.maximum(feet_shift(feet, targets, sides), -lowest)


def _held(values: np.ndarray, radius: int) -> np.ndarray:
    """[T, ...] each frame's largest value within ``radius`` frames of it."""
    padded = np.pad(values, [(radius, radius)] + [(0, 0)] * (values.ndim - 1), mode="edge")
    return np.lib.stride_tricks.sliding_window_view(padded, 2 * radius + 1, axis=0).max(axis=-1)


def _owners(model: mujoco.MjModel, indices: RobotIndices, targets: Targets) -> np.ndarray:
    """Per geom: the entry whose target is raised when it goes through the floor (the nearest
    mapped body at or above it that is pulled by position and is not a foot), else -1."""
    feet = {e for entries in targets.foot_entries.values() for e in entries}
    entry_of = {}
    for e, name in enumerate(targets.bodies):
        if e not in feet and targets.position_cost[e] > 0:
            entry_of[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)] = e
    on_foot = np.array([any(below(model, int(f), int(b)) for f in indices.feet_body_ids)
                        for b in model.geom_bodyid])
    owners = np.full(model.ngeom, -1)
    for g in np.flatnonzero(robot_geoms(model) & ~on_foot):
        body = int(model.geom_bodyid[g])
        while body > 0 and body not in entry_of:
            body = int(model.body_parentid[body])
        owners[g] = entry_of.get(body, -1)
    return owners


def lift_off_floor(model: mujoco.MjModel, indices: RobotIndices, qpos: np.ndarray,
                   targets: Targets, sides: list[str],
                   solve_frame: Callable[[int, np.ndarray], np.ndarray]) -> tuple[np.ndarray, int]:
    """``qpos`` [T, nq] with every pulled body that went through the floor (the planted feet on it)
    raised to rest on it: its target in ``targets.positions`` is raised (in place) and the frame is
    solved again by ``solve_frame(t, q)``. Returns the frames and how many needed it."""
    owners = _owners(model, indices, targets)
    if not (owners >= 0).any():
        return qpos, 0
    adr = indices.root_qpos_adr
    spread = max(1, int(round(LIFT_SPREAD_S * targets.fps)))
    lifted = np.zeros(len(qpos), dtype=bool)
    for _ in range(LIFT_ROUNDS):
        # one posing per round: the feet's shift moves every geom of a frame by the same height
        lows = _geom_lows(model, indices, qpos[:, adr:adr + 3], qpos[:, adr + 3:adr + 7],
                          qpos[:, indices.qpos_adr])
        lows += feet_shift(_feet_of(model, indices, lows), targets, sides)[:, None]
        raise_by = np.zeros(targets.positions.shape[:2])
        for t, g in zip(*np.nonzero((owners >= 0) & (lows < -LIFT_TOLERANCE_M)), strict=True):
            raise_by[t, owners[g]] = max(raise_by[t, owners[g]], -lows[t, g])
        if not raise_by.any():
            break
        raise_by = gaussian_smooth(_held(raise_by, spread), spread / 2)
        frames = np.flatnonzero(raise_by.max(axis=1) > 1e-4)
        targets.positions[:, :, 2] += raise_by
        lifted[frames] = True
        qpos = qpos.copy()
        for t in frames:
            qpos[t] = solve_frame(int(t), qpos[t])
    return qpos, int(lifted.sum())
