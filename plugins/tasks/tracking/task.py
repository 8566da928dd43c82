"""The ``tracking`` task, declared in one place (mjlab's BeyondMimic port is the reference).

Read top to bottom: what the policy and the critic see, what the policy is
rewarded for, what ends an episode, where episodes start and how they are
randomised, how a trained policy is played to judge it, and the trainer's
defaults for this task. The functions it names are in this folder:
``observations.py``, ``rewards.py``, ``terminations.py`` (the terms, pure
functions of ``state.TrackingState``), ``sampler.py``, ``randomization.py``,
``curriculum.py``; ``env.py`` runs them. Every setting can be changed with
``--set task.<key>=…`` (``primebot config show`` prints them all);
docs/tasks.md explains each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primebot.pipeline.api import (
    ConfigError,
    Motion,
    ObservationSlot,
    PlaySettings,
    Registry,
    RobotSpec,
    TaskSpec,
    hookimpl,
)

from .env import TrackingEnv
from .evaluation import tracking_view
from .export import export_metadata
from .observations import OBSERVATION_TERMS
from .rewards import REWARD_TERMS
from .terminations import TERMINATION_TERMS

# -- What the policy sees (5·J + 9 values; nothing a robot cannot measure) -------------------------
POLICY_OBSERVATIONS = (
    ObservationSlot("command", "motion_command"),      # 2J  reference joint positions, velocities
    ObservationSlot("motion_anchor_ori_b"),            # 6   reference anchor rotation, anchor frame
    ObservationSlot("base_ang_vel"),                   # 3   the gyro
    ObservationSlot("joint_pos", "joint_pos_sensed"),  # J   less the default pose, as encoders read
    ObservationSlot("joint_vel"),                      # J
    ObservationSlot("actions", "last_action"),         # J
)

# -- What the critic sees (privileged: true values, no noise) --------------------------------------
CRITIC_OBSERVATIONS = (
    ObservationSlot("command", "motion_command"),
    ObservationSlot("motion_anchor_pos_b"),            # 3   reference anchor position, anchor frame
    ObservationSlot("motion_anchor_ori_b"),
    ObservationSlot("body_pos", "body_pos_b"),         # 3K  tracked bodies, anchor frame
    ObservationSlot("body_ori", "body_ori_b"),         # 6K
    ObservationSlot("base_lin_vel"),                   # 3
    ObservationSlot("base_ang_vel"),
    ObservationSlot("joint_pos", "joint_pos_rel"),
    ObservationSlot("joint_vel"),
    ObservationSlot("actions", "last_action"),
)

OBSERVATION_GROUPS = {"policy": POLICY_OBSERVATIONS, "critic": CRITIC_OBSERVATIONS}
OBSERVATION_SETTINGS = ("noise", "noise_scale", "history")
"""The keys of ``observations:`` that are settings; any other key appends a registered term."""

SETTINGS: dict[str, Any] = {
    "decimation": 4,                # physics substeps per control step: 0.005 s x 4 = 50 Hz
    # physics step (s) in training; null: the MJCF's own (q1.xml: 0.005, but q1 trains at 0.01 x 2:
    # its training_overrides). The control period is physics_dt x decimation: 0.01 x 2 keeps 50 Hz
    # with half the physics (docs/tasks.md, "Timing")
    "physics_dt": None,
    # time-out (a truncation); an episode also ends at the motion's last frame
    "episode_length_s": 10.0,
    "soft_joint_limit_factor": 0.9,
    # true: body poses and velocities at the state after each step (about 10% more physics time);
    # false: those of the last substep, 5 ms old
    "fresh_kinematics": False,
    "log_reward_terms": True,       # print the table of active reward terms when the env is built
    # Joint target = offset + scale x robot action_scale x action. offset: reference (the motion's
    # joint positions at the observed step: a zero action follows the motion), servo_target (those
    # plus each servo's feedforward: a zero action pushes the motion's torques, docs/tasks.md) or
    # default (the default pose, mjlab's)
    "actions": {"offset": "reference", "scale": 1.0},
    # What the policy is rewarded for: term: {weight, params}; weights are multiplied by dt (0.02 s)
    "rewards": {
        # mjlab: 0.3 (docs/tasks.md)
        "anchor_pos_error_exp": {"weight": 0.5, "params": {"std": 0.05}},
        "anchor_ori_error_exp": {"weight": 0.5, "params": {"std": 0.4}},
        "body_pos_error_exp": {"weight": 1.0, "params": {"std": 0.3}},
        # the same error, a fine kernel: 1 cm from 2 cm, so pushes are not learnt at the pose's
        # expense (docs/tasks.md, "Training for robustness")
        "body_pos_error_fine_exp": {"term": "body_pos_error_exp", "weight": 1.0,
                                    "params": {"std": 0.02}},
        "body_ori_error_exp": {"weight": 1.0, "params": {"std": 0.4}},
        "body_lin_vel_error_exp": {"weight": 1.0, "params": {"std": 1.0}},
        "body_ang_vel_error_exp": {"weight": 1.0, "params": {"std": 3.14}},
        "action_rate_l2": {"weight": -0.1},
        "joint_pos_limits": {"weight": -10.0},
        "self_collision": {"weight": -10.0},
    },
    # What ends an episode as a failure: term: threshold (null switches it off)
    "terminations": {
        "anchor_height": 0.25,          # m, |z_ref - z| of the anchor body
        "anchor_orientation": 0.8,      # |g_z,ref - g_z|, gravity's z in the anchor frame
        "end_effector_height": 0.25,    # m, any end effector vs the re-anchored reference
    },
    # Uniform noise +-scale on these policy observations while training (the critic gets none)
    "observations": {
        "noise": True,
        "noise_scale": {"motion_anchor_ori_b": 0.05, "base_ang_vel": 0.2, "joint_pos": 0.01,
                        "joint_vel": 0.5},
        # slot: steps of its values the policy sees, the current one last (none: the current
        # alone; docs/tasks.md, "Observation history")
        "history": {},
    },
    # Where new episodes start (sampler.py): adaptive (by per-bin failure rate) | uniform | start
    # (frame 0)
    # (window_s: uniform draws only starts that leave that many seconds of motion; null: any)
    # (per_visit: weigh bins by failures per visit, not failure counts, which favour the last bins)
    # (last_slot_from_start: the last env always starts at frame 0, the others as mode says)
    "sampling": {"mode": "adaptive", "bin_s": 1.0, "kernel_size": 1, "lambda": 0.8,
                 "uniform_ratio": 0.1,
                 "alpha": 0.001, "window_s": None, "per_visit": False,
                 "last_slot_from_start": False},
    "randomization": {
        "enabled": True,            # false: none of the below (exact reference starts, no pushes)
        # One strength in [0, 1] scales every range below (curriculum.py; docs/tasks.md,
        # "Randomisation").
        "curriculum": {
            # the strength training starts at (null: no curriculum, always 1)
            "start": 1.0,
            # what moves it by `step`: each verdict check, or falls (finished episodes)
            "signal": "verdict",
            "step": 0.25,
            # up when the check tracked (or: stays_up, fewer than raise_below fell)
            "raise_on": "tracked",
            "raise_below": 0.3,
            "lower_above": 0.6,     # down when more than this fraction of the episodes fell
            "fall_back_after": 8,   # checks in a row without tracking: down a step (null: never)
            # a check tracked with MPKPE ≤ this share of its limit ends a fall-back's hold
            "release_below": 0.6,
        },
        # a fraction of the envs (the last ones) that train with none of the below at any
        # strength: they keep practising the undisturbed motion the verdict judges
        "calm_envs": 0.0,
        # Every length and speed below is sized to the robot, L being the reference's highest root
        # height (about the leg length): lengths in units of L, linear velocities in sqrt(g L)
        # m/s, angular ones in sqrt(g / L) rad/s; angles in rad. For the q1 (L 0.497 m) the
        # reset noise and centre-of-mass offsets are within 3 % of the metres and m/s they were
        # before being sized (mjlab's values for its G1).
        # added to the reference root pose and velocity (world frame) at reset
        "reset_pose": {"x": [-0.1, 0.1], "y": [-0.1, 0.1], "z": [-0.02, 0.02],
                       "roll": [-0.1, 0.1], "pitch": [-0.1, 0.1], "yaw": [-0.2, 0.2]},
        "reset_velocity": {"x": [-0.23, 0.23], "y": [-0.23, 0.23], "z": [-0.09, 0.09],
                           "roll": [-0.12, 0.12], "pitch": [-0.12, 0.12], "yaw": [-0.18, 0.18]},
        # rad, added to the reference joints (clipped to the soft limits)
        "reset_joint_pos": [-0.1, 0.1],
        "friction": [0.3, 1.2],             # sliding friction per env
        "mass_scale": [0.9, 1.1],           # per robot body, per env (inertia scaled alike)
        # on the anchor body, a fraction of the robot's mass (null: none)
        "payload": [0.0, 0.1],
        # kp, kd and effort limit of every servo times one factor per env
        "motor_strength": [0.8, 1.2],
        "action_delay": [0, 1],             # control steps the joint targets arrive late, per env
        # rad per joint and env: the policy reads q + bias, the servo holds it
        "encoder_bias": [-0.01, 0.01],
        "anchor_com_offset": {"x": [-0.05, 0.05], "y": [-0.1, 0.1], "z": [-0.1, 0.1]},  # L
        # Pushes (null: none), sized to the robot as above; speed: [low, high] of a
        # horizontal kick in a random direction instead of the x and y ranges; once: one push per
        # episode, interval_s after its start (the stress test's way), instead of one every interval
        "push": {
            "interval_s": [1.0, 3.0],
            "velocity": {"x": [-0.3, 0.3], "y": [-0.3, 0.3], "z": [-0.1, 0.1],
                         "roll": [-0.12, 0.12], "pitch": [-0.12, 0.12], "yaw": [-0.18, 0.18]},
            "speed": None,
            "once": False,
        },
    },
}
"""The task's settings (``TaskSpec.default_config``), in the order docs/tasks.md explains them."""

