"""Human motion → robot motion (``primebot motion retarget``): read, check, target, solve, floor,
measure.

``retarget_human`` takes a read ``HumanMotion`` and a robot; ``retarget_file`` reads the source,
finds the map, retargets and writes the motion. The steps and the figures: docs/motions.md, "From
human motion".
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from ...robot.kinematics import geom_vertical_extent, posed_frames, robot_geoms, standing_height
from ...robot.model import load_robot_model, robot_indices
from ...robot.spec import RobotSpec
from ..format import Motion
from ..trajectory import motion_from_trajectory
from .floor import below, floor_shift, foot_lows, lift_off_floor
from .human import HumanMotion, RetargetError, check_human, leg_length, stature_estimate
from .ik import BodyIK
from .maps import RetargetMap, check_map, find_map, guess_map, load_map
from .quality import Quality, measure
from .rebalance import COM_COST, FEET_HOLD, rebalance
from .targets import Targets, build_targets, gaussian_smooth

OUTPUT_FPS = 50.0
SCALES = ("legs", "height")
"""How the person is scaled to the robot (``retarget_human``'s ``scale``; docs/motions.md)."""
FIRST_FRAME_ITERATIONS = 200
FRAME_ITERATIONS = 12
JOINT_SMOOTHING_S = 0.02
"""Gaussian smoothing of the solved joint angles (s): IK can flip between near-equal solutions."""


@dataclass
class Retargeted:
    motion: Motion
    quality: Quality
    targets: Targets
    map: RetargetMap
    human: HumanMotion
    roles: dict[str, str]
    """role → the person's joint (the skeleton's, with the map's ``roles`` over them)."""


def _keyframe(model: mujoco.MjModel, spec: RobotSpec) -> int:
    name = spec.extra.get("keyframe")
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, name) if isinstance(name, str) else -1
    return key if key >= 0 else 0


def _standing(model, indices, spec) -> mujoco.MjData:
    """The robot in its default pose, root at the origin, upright and facing +x."""
    return next(iter(posed_frames(model, indices, np.zeros((1, 3)), np.array([[1.0, 0, 0, 0]]),
                                  spec.default_joint_pos[None])))[1]


def _foot_sides(indices, standing: mujoco.MjData) -> list[str]:
    """"left" or "right" for each foot body (``indices.feet_body_ids`` order), from where it is in
    the standing pose (``_standing``): a motion's own frame cannot tell (walking, the pelvis is over
    one foot, and both feet are on the same side of it)."""
    root_y = standing.xpos[indices.root_body_id, 1]
    return ["left" if standing.xpos[foot, 1] > root_y else "right"
            for foot in indices.feet_body_ids]


def _rest_pose(model, indices, standing: mujoco.MjData, sides: list[str],
               bodies: list[str]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """side → the foot body's height above its sole when flat; body → its orientation standing (root
    upright, facing +x)."""
    low = geom_vertical_extent(model, standing)[0]
    mask = robot_geoms(model)
    feet = {}
    for foot, side in zip(indices.feet_body_ids, sides, strict=True):
        subtree = [b for b in range(model.nbody) if below(model, int(foot), b)]
        on = mask & np.isin(model.geom_bodyid, subtree)
        feet[side] = float(standing.xpos[foot, 2] - low[on].min()) if on.any() else 0.0
    quats = {b: standing.xquat[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b)].copy()
             for b in bodies}
    return feet, quats


def _leg_scale(human: HumanMotion, roles: dict[str, str], retarget_map: RetargetMap,
               standing: mujoco.MjData) -> float | None:
    """Robot leg length (the map's hip, knee and ankle bodies, standing) / the person's (the same
    joints' median segment lengths); None where either cannot be measured."""
    body_of = {e.joint: e.body for e in retarget_map.entries}
    role_of = {joint: role for role, joint in roles.items()}
    robot = leg_length({role_of[j]: standing.body(b).xpos for j, b in body_of.items()
                        if j in role_of})
    person = leg_length({role: human.track(j) for role, j in roles.items() if j in human.names})
    return robot / person if robot and person else None


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="frame", desc="retarget", disable=not enabled, leave=False)


