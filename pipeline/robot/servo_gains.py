"""The servo gains ``robots new`` writes: each joint's natural frequency, and the legs made faster
together until the robot stands under them.

Gains follow mjlab's rule from each joint's reflected inertia (armature): stiffness = armature·ω²,
damping = 2·ζ·armature·ω (ω = 2π·f, ζ = 2), action scale = 0.25·effort/stiffness. Each joint's f
is mjlab's 10 Hz, raised for that joint alone where 10 Hz leaves it softer than 1.5 × the gravity
torque per radian it carries standing (``STANCE_STIFFNESS_SAFETY``), or lets it give more than
``MAX_SAG`` under the torque of standing still; joints in series give more than each alone, so the
copy is then stood in its keyframe under its servos for ``STAND_SECONDS`` and its legs made faster
together while it falls (docs/robots.md, "Gains").
"""

from __future__ import annotations

import math
from typing import Protocol

import mujoco
import numpy as np

from .actuators import set_position_servos
from .checks import STAND_SECONDS
from .scenery import free_name, model_names
from .spec import pd_gains
from .stance import MAX_SAG, holds_pose, standing_torques
from .statics import gravity_stiffness, holds_foot


class ServoGuess(Protocol):
    """What these functions read of ``model_guess.Guess`` (``frequency_hz`` is also written)."""

    joint_names: tuple[str, ...]
    armature: dict[str, float]
    effort: dict[str, float]
    frequency_hz: dict[str, float]
    default_pose: dict[str, float]
    feet: tuple[str, ...]
    root_body: str
    anchor_body: str


NATURAL_FREQUENCY_HZ = 10.0
"""mjlab's natural frequency of the joint servos: the scaffold's lowest."""
STANCE_STIFFNESS_SAFETY = 1.5
"""Every joint's stiffness at least this × its gravity stiffness standing
(``gravity_stiffness``)."""
FREQUENCY_STEP_HZ = 0.5
LEG_RAISE = 1.1
"""Each try multiplies the legs' servo frequencies by this while the robot falls ..."""
MAX_LEG_RAISE = 2.0
"""... up to this factor (4 × the stiffness)."""
DAMPING_RATIO = 2.0
ACTION_SCALE_EFFORT_FRACTION = 0.25


def joint_frequencies(model, data, joints, names, root, feet,
                      armature) -> tuple[dict[str, float], str]:
    """Each joint's servo frequency: mjlab's 10 Hz, or the lowest (in ``FREQUENCY_STEP_HZ``) at
    which it is ``STANCE_STIFFNESS_SAFETY`` × as stiff as gravity's pull on what it carries and
    gives at most ``MAX_SAG`` under gravity's torque standing (stiffness grows as f²); and the note
    saying which joints were raised."""
    kp_10 = np.array([armature[n] for n in names]) * (2 * math.pi * NATURAL_FREQUENCY_HZ) ** 2
    needed = np.maximum(STANCE_STIFFNESS_SAFETY * gravity_stiffness(model, data, joints, root,
                                                                    feet),
                        standing_torques(model, data, joints, root, feet) / MAX_SAG) / kp_10
    hz = NATURAL_FREQUENCY_HZ * np.sqrt(np.maximum(1.0, needed))
    hz = np.array([_step_up(f) for f in hz])
    raised = [k for k in np.argsort(-hz, kind="stable") if hz[k] > NATURAL_FREQUENCY_HZ]
    if raised:
        listed = ", ".join(f"{names[k]!r} {hz[k]:g} Hz" for k in raised[:4]) + (
            " …" if len(raised) > 4 else ""
        )
        note = (f"mjlab's 10 Hz, raised on {len(raised)} joint(s) that 10 Hz would leave softer "
                "than "
                f"{STANCE_STIFFNESS_SAFETY:g} × the gravity torque per radian they carry standing, "
                "or sagging more "
                f"than {MAX_SAG:g} rad under it ({listed}): below that the robot folds over under "
                "its servos; "
                "lower them only if your motors cannot hold these gains")
    else:
        note = (f"mjlab's 10 Hz: every servo is ≥ {STANCE_STIFFNESS_SAFETY:g} × its gravity "
                "stiffness and sags "
                f"< {MAX_SAG:g} rad standing")
    return {n: float(f) for n, f in zip(names, hz, strict=True)}, note