SETTING_CHOICES = {
    "actions.offset": ("reference", "servo_target", "default"),
    "sampling.mode": ("adaptive", "uniform", "stratified", "start"),
    "randomization.curriculum.signal": ("verdict", "falls"),
    "randomization.curriculum.raise_on": ("tracked", "stays_up"),
}

# -- How a trained policy is played to judge it ----------------------------------------------------
_STILL = dict.fromkeys(("x", "y", "z", "roll", "pitch", "yaw"), [0.0, 0.0])
PLAY = PlaySettings(
    # body poses at the current state (as on hardware and in sim2sim), no randomisation, no noise
    evaluation={"randomization": {"enabled": False}, "observations": {"noise": False},
                "log_reward_terms": False, "fresh_kinematics": True},
    from_start={"sampling": {"mode": "start"}},
    spread={"sampling": {"mode": "stratified"}},
    # a verdict check's first-frame episode as one more slot of its spread env
    start_in_last_slot={"sampling": {"last_slot_from_start": True}},
    # the stress test's standard push, as it plays it: 4 s episodes from exact reference starts that
    # leave 4 s of motion, each kicked once, 1-2 s in (the window's second quarter), horizontally
    # by 0.2·√(g·L) in a random direction, and nothing else (docs/tasks.md, "Training for
    # robustness")
    robustness={"episode_length_s": 4.0, "sampling": {"window_s": 4.0}, "randomization": {
        "enabled": True, "curriculum": {"start": None}, "calm_envs": 0.0,
        "reset_pose": _STILL, "reset_velocity": _STILL, "reset_joint_pos": [0.0, 0.0],
        **dict.fromkeys(("friction", "mass_scale", "payload", "motor_strength", "action_delay",
                         "encoder_bias", "anchor_com_offset")),
        "push": {"interval_s": [1.0, 2.0], "velocity": _STILL, "speed": [0.2, 0.2], "once": True},
    }},
    # zero actions replay the reference through the servos, from frame 0, whatever the body does
    open_loop={"actions": {"offset": "reference"}, "sampling": {"mode": "start"},
               "terminations": dict.fromkeys(
                   ("anchor_height", "anchor_orientation", "end_effector_height"))},
    # ... and with each servo's feedforward of the motion's torques (docs/tasks.md, "Actions")
    open_loop_feedforward={"actions": {"offset": "servo_target"}},
)

