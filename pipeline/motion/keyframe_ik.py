"""IK targets in a keyframe source: pin a foot, the pelvis, a hand or the centre of mass to a place.

A keyframe's ``ik:`` maps a body name (or ``com``, the robot's centre of mass) to a world position
``[x, y, z]`` or to ``{over: BODY}``: above that body, at the height it has now. So "weight over the
stance foot" is one line, ``ik: {com: {over: left_ankle_roll_link}}``. The keyframe's pose is then
solved by the retargeter's whole-body IK (``retarget.ik``): the named targets pull hard, every foot
not named stays where it is, flat, and the other joints stay near the keyframe's angles; the root
moves as the solution needs. The result replaces the keyframe's joints and root before authoring
goes on (floor contact, planted feet, levelling: docs/motions.md, "Authoring motions from
keyframes").
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ..errors import MotionError
from ..robot.kinematics import geom_vertical_extent, robot_geoms, set_qpos
from ..robot.model import RobotIndices
from ..robot.spec import RobotSpec
from .retarget.ik import BodyIK

COM = "com"
"""The name that targets the centre of mass instead of a body."""
TARGET_COST = 20.0
FOOT_COST = 20.0
ITERATIONS = 300
REACHED_TOL = 0.01
"""m: a target the solution misses by more than this is an error naming the keyframe."""


@dataclass(frozen=True)
class IKTarget:
    body: str
    """A body name, or ``COM``."""
    position: np.ndarray | None = None
    """[3] m, world; None with ``over``."""
    over: str | None = None
    """Above this body, at the target's current height."""


def parse_ik(where: str, value) -> tuple[IKTarget, ...]:
    """``ik:`` of one keyframe: body (or ``com``) → ``[x, y, z]`` or ``{over: BODY}`` (names are
    checked against the model when the keyframe is solved, ``check_names``)."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise MotionError(f"{where} must map body names (or com) to [x, y, z] or {{over: BODY}}, "
                          f"got {value!r}",
                          fix="e.g. ik: {com: {over: left_ankle_roll_link}}")
    targets = []
    for body, target in value.items():
        if isinstance(target, dict) and set(target) == {"over"}:
            targets.append(IKTarget(str(body), over=str(target["over"])))
        elif (isinstance(target, (list, tuple)) and len(target) == 3
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
                      for v in target)):
            targets.append(IKTarget(str(body), position=np.array(target, dtype=float)))
        else:
            raise MotionError(f"{where}.{body} must be [x, y, z] (m) or {{over: BODY}}, got "
                              f"{target!r}",
                              fix="e.g. ik: {pelvis: [0.0, 0.04, 0.5]} or ik: {com: {over: "
                                  "left_ankle_roll_link}}")
    return tuple(targets)


def check_names(where: str, targets: tuple[IKTarget, ...], spec: RobotSpec,
                body_names: tuple[str, ...]) -> None:
    """Every body a target names (or stands over) is one of the model's, or ``com``."""
    import difflib

    known = (COM, *body_names)
    for target in targets:
        for name in (target.body, target.over):
            if name is not None and name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                raise MotionError(f"{where}.{target.body}: robot {spec.name!r} has no body {name!r}"
                                  + (f" (did you mean {close[0]!r}?)" if close else ""),
                                  fix=f"use a body name from `primebot robots show {spec.name}`, "
                                      "or com")


def _on_floor(model, indices, root_pos, root_quat, joints) -> np.ndarray:
    """``root_pos`` with z set so the robot's lowest collision point touches z = 0."""
    data = mujoco.MjData(model)
    set_qpos(data.qpos, indices, root_pos, root_quat, joints)
    mujoco.mj_kinematics(model, data)
    low = geom_vertical_extent(model, data)[0][robot_geoms(model)].min()
    return np.array([root_pos[0], root_pos[1], root_pos[2] - low])


def solve_keyframe(model: mujoco.MjModel, indices: RobotIndices, spec: RobotSpec, where: str,
                   targets: tuple[IKTarget, ...], root_pos: np.ndarray, root_quat: np.ndarray,
                   joints: np.ndarray, floor: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The keyframe's (root position, root quaternion, joints) with ``targets`` reached and every
    foot not named held in place; a target out of reach is a ``MotionError`` naming the keyframe."""
    check_names(where, targets, spec, indices.body_names)
    root_pos = (
        _on_floor(model, indices, root_pos, root_quat, joints)
        if floor
        else np.array(root_pos, float)
    )
    named = {t.body for t in targets}
    feet = [f for f in spec.feet if f not in named]
    bodies = [t.body for t in targets if t.body != COM] + feet
    ik = BodyIK(model, indices, bodies,
                [TARGET_COST] * (len(bodies) - len(feet)) + [FOOT_COST] * len(feet),
                [0.0] * (len(bodies) - len(feet)) + [FOOT_COST] * len(feet), joints,
                com_cost=TARGET_COST if COM in named else 0.0)
    q = ik.qpos(root_pos, root_quat, joints)
    ik.pose(q)
    now = {b: ik.body_pose(b) for b in bodies}
    com_now = ik.centre_of_mass()
    positions, quats, com = [], [], None
    for target in targets:
        if target.position is not None:
            goal = target.position
        else:
            above = ik.body_pose(target.over)[0] if target.over != COM else com_now
            height = com_now[2] if target.body == COM else now[target.body][0][2]
            goal = np.array([above[0], above[1], height])
        if target.body == COM:
            com = goal
        else:
            positions.append(goal)
            quats.append(now[target.body][1])
    for foot in feet:
        positions.append(now[foot][0])
        quats.append(now[foot][1])
    solved = ik.solve(q, np.array(positions).reshape(-1, 3), np.array(quats).reshape(-1, 4),
                      com=com,
                      iterations=ITERATIONS)
    missed = [f"{b} by {np.linalg.norm(ik.body_pose(b)[0] - p) * 100:.1f} cm"
              for b, p in zip(bodies, positions, strict=True)
              if np.linalg.norm(ik.body_pose(b)[0] - p) > REACHED_TOL]
    if com is not None and np.linalg.norm(ik.centre_of_mass() - com) > REACHED_TOL:
        missed.append("the centre of mass by "
                      f"{np.linalg.norm(ik.centre_of_mass() - com) * 100:.1f} cm")
    if missed:
        raise MotionError(f"{where}: the IK targets cannot be reached with the feet held: misses "
                          f"{', '.join(missed)}",
                          fix="move the target closer (within the legs' reach, inside the joint "
                              "ranges), or plant "
                          "fewer feet on this keyframe")
    adr = indices.root_qpos_adr
    return (
        solved[adr : adr + 3].copy(),
        solved[adr + 3 : adr + 7].copy(),
        solved[indices.qpos_adr].copy(),
    )