def gains(guess: ServoGuess) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(armature, stiffness, damping, effort) in joint order, by mjlab's rule at each joint's
    frequency."""
    armature = np.array([guess.armature[j] for j in guess.joint_names])
    effort = np.array([guess.effort[j] for j in guess.joint_names])
    frequency = np.array([guess.frequency_hz[j] for j in guess.joint_names])
    kp, kd = pd_gains(armature, frequency, DAMPING_RATIO)
    return armature, kp, kd, effort


def set_servo(act, kp: float, kd: float, effort: float) -> None:
    """Make ``act`` the spec's position servo, every attribute set (none left to a default
    class)."""
    act.set_to_position(kp=kp, kv=kd)
    act.gear = [1, 0, 0, 0, 0, 0]
    act.ctrllimited = 0
    act.forcelimited = 1
    act.forcerange = [-effort, effort]
    act.dyntype = mujoco.mjtDyn.mjDYN_NONE
    act.dynprm = [1.0] + [0.0] * (len(act.dynprm) - 1)
    act.actlimited = 0
    act.actearly = False
    act.actdim = -1
    act.armature = 0.0
    act.damping = [0.0, 0.0, 0.0]
    act.delay = 0.0
    act.inheritrange = 0.0


def write_servos(spec: mujoco.MjSpec, model: mujoco.MjModel, guess: ServoGuess) -> list[str]:
    """Give each joint's actuator in ``spec`` the guess's gains (adding one where a joint has
    none); what changed."""
    _, kp, kd, effort = gains(guess)
    changes = []
    by_joint = {a.target: a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    taken = model_names(model)
    for j, name in enumerate(guess.joint_names):
        act = by_joint.get(name)
        if act is None:
            act = spec.add_actuator(name=free_name(taken, name), target=name,
                                    trntype=mujoco.mjtTrn.mjTRN_JOINT)
            changes.append("actuators added")
        elif act.biastype == mujoco.mjtBias.mjBIAS_NONE:
            continue  # a motor: torque control, the gains live in the spec
        else:
            changes.append("actuator gains set")
        set_servo(act, float(kp[j]), float(kd[j]), float(effort[j]))
    return changes


def standing_under_servos(model: mujoco.MjModel, guess: ServoGuess,
                          frequency: dict[str, float] | None = None) -> mujoco.MjData:
    """The compiled copy in its standing keyframe, every joint's actuator made a PD servo of
    ``frequency`` (the guess's by default; motors too, as training drives them) holding the
    standing pose: ``model`` is changed in place."""
    frequency = guess.frequency_hz if frequency is None else frequency
    joints = [model.joint(name).id for name in guess.joint_names]
    actuator = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)
                if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
    ids = np.array([actuator[j] for j in joints])
    armature, _, _, effort = gains(guess)
    kp, kd = pd_gains(armature, np.array([frequency[n] for n in guess.joint_names]), DAMPING_RATIO)
    set_position_servos(model, ids, kp, kd, effort)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    data.ctrl[ids] = [guess.default_pose[n] for n in guess.joint_names]
    mujoco.mj_forward(model, data)
    return data


def stands_under_servos(model: mujoco.MjModel, guess: ServoGuess,
                        frequency: dict[str, float]) -> bool:
    """Whether the compiled copy holds its standing keyframe for ``STAND_SECONDS`` under servos of
    ``frequency``."""
    data = standing_under_servos(model, guess, frequency)
    root = model.body(guess.root_body).id
    return not holds_pose(model, data, STAND_SECONDS, model.body(guess.anchor_body).id, root)[2]


def stiffen_legs(spec: mujoco.MjSpec, guess: ServoGuess) -> str:
    """Raise the legs' servo frequencies together, by ``LEG_RAISE`` a try up to ``MAX_LEG_RAISE``,
    until the copy stands under its servos for ``STAND_SECONDS`` (what ``robots check`` asks), and
    write the gains into ``spec``; what was done (empty when it stood already).

    Each joint's frequency holds that joint alone against what it carries
    (``joint_frequencies``), but joints in series give more together: mjlab's G1, hip, knee and
    ankle each at least 1.5 × their gravity stiffness, leaned forward and fell in 1.6 s until every
    leg servo was 1.33 × faster.
    """
    model = spec.compile()
    legs = _leg_joints(model, guess)
    factor = 1.0
    while not stands_under_servos(model, guess, _raised(guess.frequency_hz, legs, factor)):
        factor = round(factor * LEG_RAISE, 6)
        if factor > MAX_LEG_RAISE:
            return (f"; it falls under these servos within {STAND_SECONDS:g} s even with the legs' "
                    f"{MAX_LEG_RAISE:g} × faster: check its balance and its armature")
    if factor == 1.0:
        return ""
    guess.frequency_hz = _raised(guess.frequency_hz, legs, factor)
    write_servos(spec, model, guess)
    return (f"; the {len(legs)} leg joints then {factor:.2f} × faster together, the least at which "
            f"the robot holds its standing pose {STAND_SECONDS:g} s under its servos (joints in "
            "series give more than each alone)")


def _leg_joints(model: mujoco.MjModel, guess: ServoGuess) -> list[str]:
    """The joints between the root and a foot (a foot hangs below each)."""
    feet = {model.body(name).id for name in guess.feet}
    return [name for name in guess.joint_names if holds_foot(model, model.joint(name).id, feet)]


def _raised(frequency: dict[str, float], joints: list[str], factor: float) -> dict[str, float]:
    """``frequency`` with ``joints``' multiplied by ``factor`` (rounded up to
    ``FREQUENCY_STEP_HZ``)."""
    return {name: _step_up(hz * factor) if name in joints else hz
            for name, hz in frequency.items()}


def _step_up(hz: float) -> float:
    """``hz`` rounded up to a multiple of ``FREQUENCY_STEP_HZ``."""
    return math.ceil(hz / FREQUENCY_STEP_HZ - 1e-9) * FREQUENCY_STEP_HZ
