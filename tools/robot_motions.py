"""A wave and a squat for any humanoid, written from its structure alone (no hand posing).

``motion_sources(spec, model)`` gives, per motion, a keyframe source for ``primebot motion author``
or the reason the robot cannot have it (no arms; no knee between hip and ankle pitch).
tools/bench_robot.py authors and trains them on every humanoid of the Menagerie wheel
(docs/robots.md).
"""

from __future__ import annotations

import numpy as np

KNEE_SQUAT, KNEE_SQUAT_MIN, KNEE_SQUAT_TOTAL = 1.0, 0.5, 1.4
"""rad: the squat bends the knees 1.0 rad more, or up to 1.4 rad in all for a robot that stands with
bent knees (0.5 rad at least), within 80 % of what the knee's range leaves."""
SQUAT_DOWN_S = 2.0
"""s: each way down (and up) of the squat; 1.5 s pushed the H1's zero-moment point 0.016 m outside
its feet."""
SQUAT_MAX_LEAN = 0.7
"""rad: how far the squat may pitch the trunk forward (hip against ankle) to keep the centre of mass
over the middle of the feet; the standing lean's 0.35 left the H1's and the G1's squats with the
centre of mass 10 and 5 cm ahead of it, the H1's on the edge of its toes."""
CLEARANCE = 0.005
"""m: in the squat every collision geom but the feet's stays this far above the floor."""
LIFT = 1.4
"""rad: how far the wave turns the joint that raises the hand most."""
WAVE_BEND, WAVE_SWING = 0.6, 0.35
"""rad: the wave's bend of the joint that swings the hand most, and its swing either side."""


def _pose(model, data, spec, ix, changes: dict[int, float]):
    """Joint angles (policy order) with ``changes`` (joint id → angle) over the default pose,
    forward kinematics done."""
    import mujoco

    pose = spec.default_joint_pos.copy()
    for j, angle in changes.items():
        pose[list(ix.joint_ids).index(j)] = angle
    data.qpos[ix.qpos_adr] = pose
    mujoco.mj_kinematics(model, data)
    return pose


def _clip(model, joint: int, angle: float, margin: float = 0.02) -> float:
    if not model.jnt_limited[joint]:
        return float(angle)
    lo, hi = model.jnt_range[joint]
    return float(np.clip(angle, lo + margin, hi - margin))


def _at_limit(model, changes: dict[int, tuple[float, float]], margin: float = 0.02) -> int | None:
    """A changed joint that ends up within ``margin`` of its range's end (``_clip`` would move it),
    or None."""
    return next((joint for joint, (_, after) in changes.items()
                 if abs(_clip(model, joint, after, margin) - after) > 1e-9), None)


def _bend_side(model, joint: int) -> float:
    """+1 or −1: the side of 0 where the joint's range reaches further (a knee bends that way)."""
    lo, hi = model.jnt_range[joint] if model.jnt_limited[joint] else (-np.pi, np.pi)
    return 1.0 if abs(hi) >= abs(lo) else -1.0


def squat_source(spec, model) -> dict | str:
    """Two slow squats: the knees bent ``KNEE_SQUAT`` more (less when that brings a shin down to the
    floor or a joint to the end of its range: an ankle held there tips the foot onto its edge), hip
    and ankle pitch turned so the feet stay flat and the centre of mass over them (robot/stance.py's
    lean); a reason instead when the legs cannot."""
    import mujoco

    from primebot.pipeline.api import robot_indices
    from primebot.pipeline.robot.checks import stand_key
    from primebot.pipeline.robot.kinematics import geom_vertical_extent, robot_geoms
    from primebot.pipeline.robot.stance import balancing_lean, leg_pitch_joints

    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, max(stand_key(model, spec), 0))
    mujoco.mj_kinematics(model, data)
    feet = ix.feet_body_ids.tolist()
    legs = leg_pitch_joints(model, data, list(ix.joint_ids), ix.root_body_id, feet)
    if legs is None or any(len(leg) < 3 for leg in legs):
        return "no squat: a leg has no knee between its hip and ankle pitch joints"
    forward = data.xmat[ix.root_body_id].reshape(3, 3)[:, 0]
    sides = {}
    for leg, foot in zip(legs, feet, strict=True):
        for knee, _ in leg[1:-1]:
            # a knee bends the way that moves its foot back (the shin tilts back under a forward
            # knee)
            adr = model.jnt_qposadr[knee]
            before = data.xpos[foot].copy()
            data.qpos[adr] += 0.3
            mujoco.mj_kinematics(model, data)
            sides[knee] = 1.0 if (data.xpos[foot] - before) @ forward < 0 else -1.0
            data.qpos[adr] -= 0.3
            mujoco.mj_kinematics(model, data)
    free = int(model.body_jntadr[ix.root_body_id])
    colliding = robot_geoms(model) & ~np.isin(model.geom_bodyid, feet)
    names = {int(j): n for j, n in zip(ix.joint_ids, spec.joint_names, strict=True)}
    lean, why = None, "no knee bend leaves the centre of mass over the feet"
    for share in (1.0, 0.8, 0.6, 0.4):
        bend = {}
        for knee, side in sides.items():
            # a robot standing with bent knees squats less deep
            flexed = side * data.qpos[model.jnt_qposadr[knee]]
            depth = share * float(np.clip(KNEE_SQUAT_TOTAL - flexed, KNEE_SQUAT_MIN, KNEE_SQUAT))
            lo, hi = model.jnt_range[knee]
            room = (hi if side > 0 else -lo) - flexed if model.jnt_limited[knee] else depth
            bend[knee] = side * min(depth, 0.8 * max(room, 0.0))
        lean = balancing_lean(model, data.qpos.copy(), free, list(ix.joint_ids), ix.root_body_id,
                              feet, bend=bend, max_lean=SQUAT_MAX_LEAN)
        if lean is None:
            continue
        held = _at_limit(model, lean.changes)
        # held at the end of its range, an ankle tips the foot onto its edge: bend less
        if held is not None:
            why = (f"the feet cannot stay flat: {names[held]} reaches the end of its range even "
                   "with the knees "
                   f"bent {max(abs(b) for b in bend.values()):.2f} rad")
            lean = None
            continue
        # off the middle of the feet the squat is a balancing act no policy follows closely: bend
        # less
        if not lean.balance.stands:
            why = ("no knee bend leaves the centre of mass over the middle of the feet (the "
                   f"nearest: {lean.balance.margin * 1000:+.0f} mm from it)")
            lean = None
            continue
        # the feet alone carry it: no shin, knee or hand comes down to the floor
        posed = mujoco.MjData(model)
        posed.qpos[:] = lean.qpos
        mujoco.mj_kinematics(model, posed)
        if geom_vertical_extent(model, posed)[0][colliding].min() > CLEARANCE:
            break
        why, lean = (
            "no knee bend keeps the robot on its feet alone (a shin or a knee reaches the floor)",
            None,
        )
    if lean is None:
        return f"no squat: {why}"
    down = {names[j]: round(after, 4) for j, (_, after) in lean.changes.items()}
    d = SQUAT_DOWN_S
    return {
        "description": "two slow squats, generated by tools/bench_robot.py from the robot's legs",
        "poses": {"down": down},
        "keyframes": [
            {"time": 0.0, "plant_feet": True}, {"time": 0.5, "plant_feet": True},
            {"time": 0.5 + d, "pose": "down", "plant_feet": True},
            {"time": 1.0 + d, "pose": "down", "plant_feet": True},
            {"time": 1.0 + 2 * d, "plant_feet": True}, {"time": 1.5 + 2 * d, "plant_feet": True},
            {"time": 1.5 + 3 * d, "pose": "down", "plant_feet": True},
            {"time": 2.0 + 3 * d, "pose": "down", "plant_feet": True},
            {"time": 2.0 + 4 * d, "plant_feet": True}, {"time": 2.5 + 4 * d},
        ],
    }