def resolve_map(spec: RobotSpec, model: mujoco.MjModel, human: HumanMotion,
                map_path: str | Path | None) -> tuple[RetargetMap, list[str]]:
    """The map to use (``--map``, the robot's built-in map for the skeleton, else a guessed one) and
    notes."""
    if map_path is not None:
        return load_map(map_path), []
    found = find_map(spec, human.skeleton)
    if found is not None:
        return load_map(found), [f"joint map {found}"]
    if human.skeleton is None:
        raise RetargetError(
            f"{human.source}: the skeleton is none that primebot knows (joints: "
            f"{', '.join(human.names[:12])} …) "
            f"and robot {spec.name!r} has no map for it",
            fix="write a joint map naming these joints and their roles (docs/motions.md, \"Maps\") "
                "and pass --map",
        )
    hands = tuple(b for b in spec.end_effector_bodies if b not in spec.feet)
    guessed = guess_map(model, human.skeleton, root=spec.root_body or spec.anchor_body,
                        anchor=spec.anchor_body,
                        feet=tuple(spec.feet), hands=hands)
    return guessed, [f"robot {spec.name!r} has no {human.skeleton.name} map: using one guessed "
                     "from its model "
                     "(write one and pass --map for better results)"]


def retarget_human(human: HumanMotion, spec: RobotSpec, *, map_path: str | Path | None = None,
                   height: float | None = None, align: bool = True, progress: bool = False,
                   model: mujoco.MjModel | None = None, balance: bool = True,
                   scale: str = "legs") -> Retargeted:
    """Retarget ``human`` onto ``spec``'s robot at 50 fps; see the module docstring. ``scale``:
    ``legs`` scales the pelvis and legs by the leg length ratio and the rest by the height ratio,
    ``height`` every joint by the height ratio (``targets``' docstring)."""
    if scale not in SCALES:
        raise RetargetError(f"scale {scale!r} is none of {', '.join(SCALES)}",
                            fix="--scale legs (the default) or --scale height")
    started = time.perf_counter()
    model = load_robot_model(spec) if model is None else model
    indices = robot_indices(model, spec)
    retarget_map, notes = resolve_map(spec, model, human, map_path)
    roles = dict(human.skeleton.roles) if human.skeleton is not None else {}
    roles.update(retarget_map.roles)
    check_human(human, roles)
    check_map(retarget_map, model, human.names, roles, tuple(spec.feet), human.source)
    if height is not None:
        if not np.isfinite(height) or height <= 0:
            raise RetargetError(f"--height {height} is not a positive number of metres",
                                fix="e.g. --height 1.75")
        stature = float(height)
    elif human.height is not None:
        stature = float(human.height)
        notes.append(f"the person's height {stature:.2f} m from the file")
    else:
        stature = stature_estimate(human, roles)
        if stature is None:
            raise RetargetError(f"{human.source}: the person's height cannot be estimated (no head "
                                "joint)",
                                fix="pass --height in metres")
        notes.append(f"the person's height estimated at {stature:.2f} m from the skeleton "
                     "(--height to set it)")
    robot_height = standing_height(model, _keyframe(model, spec))
    standing = _standing(model, indices, spec)
    sides = _foot_sides(indices, standing)
    feet_rest, rest_quats = _rest_pose(model, indices, standing, sides,
                                       [e.body for e in retarget_map.entries])
    leg_scale = _leg_scale(human, roles, retarget_map, standing) if scale == "legs" else None
    targets = build_targets(human, roles, retarget_map, stature=stature, robot_height=robot_height,
                            leg_scale=leg_scale, foot_rest_height=feet_rest,
                            body_rest_quat=rest_quats, fps=OUTPUT_FPS, align=align)
    if scale == "legs" and leg_scale is None:
        notes.append("the legs scaled by the height ratio too: the map pairs no hip, knee and "
                     "ankle on either side, so the leg lengths cannot be compared")

    ik = BodyIK(model, indices, targets.bodies, targets.position_cost, targets.orientation_cost,
                spec.default_joint_pos, com_cost=(COM_COST, COM_COST, 0.0) if balance else 0.0)
    frames = len(targets.positions)
    root_entry = next(
        (e for e, b in enumerate(targets.bodies) if b == model.body(indices.root_body_id).name), 0
    )
    q = ik.qpos(targets.positions[0, root_entry], targets.quats[0, root_entry],
                spec.default_joint_pos)
    qpos = np.empty((frames, model.nq))
    with _progress(frames, progress) as bar:
        for t in range(frames):
            q = ik.solve(q, targets.positions[t], targets.quats[t],
                         orientation_scale=targets.orientation_scale[t],
                         iterations=FIRST_FRAME_ITERATIONS if t == 0 else FRAME_ITERATIONS)
            qpos[t] = q
            bar.update(1)
    feet = np.ones(len(targets.bodies))
    feet[[e for entries in targets.foot_entries.values() for e in entries]] = FEET_HOLD
    first_pass = qpos[:, indices.qpos_adr].copy()

    def solve_frame(t: int, q: np.ndarray, com: np.ndarray | None = None) -> np.ndarray:
        # the joints the targets leave free (a wrist) stay where the first pass put them: drawn to
        # the default pose, a frame solved on its own can swing them to another solution; the feet
        # held while something else moves
        ik.set_posture(first_pass[t])
        return ik.solve(q, targets.positions[t], targets.quats[t], com=com,
                        orientation_scale=targets.orientation_scale[t], position_scale=feet,
                        iterations=FRAME_ITERATIONS)

    if balance:
        qpos, report = rebalance(ik, indices, qpos, solve_frame, OUTPUT_FPS,
                                 lambda q: _finish(model, indices, q, targets, sides))
        notes.append(report.line())

    def keep_com(t: int, q: np.ndarray) -> np.ndarray:
        # a hand raised off the floor leaves the centre of mass where the balance step put it
        ik.pose(q)
        return solve_frame(t, q, ik.centre_of_mass() if balance else None)

    qpos, lifted = lift_off_floor(model, indices, qpos, targets, sides, keep_com)
    if lifted:
        notes.append(f"floor: {lifted} frames with a hand (or another pulled body) raised to rest "
                     "on the floor instead of going through it")
    root_pos, root_quat, joint_pos = _finish(model, indices, qpos, targets, sides)
    motion = motion_from_trajectory(model, indices, spec.joint_names, OUTPUT_FPS, root_pos,
                                    root_quat, joint_pos)
    quality = _quality(model, indices, motion, targets, sides, time.perf_counter() - started,
                       stature, notes)
    return Retargeted(motion, quality, targets, retarget_map, human, roles)


