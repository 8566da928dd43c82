"""``primebot robots check``: every model requirement of a robot, checked up front, each with its
fix.

The requirements are ``model_checks.robot_problems`` (names, actuators and the gains
contract, armature, keyframe, floor and the feet touching it), plus the
timestep and what needs the standing pose or a simulation: the stand pose on
the floor, no self-collision in it, the keyframe equal to the default pose,
the centre of mass over the middle of the feet (``balance``, with the lean
that puts it there), standing under the spec's PD servos (information:
realistic gains need a policy to stand; when it falls the line says whether
the balance or the softest servo is why), and how the videos frame the robot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import mujoco
import numpy as np

from ..errors import RobotError
from .camera import CameraConfig
from .kinematics import geom_vertical_extent, robot_geoms
from .mirror import joint_mirror
from .model import apply_spec_actuators, compile_mjcf, robot_indices
from .model_checks import robot_problems
from .spec import PER_JOINT_FIELDS, RobotSpec
from .stance import MAX_SAG, balancing_lean, holds_pose, standing_balance, standing_torques
from .statics import stiffness_ratios
from .training_step import (
    agrees,
    coarse_timestep,
    describe,
    kick_both_steps,
    overridden_timestep,
    training_overrides,
)

TRAINING_FPS = 50.0
"""Frames per second of a motion the pipeline trains on: the policy's control rate (``motion
validate`` refuses another)."""
FLOOR_TOL = 0.005
"""m: how far above or below the floor the standing pose's lowest collision point may be."""
PHYSICS_TIMESTEP = 1.0 / TRAINING_FPS / 4
"""s: the built-in tasks step the physics 4 times (their default decimation) per control step,
and the policy runs at the motions' 50 fps: a 5 ms timestep."""
STAND_SECONDS = 10.0
"""Simulated time of the standing-under-PD check: a whole training episode (the tracking task's
time-out); a robot that leans slowly off its feet under its servos falls in 2–5 s."""

MODEL_CHECKS = ("names", "actuators", "armature", "keyframe", "floor")
"""The ``robot_problems`` requirements, in the order ``robots check`` lists them."""
OK_DETAIL = {
    "names": "joints, bodies and the floating base match the spec",
    "actuators": "one actuator per joint; position servos carry the spec's kp/kv (motors carry "
                 "none)",
    "armature": "the MJCF's joint armature is extra['armature']",
    "keyframe": "the keyframe extra['keyframe'] names is in the model",
    "floor": "a colliding plane on the world body, and the feet can touch it",
}


@dataclass
class Finding:
    """One line of ``robots check``: ``status`` is ``ok``, ``error`` or ``info``."""

    check: str
    status: str
    detail: str
    fix: str = ""


def stand_key(model: mujoco.MjModel, spec: RobotSpec) -> int:
    """The keyframe of the standing pose: ``extra['keyframe']`` (name or index), else the first; -1
    if none."""
    key = spec.extra.get("keyframe", 0)
    if isinstance(key, str):
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, key)
    return key if 0 <= key < model.nkey else -1


def _stand_data(model: mujoco.MjModel, key: int) -> mujoco.MjData:
    data = mujoco.MjData(model)
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    mujoco.mj_forward(model, data)
    return data