def wave_source(spec, model) -> dict | str:
    """Raise the right hand and wave three times: the arm joint that lifts the hand highest turned
    ``LIFT``, then the one that swings it furthest bent ``WAVE_BEND`` and swung ±``WAVE_SWING``; a
    reason instead when the robot has no arm."""
    import mujoco

    from primebot.pipeline.api import robot_indices
    from primebot.pipeline.robot.checks import stand_key
    from primebot.pipeline.robot.statics import is_ancestor

    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, max(stand_key(model, spec), 0))
    mujoco.mj_kinematics(model, data)
    body = lambda name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)  # noqa: E731
    hands = [body(b) for b in spec.end_effector_bodies if b not in spec.feet]
    if len(hands) < 2:
        return "no wave: the robot has no arms (no hands among its end effectors)"
    hand = min(hands, key=lambda b: data.xpos[b, 1])  # the right one (−y)
    other = max(hands, key=lambda b: data.xpos[b, 1])
    arm = [int(j) for j in ix.joint_ids if is_ancestor(model, int(model.jnt_bodyid[j]), hand)
           and not is_ancestor(model, int(model.jnt_bodyid[j]), other)]
    if len(arm) < 2:
        return "no wave: the arm has fewer than two joints"

    def hand_at(changes):
        _pose(model, data, spec, ix, changes)
        return data.xpos[hand].copy()

    default = dict(zip(ix.joint_ids.tolist(), spec.default_joint_pos, strict=True))
    lifts = [(j, _clip(model, j, default[j] + sign * LIFT)) for j in arm[:3]
             for sign in (1.0, -1.0)]
    lift, lifted = max(lifts, key=lambda c: hand_at({c[0]: c[1]})[2])
    best = None
    for j in arm:
        if j == lift:
            continue
        centre = _clip(model, j, default[j] + _bend_side(model, j) * WAVE_BEND, WAVE_SWING)
        out, back = _clip(model, j, centre - WAVE_SWING), _clip(model, j, centre + WAVE_SWING)
        swing = np.linalg.norm(
            (hand_at({lift: lifted, j: out}) - hand_at({lift: lifted, j: back}))[:2]
        )
        if best is None or swing > best[0]:
            best = (swing, j, centre, out, back)
    _, swinger, centre, out, back = best
    names = {int(j): n for j, n in zip(ix.joint_ids, spec.joint_names, strict=True)}

    def pose(angle):
        return {names[lift]: round(lifted, 4), names[swinger]: round(angle, 4)}

    waves = [{"time": round(1.95 + 0.35 * k, 2), "pose": "wave_out" if k % 2 == 0 else "wave_in",
              "plant_feet": True}
             for k in range(6)]
    return {
        "description": "raise the right hand, wave three times, lower it; generated by "
                       "tools/bench_robot.py",
        "poses": {"arm_up": pose(centre), "wave_out": pose(out), "wave_in": pose(back)},
        "keyframes": [
            {"time": 0.0, "plant_feet": True}, {"time": 0.6, "plant_feet": True},
            {"time": 1.6, "pose": "arm_up", "plant_feet": True}, *waves,
            {"time": 4.0, "pose": "arm_up", "plant_feet": True}, {"time": 5.0, "plant_feet": True},
            {"time": 5.6},
        ],
    }


def motion_sources(spec, model) -> dict[str, dict | str]:
    """The wave and the squat for ``spec``'s robot (a keyframe source each, or why it has none)."""
    return {"wave": wave_source(spec, model), "squat": squat_source(spec, model)}
