"""The walk task's MDP as pure, vectorised numpy functions over N environments.

Observation (14, policy order; seed 000's layout):

    [0]      torso pitch, rad (> 0: leaning forward)
    [1]      torso pitch rate, rad/s
    [2:6]    joint angles minus the standing pose, rad (left hip, right hip, left knee, right knee)
    [6:10]   joint velocities, rad/s (same order)
    [10:14]  previous action, in [-1, 1] (same order)

The torso tilt is given as pitch and pitch rate rather than sin/cos of
pitch: the walker never turns over (it terminates at ``max_pitch``), so the
angle is unambiguous, and the rate is the only torso velocity the policy
sees. The critic additionally sees the forward and vertical torso velocity
and the torso height (privileged, 3 more values).

Reward per step, before ``dt``:

    forward_weight · v_fwd                  v_fwd = v·d, signed: backward is a penalty
  − sideways_weight · |v_side|              v_side = v·d⊥
  + alive_bonus
  − posture_weight · pitch²

each a registered reward term (``REWARD_TERMS``: ``velocity``, ``alive``,
``posture``) that the core's ``RewardManager`` weights and multiplies by
the control period ``dt`` (so a return is in metres and
seconds, independent of the control rate). ``v`` is the torso's average
horizontal velocity over the control period (displacement / dt), ``d`` the
unit walking direction in the ground plane. The planar biped cannot move
sideways, so ``v_side`` is always 0 for it; the term is kept so that the
same reward is correct for a 3D robot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from primebot.pipeline.api import Registry, RewardManager, RewardTerm

OBSERVATION_NAMES: tuple[str, ...] = (
    "torso_pitch",
    "torso_pitch_rate",
    "left_hip_pos",
    "right_hip_pos",
    "left_knee_pos",
    "right_knee_pos",
    "left_hip_vel",
    "right_hip_vel",
    "left_knee_vel",
    "right_knee_vel",
    "left_hip_last_action",
    "right_hip_last_action",
    "left_knee_last_action",
    "right_knee_last_action",
)
NUM_OBS = len(OBSERVATION_NAMES)
CRITIC_EXTRA_NAMES: tuple[str, ...] = ("torso_forward_velocity", "torso_vertical_velocity",
                                       "torso_height")
NUM_CRITIC_OBS = NUM_OBS + len(CRITIC_EXTRA_NAMES)


def policy_observation(
    pitch: np.ndarray,
    pitch_rate: np.ndarray,
    joint_pos: np.ndarray,
    joint_vel: np.ndarray,
    last_action: np.ndarray,
    default_joint_pos: np.ndarray,
) -> np.ndarray:
    """The 14-dim observation [N, 14] float32 from pitch [N], rate [N], joints [N, 4] and last
    action [N, 4]."""
    return np.concatenate(
        [pitch[:, None], pitch_rate[:, None], joint_pos - default_joint_pos, joint_vel,
         last_action],
        axis=1,
        dtype=np.float32,
    )


def critic_observation(
    obs: np.ndarray, forward_velocity: np.ndarray, vertical_velocity: np.ndarray, height: np.ndarray
) -> np.ndarray:
    """The critic's [N, 17] observation: the policy's plus torso forward/vertical velocity and
    height."""
    extra = np.stack([forward_velocity, vertical_velocity, height], axis=1)
    return np.concatenate([obs, extra], axis=1, dtype=np.float32)


def split_velocity(velocity_xy: np.ndarray,
                   direction_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, sideways) components [N] of ground-plane velocities [N, 2] along unit
    ``direction_xy``.

    Sideways is positive to the left of the walking direction.
    """
    d = np.asarray(direction_xy, dtype=np.float64)
    d = d / np.linalg.norm(d)
    left = np.array([-d[1], d[0]])
    return velocity_xy @ d, velocity_xy @ left


def velocity_reward(
    forward: np.ndarray, sideways: np.ndarray, forward_weight: float, sideways_weight: float
) -> np.ndarray:
    """Signed progress along the walking direction minus any sideways drift (per second)."""
    return forward_weight * forward - sideways_weight * np.abs(sideways)


def posture_penalty(pitch: np.ndarray) -> np.ndarray:
    """Squared torso pitch, rad² (upright is 0)."""
    return np.square(pitch)


@dataclass
class WalkState:
    """What the walk reward terms read, one value per env (the ``state`` a ``RewardManager`` hands
    them)."""

    forward: np.ndarray
    """Torso velocity along the walking direction, m/s (averaged over the control period)."""
    sideways: np.ndarray
    """Torso velocity across the walking direction, m/s (positive to the left)."""
    pitch: np.ndarray
    """Torso pitch, rad."""
    alive: np.ndarray
    """bool: the env did not fall in this step."""