def _finish(model, indices, qpos: np.ndarray, targets: Targets, sides: list[str]):
    """The solved frames [T, nq] as the motion will have them: (root position, root orientation,
    joint angles), the joints smoothed and within their ranges, the root raised or lowered so that
    planted soles rest on the floor."""
    adr = indices.root_qpos_adr
    root_pos, root_quat = qpos[:, adr:adr + 3].copy(), qpos[:, adr + 3:adr + 7].copy()
    lo, hi = indices.joint_range.T
    joint_pos = np.clip(gaussian_smooth(qpos[:, indices.qpos_adr], JOINT_SMOOTHING_S * OUTPUT_FPS),
                        lo, hi)
    root_pos[:, 2] += floor_shift(model, indices, root_pos, root_quat, joint_pos, targets, sides)
    return root_pos, root_quat, joint_pos


def _quality(model, indices, motion: Motion, targets: Targets, sides: list[str], seconds, stature,
             notes) -> Quality:
    root = indices.root_body_id - 1
    lowest, _ = foot_lows(model, indices, motion.body_pos_w[:, root], motion.body_quat_w[:, root],
                          motion.joint_pos)
    tracks = {side: motion.body_pos_w[:, int(f) - 1]
              for side, f in zip(sides, indices.feet_body_ids, strict=True)}
    body_pos, target_pos = {}, {}
    for e, body in enumerate(targets.bodies):
        if targets.position_cost[e] <= 0:
            continue  # an orientation-only target has no position to miss
        b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) - 1
        body_pos[body], target_pos[body] = motion.body_pos_w[:, b], targets.positions[:, e]
    return measure(tracks, targets.contact, lowest, motion.joint_pos, indices.joint_range, body_pos,
                   target_pos,
                   seconds=seconds, frames=motion.num_frames, scale=targets.scale,
                   leg_scale=targets.leg_scale, stature=stature,
                   notes=notes)


def retarget_file(source: str | Path, spec: RobotSpec, output: str | Path, *,
                  fmt: str | None = None,
                  fps: float | None = None, units: str | None = None,
                  map_path: str | Path | None = None,
                  height: float | None = None, align: bool = True, progress: bool = False,
                  balance: bool = True, start_s: float | None = None,
                  end_s: float | None = None, scale: str = "legs") -> Retargeted:
    """Read ``source`` (its frames from ``start_s`` to ``end_s`` seconds), retarget it onto
    ``spec``'s robot and write the motion atomically to ``output``."""
    from ..format import save_motion
    from .human import time_window
    from .sources import load_human

    human = time_window(load_human(source, fmt=fmt, fps=fps, units=units), start_s, end_s)
    done = retarget_human(human, spec, map_path=map_path, height=height, align=align,
                          progress=progress, balance=balance, scale=scale)
    done.quality.notes[:0] = human.notes
    save_motion(done.motion, output)
    return done