def _floor_and_height(model, spec, ix, key) -> list[Finding]:
    data = _stand_data(model, key)
    low, high = geom_vertical_extent(model, data)
    mask = robot_geoms(model)
    lowest, height = float(low[mask].min()), float(high[mask].max() - low[mask].min())
    mass = float(model.body_subtreemass[ix.root_body_id])
    pose = f"keyframe {key}" if key >= 0 else "the model's initial pose (no keyframe)"
    findings = [Finding("height", "info", f"{height:.3f} m tall (collision geoms), {mass:.2f} kg, "
                        f"{spec.num_joints} joints")]
    if abs(lowest) <= FLOOR_TOL:
        findings.append(Finding("stand_on_floor", "ok", f"in {pose} the lowest collision point is "
                                f"{lowest * 1000:+.1f} mm from the floor"))
    else:
        fix = f"move the standing keyframe's root by {-lowest:+.4f} m vertically"
        if not spec.extra.get("root_joints"):  # a free joint: qpos holds the root's world z
            fix += (
                f" (qpos[{ix.root_qpos_adr + 2}] = {data.qpos[ix.root_qpos_adr + 2] - lowest:.4f})"
            )
        findings.append(Finding(
            "stand_on_floor", "error",
            f"in {pose} the lowest collision point is {lowest:+.3f} m from the floor", fix
        ))
    findings.append(_balance(model, spec, ix, data))
    findings.append(_self_collision(model, spec, data))
    if key >= 0:
        joints = model.key_qpos[key][ix.qpos_adr]
        off = np.flatnonzero(~np.isclose(joints, spec.default_joint_pos, atol=1e-4))
        if len(off):
            names = ", ".join(f"{spec.joint_names[j]} {joints[j]:.3f} vs "
                              f"{spec.default_joint_pos[j]:.3f}"
                              for j in off[:4])
            findings.append(Finding(
                "default_pose", "error",
                f"the standing keyframe's joints differ from default_joint_pos at {len(off)} "
                f"joint(s): {names}",
                "make the keyframe's joint qpos (and ctrl for position servos) the spec's "
                "default_joint_pos",
            ))
        else:
            findings.append(Finding("default_pose", "ok",
                                    "the standing keyframe's joints are default_joint_pos"))
    return findings


def _self_collision(model, spec, data) -> Finding:
    """Robot-robot contacts in the standing pose: the self-collision penalty would fire every
    step."""
    name = lambda g: (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
                      or f"geom {g}")
    counted = {frozenset(pair) for pair in spec.self_collision_geoms}
    touching = []
    for contact in data.contact[: data.ncon]:
        g1, g2 = int(contact.geom1), int(contact.geom2)
        if model.geom_bodyid[g1] == 0 or model.geom_bodyid[g2] == 0:
            continue
        if not counted or frozenset((name(g1), name(g2))) in counted:
            touching.append(f"{name(g1)}–{name(g2)}")
    if not touching:
        return Finding("self_collision", "ok", "no robot geoms touch in the standing pose")
    return Finding(
        "self_collision", "error",
        f"{len(touching)} self-collision contact(s) in the standing pose: "
        f"{', '.join(touching[:6])}",
        "move or shrink those collision geoms, exclude the pair (<contact><exclude body1=… "
        "body2=…/>), or "
        "list only the pairs that matter in self_collision_geoms",
    )


def _balance(model, spec, ix, data) -> Finding:
    """The standing pose's centre of mass over the middle of the feet (robot/stance.py), else the
    lean that puts it there."""
    feet = ix.feet_body_ids.tolist()
    balance = standing_balance(model, data, ix.root_body_id, feet)
    if balance is None:
        return Finding("balance", "error",
                       f"no foot ({', '.join(spec.feet)}) touches the floor in the standing pose",
                       "name in feet the bodies the robot stands on, and put them on the floor in "
                       "the standing keyframe")
    where = (f"the centre of mass is {balance.margin * 1000:+.0f} mm from the edge of the middle "
             "half of the feet's "
             f"support polygon ({balance.edge_margin * 1000:+.0f} mm from its edge)")
    if balance.stands:
        return Finding("balance", "ok", where)
    lean = None if spec.extra.get("root_joints") else balancing_lean(
        model, data.qpos.copy(), int(model.body_jntadr[ix.root_body_id]), list(ix.joint_ids),
        ix.root_body_id, feet)
    if lean is not None and lean.balance.stands:
        names = {int(j): n for j, n in zip(ix.joint_ids, spec.joint_names, strict=True)}
        moves = ", ".join(f"{names[j]} {before:.3f} → {after:.3f}"
                          for j, (before, after) in lean.changes.items())
        fix = (f"lean the standing pose {lean.angle:+.3f} rad over the feet, hip pitch against "
               "ankle pitch so the feet "
               f"stay flat: {moves}, in the keyframe (qpos and ctrl, root height "
               f"{lean.qpos[ix.root_qpos_adr + 2]:.4f}) "
               "and in default_joint_pos (`primebot robots new` does this for a standing pose it "
               "guesses)")
    else:
        fix = ("move the standing pose's centre of mass over the middle of the feet (lean at the "
               "ankles, or bend the "
               "hips and knees) in the keyframe and default_joint_pos")
    return Finding("balance", "error",
                   where + ": under its servos alone the robot tips over its feet's edge", fix)