def velocity(state: WalkState, forward_weight: float = 2.0,
             sideways_weight: float = 2.0) -> np.ndarray:
    """Reward term ``velocity``: ``velocity_reward`` of the state (weight 1; the weights are its
    params)."""
    return velocity_reward(state.forward, state.sideways, forward_weight, sideways_weight)


def alive(state: WalkState) -> np.ndarray:
    """Reward term ``alive``: 1 for an env still standing, else 0 (weight: ``alive_bonus``)."""
    return state.alive.astype(np.float64)


def posture(state: WalkState) -> np.ndarray:
    """Reward term ``posture``: squared torso pitch (weight: ``-posture_weight``)."""
    return posture_penalty(state.pitch)


REWARD_TERMS = (
    RewardTerm("velocity", velocity, "walk: forward_weight·v_fwd − sideways_weight·|v_side|",
               {"forward_weight": 2.0, "sideways_weight": 2.0}),
    RewardTerm("alive", alive, "walk: 1 while the walker has not fallen"),
    RewardTerm("posture", posture, "walk: squared torso pitch (rad²)"),
)
"""The walk task's reward terms, registered by the walk plugin (``register_reward_terms``)."""


def reward_config(
    *, forward_weight: float, sideways_weight: float, alive_bonus: float, posture_weight: float
) -> dict[str, Any]:
    """The ``rewards`` config (term → weight, params) the walk settings stand for."""
    return {
        "velocity": {"weight": 1.0,
                     "params": {"forward_weight": forward_weight,
                                "sideways_weight": sideways_weight}},
        "alive": {"weight": alive_bonus},
        "posture": {"weight": -posture_weight},
    }  # fmt: skip


def reward_manager(
    weights: Mapping[str, float], *, dt: float, num_envs: int, registry: Registry | None = None
) -> RewardManager:
    """A ``RewardManager`` over the walk terms with ``weights`` (the four ``reward_config``
    settings).

    The terms are looked up in ``registry`` (where the walk plugin registered
    them); without one, in a registry holding only ``REWARD_TERMS``.
    """
    if registry is None:
        registry = Registry()
        registry.declare("reward_terms")
        for term in REWARD_TERMS:
            registry.add("reward_terms", term.name, term, "tasks.walk")
    config = reward_config(**{key: float(weights[key]) for key in REWARD_WEIGHT_KEYS})
    return RewardManager.from_config(config, registry, dt, num_envs)


REWARD_WEIGHT_KEYS = ("forward_weight", "sideways_weight", "alive_bonus", "posture_weight")
"""The task settings that weight the reward terms."""


def step_reward(
    forward: np.ndarray,
    sideways: np.ndarray,
    pitch: np.ndarray,
    alive: np.ndarray,
    *,
    dt: float,
    forward_weight: float,
    sideways_weight: float,
    alive_bonus: float,
    posture_weight: float,
) -> dict[str, np.ndarray]:
    """Each reward term of one step, weighted and times ``dt`` (sum them for the reward).

    ``alive`` [N] bool: the alive bonus is paid only to envs that did not fall
    in this step, so falling early always costs the bonus of the rest of the episode.
    """
    weights = {"forward_weight": forward_weight, "sideways_weight": sideways_weight,
               "alive_bonus": alive_bonus, "posture_weight": posture_weight}  # fmt: skip
    manager = reward_manager(weights, dt=dt, num_envs=len(forward))
    manager.compute(WalkState(forward, sideways, pitch, np.asarray(alive, dtype=bool)))
    return {name: value.copy() for name, value in manager.step_values.items()}


def has_fallen(height: np.ndarray, pitch: np.ndarray, min_height: float,
               max_pitch: float) -> np.ndarray:
    """bool [N]: the torso dropped below ``min_height`` m or tilted more than ``max_pitch`` rad."""
    return (height < min_height) | (np.abs(pitch) > max_pitch)


def walking_return(
    speed: float, *, episode_length: int, dt: float, forward_weight: float, alive_bonus: float
) -> float:
    """The return of an episode walked upright at a constant ``speed`` (m/s) straight ahead to the
    time limit.

    Upright means zero pitch, so the posture penalty is 0; a real gait pays
    some, and so has to walk a little faster than ``speed`` to reach it.
    """
    return episode_length * dt * (alive_bonus + forward_weight * speed)


def actions_to_targets(
    actions: np.ndarray, default_joint_pos: np.ndarray, action_scale: np.ndarray,
    joint_range: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(clipped actions [N, J], joint targets [N, J] rad) for raw policy actions [N, J].

    Actions are clipped to [-1, 1], scaled around the standing pose, then the
    targets are clipped to the joint range ``joint_range`` [J, 2].
    """
    clipped = np.clip(actions, -1.0, 1.0)
    targets = np.clip(default_joint_pos + action_scale * clipped, joint_range[:, 0],
                      joint_range[:, 1])
    return clipped, targets