# -- The trainer's defaults for this task ----------------------------------------------------------
# a small exploration noise around the reference (docs/tasks.md, "When a motion does not track", 1.)
TRAINER_DEFAULTS = {"policy": {"init_noise_std": 0.3}}


def make_tracking_env(
    *,
    robot: RobotSpec,
    motion: Motion | None,
    num_envs: int,
    seed: int = 0,
    config: Mapping[str, Any] | None = None,
    registry: Registry,
    num_threads: int | None = None,
) -> TrackingEnv:
    """Build the tracking env; ``config`` is merged over ``SETTINGS`` (so a full or partial config
    works)."""
    if motion is None:
        raise ConfigError(
            "the tracking task needs a reference motion",
            fix="pass a motion: primebot train MOTION.npz",
        )
    cfg = TRACKING.settings(config)
    return TrackingEnv(robot, motion, num_envs, cfg, OBSERVATION_GROUPS, OBSERVATION_SETTINGS,
                       registry=registry,
                       seed=seed, num_threads=num_threads)


def verdict_probe(registry: Registry, cfg: Any, motion: Motion | None, *, seed: int):
    """The stop rule's probe: the deterministic policy on a few evaluation episodes
    (``VerdictProbe``)."""
    from primebot.pipeline.api import VerdictProbe

    return VerdictProbe.for_run(registry, cfg, motion, seed=seed)