def _standing_under_pd(model, spec, ix, key) -> Finding:
    """Hold ctrl = default pose with the spec's servos from the standing pose (information only)."""
    apply_spec_actuators(model, spec, ix)
    data = _stand_data(model, key)
    joints, feet = list(ix.joint_ids), set(ix.feet_body_ids.tolist())
    stiffness = np.asarray(spec.stiffness, dtype=float)
    ratios = stiffness_ratios(model, data, joints, stiffness, ix.root_body_id, feet)
    sag = standing_torques(model, data, joints, ix.root_body_id, feet) / stiffness
    data.ctrl[ix.actuator_ids] = spec.default_joint_pos
    start, end, fell = holds_pose(model, data, STAND_SECONDS, ix.anchor_body_id, ix.root_body_id)
    verdict = "fell" if fell else "stayed up"
    weakest, sagging = int(np.argmin(ratios)), int(np.argmax(sag))
    softest = (f"; the softest servo, {spec.joint_names[weakest]}, is {ratios[weakest]:.2f} × its "
               "gravity stiffness "
               "(the torque per radian gravity puts on what it carries standing); "
               f"{spec.joint_names[sagging]} gives "
               f"{sag[sagging]:.3f} rad under the torque of standing")
    why = ""
    if fell:
        why = ('; a robot that falls under its servos has to learn balance before the motion, '
               'which the laptop '
               'presets do not do: stiffer servos (≥ 1.5 × everywhere, sagging < 0.05 rad) train '
               'in minutes '
               '(docs/robots.md, "Gains")')
    return Finding(
        "stands_under_pd", "info",
        f"with ctrl = default pose and the spec's gains, no policy, it {verdict} over "
        f"{STAND_SECONDS:.0f} s "
        f"(anchor {start:.2f} → {end:.2f} m)" + softest + why,
    )


def _training_step(model, spec, ix, key) -> Finding:
    """Whether the robot moves at the physics step it trains at (or could) as at its model's
    (robot/training_step.py; information only: sim2sim and the stress test judge at the model's
    step). ``model`` has the spec's servos (``_standing_under_pd``)."""
    fine = float(model.opt.timestep)
    trained = overridden_timestep(spec.training_overrides)
    if trained is not None and trained <= fine:
        return Finding("training_step", "info", f"trains at {trained * 1000:g} ms physics, no "
                       f"coarser than the model's {fine * 1000:g} ms")
    coarse = coarse_timestep(model) if trained is None else trained
    if coarse is None:
        return Finding("training_step", "info", f"trains at the model's {fine * 1000:g} ms: no "
                       "coarser step of whole steps per control step to offer")
    data = _stand_data(model, key)
    data.ctrl[ix.actuator_ids] = spec.default_joint_pos
    kicks = kick_both_steps(model, data, ix.anchor_body_id, ix.root_body_id, coarse)
    found = describe(kicks, fine, coarse)
    if trained is not None:
        if agrees(kicks):
            return Finding("training_step", "ok", f"trains at {coarse * 1000:g} ms physics "
                           f"(training_overrides): {found}")
        return Finding("training_step", "info", f"trains at {coarse * 1000:g} ms physics "
                       f"(training_overrides), where the robot moves otherwise than at the model's "
                       f"{fine * 1000:g} ms: {found}; a policy trained there meets another robot "
                       "in sim2sim: take task.physics_dt and task.decimation out of "
                       "training_overrides")
    if agrees(kicks):
        return Finding("training_step", "info", f"trains at the model's {fine * 1000:g} ms; at "
                       f"{coarse * 1000:g} ms it moves the same ({found}): training_overrides="
                       f"{training_overrides(coarse)!r} would train faster (docs/robots.md)")
    return Finding("training_step", "info", f"trains at the model's {fine * 1000:g} ms, as it "
                   f"should: {found}")


def _one_foot(model, spec, ix, key) -> Finding | None:
    """What the servos give with one foot carrying the robot (information only): a motion that steps
    or balances on one foot asks this of them, and what they give the policy has to hold."""
    feet = ix.feet_body_ids.tolist()
    if len(feet) < 2:
        return None
    data = _stand_data(model, key)
    joints = list(ix.joint_ids)
    stiffness = np.asarray(spec.stiffness, dtype=float)
    torque = np.max([standing_torques(model, data, joints, ix.root_body_id, [foot])
                     for foot in feet], axis=0)
    sag = torque / stiffness
    soft = [k for k in np.argsort(-sag, kind="stable") if sag[k] > MAX_SAG]
    if not soft:
        return Finding("one_foot", "info",
                       f"on one foot (either foot carrying the robot in the standing pose) no "
                       f"servo gives more than {MAX_SAG:g} rad (most: "
                       f"{spec.joint_names[int(np.argmax(sag))]}, {sag.max():.3f} rad)")
    listed = ", ".join(f"{spec.joint_names[k]} {sag[k]:.2f} rad ({torque[k]:.1f} N·m at kp "
                       f"{stiffness[k]:.0f}; kp {torque[k] / MAX_SAG:.0f} holds it within "
                       f"{MAX_SAG:g})" for k in soft[:3]) + (" …" if len(soft) > 3 else "")
    return Finding("one_foot", "info",
                   f"on one foot (either foot carrying the robot in the standing pose) "
                   f"{len(soft)} servo(s) give more than {MAX_SAG:g} rad: {listed}; a motion that "
                   "steps or stands on one foot needs the policy to hold this (more training; "
                   "primebot motion pd-replay shows the sag on a motion), training with "
                   "--set task.actions.offset=servo_target (each target offset by what its servo "
                   "gives on the motion), or stiffer servos where the motors allow "
                   '(docs/robots.md, "Gains")')


def _timestep(model) -> Finding:
    step = float(model.opt.timestep)
    if abs(step - PHYSICS_TIMESTEP) < 1e-9:
        return Finding("timestep", "ok",
                       f"{step:g} s: 4 physics steps per {TRAINING_FPS:g} Hz control step")
    substeps = 1.0 / TRAINING_FPS / step
    alternative = (f", or keep it and train with --set task.decimation={round(substeps)}"
                   if abs(substeps - round(substeps)) < 1e-6 else "")
    return Finding(
        "timestep", "error",
        f"timestep {step:g} s: with the tasks' 4 substeps the policy would run at "
        f"{1 / (4 * step):g} Hz, "
        f"but motions are {TRAINING_FPS:g} fps (the export refuses the mismatch)",
        f'set <option timestep="{PHYSICS_TIMESTEP:g}"/> in the MJCF (robots new does){alternative}',
    )


def _joint_limits(model, spec) -> Finding:
    """Every policy joint has a range: motion authoring and validation and the tracking task's soft
    joint limits read it, and an unlimited hinge's range is [0, 0]."""
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in spec.joint_names]
    free = [n for n, j in zip(spec.joint_names, ids, strict=True)
            if j >= 0 and not model.jnt_limited[j]]
    if not free:
        return Finding("limits", "ok", "every policy joint has a range")
    return Finding("limits", "error",
                   f"{len(free)} policy joint(s) without a range: {', '.join(free[:6])}"
                   + (" …" if len(free) > 6 else ""),
                   'give each a range (<joint range="-3.14 3.14" limited="true"/>; `primebot '
                   'robots new` gives ±π)')