CONFIG_VERSION = 2
"""What the settings above mean (``TaskSpec.config_version``; a resume refuses another): 1, the
first; 2, the reset noise and the anchor's centre-of-mass offsets in units of L (they were metres
and m/s, before they were sized to the robot)."""

TRACKING = TaskSpec(
    name="tracking",
    make_env=make_tracking_env,
    default_config=SETTINGS,
    description="Track a reference motion (mjlab BeyondMimic): 10 reward terms, adaptive start "
                "frames",
    needs_motion=True,
    default_robot="q1",
    open_config_sections=("rewards", "terminations", "observations", "observations.history"),
    # what a motion file's training_overrides may set: its rewards, terminations, randomisation and
    # its curriculum, and whether its zero action carries the servo feedforward of its own torques
    # (docs/motions.md, "Authoring motions from keyframes", the `training` key)
    motion_settings=("rewards", "terminations", "randomization", "actions.offset"),
    verdict_probe=verdict_probe,
    evaluation_view=tracking_view,
    export_metadata=export_metadata,
    play=PLAY,
    trainer_defaults=TRAINER_DEFAULTS,
    setting_choices=SETTING_CHOICES,
    config_version=CONFIG_VERSION,
)


@hookimpl
def register_observation_terms(register) -> None:
    for term in OBSERVATION_TERMS:
        register(term)


@hookimpl
def register_reward_terms(register) -> None:
    for term in REWARD_TERMS:
        register(term)


@hookimpl
def register_termination_terms(register) -> None:
    for term in TERMINATION_TERMS:
        register(term)


@hookimpl
def register_tasks(register) -> None:
    register(TRACKING)