def _camera(model) -> Finding:
    cam = CameraConfig().framed(model)
    return Finding("camera", "info", f"videos: a camera {cam.distance:.2f} m away looking at "
                   f"{cam.height:.2f} m (framed from the robot's height)")


def check_robot(spec: RobotSpec, *, simulate: bool = True) -> list[Finding]:
    """Every check of ``spec`` and its model, in order; never raises for a model problem."""
    findings = [Finding(
        "spec", "ok",
        f"{spec.num_joints} joints; {', '.join(PER_JOINT_FIELDS)} have one value per joint",
    )]
    try:
        model = compile_mjcf(spec.mjcf, spec.name)
    except RobotError as exc:
        return [*findings, Finding("model", "error", str(exc).split("\n  fix:")[0], exc.fix or "")]
    findings.append(Finding("model", "ok", f"{spec.mjcf} compiles: {model.nbody - 1} bodies, "
                            f"{model.njnt} joints, {model.nu} actuators, {model.ngeom} geoms"))
    findings.append(_timestep(model))
    findings.append(_joint_limits(model, spec))
    problems = robot_problems(model, spec)
    for check in MODEL_CHECKS:
        mine = [p for p in problems if p.check == check]
        if not mine:
            detail = OK_DETAIL[check]
            if check == "armature" and "armature" not in spec.extra:
                detail = "no extra['armature']: the MJCF's joint armature is simulated as it is"
            findings.append(Finding(check, "ok", detail))
        findings += [Finding(check, "error", str(p), p.fix) for p in mine]
    if any(p.check == "names" for p in problems):
        return findings  # the rest needs the spec's joints and bodies in the model
    ix = robot_indices(model, spec, check=False)
    key = stand_key(model, spec)
    if not any(p.check == "floor" for p in problems):
        findings += _floor_and_height(model, spec, ix, key)
    if simulate and not any(p.check in ("floor", "actuators") for p in problems):
        findings.append(_standing_under_pd(model, spec, ix, key))
        findings.append(_training_step(model, spec, ix, key))
    one_foot = None if any(p.check == "floor" for p in problems) else _one_foot(model, spec, ix,
                                                                                 key)
    if one_foot is not None:
        findings.append(one_foot)
    findings.append(_mirror(model, spec, ix))
    findings.append(_camera(model))
    return findings


def _mirror(model, spec: RobotSpec, indices) -> Finding:
    """Whether training can learn from mirror images (``ppo.symmetry``, robot/mirror.py)."""
    try:
        mirror = joint_mirror(model, indices, spec.joint_names, spec.default_joint_pos)
    except RobotError as exc:
        return Finding("mirror", "info",
                       f"not left-right symmetric, so no ppo.symmetry: {str(exc).splitlines()[0]}")
    pairs = int((mirror.source != np.arange(len(mirror.source))).sum()) // 2
    return Finding("mirror", "info", f"left-right symmetric from its geometry: {pairs} joint "
                   f"pairs, {len(mirror.source) - 2 * pairs} on the plane; ppo.symmetry can "
                   "train it (docs/training.md)")


def require_passing(spec: RobotSpec, findings: list[Finding]) -> None:
    """Raise ``RobotError`` when any finding is an error."""
    failed = list(dict.fromkeys(f.check for f in findings if f.status == "error"))
    if failed:
        raise RobotError(
            f"robot {spec.name!r} fails {len(failed)} check(s): {', '.join(failed)}",
            fix="apply each fix above, then run `primebot robots check` again (docs/robots.md)",
        )


def findings_json(findings: list[Finding]) -> list[dict]:
    return [asdict(f) for f in findings]
