"""The tracking environment: N humanoids imitating a reference motion on ``BatchSim``.

It runs what ``task.py`` declares; ``step`` reads as its parts, each a method
below: the actions become joint targets, the physics steps, the reference
advances, the terminations and rewards are computed, finished episodes start
again, and the observations are built. Everything after the physics is
vectorised numpy over all envs.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from primebot.pipeline.api import (
    ACTION_OFFSET_DEFAULT,
    ACTION_OFFSET_REFERENCE,
    ACTION_OFFSET_SERVO_TARGET,
    STAGE_NONE,
    STAGE_VEL,
    BatchSim,
    ConfigError,
    Motion,
    ObservationGroup,
    ObservationSlot,
    Registry,
    RewardManager,
    RobotSpec,
    StepResult,
    TerminationManager,
    VecEnv,
    appended_noise,
    appended_slots,
    joint_mirror,
    motion_torques,
    quat_apply_inverse,
    quat_from_euler_xyz,
    quat_mul,
    servo_feedforward,
    with_history,
)

from .curriculum import RandomizationCurriculum
from .env_checkpoint import EnvCheckpoint, seeded_rngs
from .episode_window import EpisodeWindow
from .model import build_tracking_model
from .randomization import (
    ActuationRandomization,
    PhysicsRandomization,
    Pusher,
    calm_envs,
    reset_noise_ranges,
)
from .reference import MotionReference
from .sampler import StartFrameSampler
from .state import TrackingState

log = logging.getLogger(__name__)

MOTION_DT = 0.02
"""s: the motion files' frame period (50 fps, docs/architecture.md §2), the control period a
changed ``physics_dt`` is checked against."""

STAGES = ("actions", "physics", "state", "terminations", "rewards", "reset", "observations")
"""Parts of ``step`` timed in ``TrackingEnv.timings`` (seconds, cumulative; tools/bench_sim.py reads
them)."""


def timed(stage: str) -> Callable:
    """Adds the method's wall time to ``self.timings[stage]``."""
    def wrap(method: Callable) -> Callable:
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                self.timings[stage] += time.perf_counter() - start
        return run
    return wrap

_OFFSETS = {"reference": ACTION_OFFSET_REFERENCE, "default": ACTION_OFFSET_DEFAULT,
            "servo_target": ACTION_OFFSET_SERVO_TARGET}


def action_parameterisation(actions: Mapping[str, Any]) -> tuple[str, float]:
    """``(offset, factor on the robot's action_scale)`` from the task's ``actions`` config
    (``offset``, ``scale``; the task's ``setting_choices`` checked the offset)."""
    offset = str(actions.get("offset", "default"))
    scale = float(actions.get("scale", 1.0))
    if not (np.isfinite(scale) and scale > 0):
        raise ConfigError(f"task.actions.scale must be a positive number, got {scale!r}",
                          fix="--set task.actions.scale=1.0")
    return _OFFSETS[offset], scale


class TrackingEnv(EnvCheckpoint, VecEnv):
    """The ``tracking`` task (docs/architecture.md §5). Build it with ``TaskSpec.make_env``; see
    docs/tasks.md."""

    def __init__(
        self,
        robot: RobotSpec,
        motion: Motion,
        num_envs: int,
        config: Mapping[str, Any],
        observations: Mapping[str, Sequence[ObservationSlot]],
        observation_settings: Sequence[str] = ("noise", "noise_scale", "history"),
        *,
        registry: Registry,
        seed: int = 0,
        num_threads: int | None = None,
    ) -> None:
        """``config``: the task's full settings; ``observations``: the ``policy`` and ``critic``
        slots (``observation_settings`` are the keys of ``config["observations"]`` that are not
        appended terms)."""
        cfg = config
        self.robot, self.config, self.seed = robot, config, int(seed)
        self.num_envs = int(num_envs)
        self._build_physics(cfg, num_threads)
        self.reference = MotionReference(motion, robot, self.model_info, self.step_dt)
        self.rngs = seeded_rngs(self.seed)
        self._build_randomization(cfg["randomization"])

        self.state = TrackingState(self.sim, self.model_info, self.reference,
                                   robot.default_joint_pos)
        self.rewards = RewardManager.from_config(cfg["rewards"], registry, self.step_dt,
                                                 self.num_envs)
        self.terminations = TerminationManager(cfg["terminations"], registry)
        self.termination_thresholds = dict(cfg["terminations"])
        self._build_observations(observations, observation_settings, cfg["observations"], registry)
        self.sampler = StartFrameSampler(
            self.reference.num_steps, self.step_dt, cfg["sampling"], self.rngs["sampler"]
        )
        self._last_slot_from_start = bool(cfg["sampling"].get("last_slot_from_start", False))
        """The last env starts every episode at frame 0 (a verdict check's first-frame episode)."""

        self.num_actions = robot.num_joints
        self.max_episode_length = int(round(float(cfg["episode_length_s"]) / self.step_dt))
        self.episode_length = np.zeros(self.num_envs, np.int64)
        self.time_steps = self.state.time_steps
        """[N] reference step each env is at (the ONNX ``time_step`` input)."""
        self._build_actions(cfg)
        self._qpos_template = np.array(self.model_info.model.qpos0, dtype=np.float64)
        self._window = EpisodeWindow([*self.rewards.names, "length"], self.num_envs)
        self.timings = dict.fromkeys(STAGES, 0.0)
        self._restored = False
        if cfg.get("log_reward_terms", True):
            log.info(self.rewards.table())

    def _build_physics(self, cfg: Mapping[str, Any], num_threads: int | None) -> None:
        self.model_info = tm = build_tracking_model(self.robot,
                                                    float(cfg["soft_joint_limit_factor"]),
                                                    cfg.get("physics_dt"))
        fresh = bool(cfg["fresh_kinematics"])
        self.sim = BatchSim(
            tm.model,
            self.num_envs,
            num_threads=num_threads,
            decimation=int(cfg["decimation"]),
            observe_stage=STAGE_VEL if fresh else STAGE_NONE,
            # fresh kinematics are free in a persistent batch; otherwise cache wins
            persistent=fresh,
        )
        self.step_dt = self.sim.control_dt
        if abs(self.step_dt - MOTION_DT) > 1e-9:
            log.warning("physics step %g s with decimation %d: the policy acts every %g s, not "
                        "every %g s (the motions' 50 fps); set task.decimation=%d for that",
                        self.sim.physics_dt, self.sim.decimation, self.step_dt, MOTION_DT,
                        max(1, round(MOTION_DT / self.sim.physics_dt)))

    def _build_randomization(self, rand: Mapping[str, Any]) -> None:
        tm, num_envs = self.model_info, self.num_envs
        self.randomize = bool(rand["enabled"])
        # L, the length every range is sized by (docs/tasks.md, "Randomisation")
        highest_root = float(self.reference.root_pos_w[:, 2].max())
        calm = calm_envs(rand, num_envs) if self.randomize else np.zeros(num_envs, bool)
        self._randomized = (~calm).astype(np.float64)
        """[N] 1 for an env that trains randomised, 0 for a calm one (``calm_envs``)."""
        self.physics_randomization = (
            PhysicsRandomization(self.sim, tm, rand, self.rngs["physics"], highest_root, calm)
            if self.randomize else None
        )
        self.pusher = (
            Pusher(self.sim, tm, rand["push"], self.rngs["push"], highest_root, calm)
            if self.randomize and rand.get("push")
            else None
        )
        self.actuation = (
            ActuationRandomization(num_envs, self.robot.num_joints, rand, self.rngs["physics"],
                                   calm)
            if self.randomize else None
        )
        """Action delay and encoder bias (None without randomisation)."""
        curriculum = (
            RandomizationCurriculum(rand.get("curriculum"), window=num_envs)
            if self.randomize
            else None
        )
        self.curriculum = curriculum if curriculum is not None and curriculum.enabled else None
        """The randomisation curriculum when one runs, else None (full strength throughout)."""
        if self.randomize:
            # reset-noise ranges, parsed once rather than at every reset
            self._reset_pose_range, self._reset_velocity_range = reset_noise_ranges(rand,
                                                                                 highest_root)
            self._reset_joint_range = rand["reset_joint_pos"]
            if self.curriculum is not None:
                self._apply_strength()

    def _build_observations(self, groups: Mapping[str, Sequence[ObservationSlot]],
                            settings: Sequence[str],
                            obs_cfg: Mapping[str, Any], registry: Registry) -> None:
        added = appended_slots(obs_cfg, tuple(groups), settings)
        noise = ({**obs_cfg["noise_scale"], **appended_noise(obs_cfg, settings)}
                 if obs_cfg["noise"] else None)
        self.policy_observations = ObservationGroup(
            with_history([*groups["policy"], *added["policy"]], obs_cfg.get("history")), registry,
            self.state, self.num_envs, noise, self.rngs["noise"]
        )
        self.critic_observations = ObservationGroup(
            [*groups["critic"], *added["critic"]], registry, self.state, self.num_envs
        )
        self.num_obs = self.policy_observations.layout.size
        self.num_critic_obs = self.critic_observations.layout.size
        self.observation_terms = self.policy_observations.layout.terms
        """Policy observation slots in order, ``(name, size)`` (ONNX metadata)."""
        self.observation_history = self.policy_observations.history_lengths
        """Per policy slot, the steps of its values it holds (0: the current alone)."""
        self.observation_names = self.policy_observations.layout.names

    def _build_actions(self, cfg: Mapping[str, Any]) -> None:
        self._default_joint_pos = np.asarray(self.robot.default_joint_pos, dtype=np.float64)
        self.action_offset, self.action_scale_factor = action_parameterisation(cfg.get("actions")
                                                                               or {})
        self.action_scale = self.action_scale_factor * np.asarray(self.robot.action_scale,
                                                                  dtype=np.float64)
        """What an action means (ONNX metadata ``action_offset``, ``action_scale``): the joint
        target is ``offset + action_scale * action``, the offset the reference's joint positions
        at the observed step (``reference_joint_pos``), those plus each servo's feedforward
        (``reference_servo_target``) or the default pose (``default_joint_pos``)."""
        self.servo_target = (self._servo_target()
                             if self.action_offset == ACTION_OFFSET_SERVO_TARGET else None)
        """[T, J] the servo targets of a zero action at each reference step (``servo_target``
        offset; the ONNX's ``servo_target`` output), else None."""
        act = self.model_info.indices.actuator_ids
        self._ctrl_cols = (
            slice(int(act[0]), int(act[0]) + len(act))
            if np.array_equal(act, np.arange(act[0], act[0] + len(act)))
            else act
        )

    # -- VecEnv -------------------------------------------------------------------
    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Start a new episode in every env; return (obs [N, O], critic_obs [N, P]) float32.

        Right after ``load_state_dict`` this returns the restored episodes'
        observations instead, so that ``load_state_dict(s); reset()`` resumes
        a run bit for bit.
        """
        if self._restored:
            self._restored = False
            return self.policy_observations.buffer.copy(), self.critic_observations.buffer.copy()
        self._reset_envs(np.arange(self.num_envs))
        self.state.update()
        obs, critic = self._observe()
        return obs.copy(), critic.copy()

    def step(self, actions: np.ndarray) -> StepResult:
        """Apply ``actions`` [N, J] (policy order, unscaled) for one control period (``step_dt`` s).

        Returns a ``StepResult`` with obs [N, 5J+9] and critic_obs [N, P]
        float32 (already the next episode's for envs that finished), reward [N]
        float32 (weights·dt applied), terminated [N] bool (failure or physics
        fault: no bootstrap), truncated [N] bool (time-out or end of the
        motion: bootstrap), and ``info`` scalars: ``episode/<term>`` and
        ``episode/length`` (means over the last N finished episodes),
        ``episode/finished``, ``terminations/<reason>`` (counts this step),
        ``physics_faults`` and ``sampler/*``.
        """
        self._restored = False
        self._apply_actions(actions)
        faults = self._simulate()
        self._advance_reference()
        failed, terminated, truncated = self._check_terminations(faults)
        reward = self._compute_rewards(faults)
        info = self._start_finished_episodes(failed, terminated, truncated, faults)
        obs, critic = self._observe()
        return StepResult(obs.copy(), critic.copy(), reward, terminated, truncated, info)

    @timed("actions")
    def _apply_actions(self, actions: np.ndarray) -> None:
        """The actions to joint targets (offset + scale·action) in ``ctrl``, through the servo
        model; pushes."""
        state = self.state
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.num_actions):
            raise ValueError(
                f"actions must have shape ({self.num_envs}, {self.num_actions}), got "
                f"{actions.shape}"
            )
        state.prev_action[:] = state.action
        state.action[:] = actions
        # a non-finite action must never reach ctrl (MuJoCo would zero it silently)
        np.nan_to_num(state.action, copy=False, nan=0.0, posinf=0.0, neginf=0.0)
        targets = self._action_origin(self.time_steps) + self.action_scale * state.action
        self.sim.ctrl[:, self._ctrl_cols] = (
            targets if self.actuation is None else self.actuation.servos(targets)
        )
        if self.pusher is not None:
            self.pusher.step()

    @timed("physics")
    def _simulate(self) -> np.ndarray:
        """``decimation`` physics substeps; returns the envs whose physics failed (bool [N])."""
        return self.sim.step()

    @timed("state")
    def _advance_reference(self) -> None:
        """Every env one step further along its reference (held at the last frame); the state
        refreshed."""
        self.episode_length += 1
        np.minimum(self.time_steps + 1, self.reference.num_steps - 1, out=self.time_steps)
        self.state.update()

    @timed("terminations")
    def _check_terminations(
            self, faults: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """(each failure check's mask, terminated, truncated); failures teach the start-frame
        sampler."""
        failed = self.terminations.compute(self.state)
        terminated = faults.copy()
        for mask in failed.values():
            terminated |= mask
        truncated = (
            (self.episode_length >= self.max_episode_length)
            | (self.time_steps >= self.reference.num_steps - 1)
        ) & ~terminated
        if self.sampler.per_visit:  # nothing to count otherwise: keep the step as it was
            self.sampler.record_visits(self.time_steps[~faults])
        self.sampler.record_failures(self.time_steps[terminated & ~faults])
        self.sampler.update()
        return failed, terminated, truncated

    @timed("rewards")
    def _compute_rewards(self, faults: np.ndarray) -> np.ndarray:
        """The weighted reward terms (none for an env whose physics failed)."""
        return self.rewards.compute(self.state, valid=~faults if faults.any() else None).copy()

    @timed("reset")
    def _start_finished_episodes(self, failed: Mapping[str, np.ndarray], terminated: np.ndarray,
                                 truncated: np.ndarray, faults: np.ndarray) -> dict[str, Any]:
        """Log the finished episodes, move a fall-driven curriculum, reset those envs; returns
        ``info``."""
        done = np.flatnonzero(terminated | truncated)
        if self.curriculum is not None and self.curriculum.follows_falls and self.curriculum.record(
                done.size, int(terminated.sum())):
            # before the resets below, so the new episodes start at the new strength
            self._apply_strength()
        info: dict[str, Any] = {
            "episode/finished": float(done.size),
            "physics_faults": float(faults.sum()),
        }
        for name, mask in failed.items():
            info[f"terminations/{name}"] = float(mask.sum())
        info["terminations/time_out"] = float(truncated.sum())
        if done.size:
            finished = self.rewards.reset(done)
            finished["length"] = self.episode_length[done].astype(np.float64)
            self._window.add(finished)
            self._reset_envs(done)
            self.state.update(done)
        info.update(self._window.means())
        info.update(self.sampler.metrics())
        if self.curriculum is not None:
            info.update(self.curriculum.metrics())
        return info

    @timed("observations")
    def _observe(self) -> tuple[np.ndarray, np.ndarray]:
        """The policy's and the critic's observations (the policy's with noise while training)."""
        self.state.encoder_bias = self._encoder_bias()
        return self.policy_observations.compute(self.state), self.critic_observations.compute(
            self.state
        )

    def close(self) -> None:
        self.sim.close()

    @property
    def randomization_strength(self) -> float:
        """The factor on every randomisation range: the curriculum's strength, 1 without one."""
        return 1.0 if self.curriculum is None else self.curriculum.strength

    @property
    def curriculum_complete(self) -> bool:
        """True once the randomisation curriculum has reached full strength (always without one)."""
        return self.randomization_strength >= 1.0

    @property
    def curriculum_progress(self) -> float:
        """The randomisation strength (1 without a curriculum)."""
        return float(self.randomization_strength)

    def observe_verdict(self, summary: dict[str, Any]) -> None:
        """Move a verdict-driven curriculum by the check's outcome (``curriculum.signal:
        verdict``)."""
        verdict = summary.get("verdict") or {}
        mpkpe, limit = verdict.get("mpkpe_m"), verdict.get("mpkpe_limit_m")
        share = mpkpe / limit if mpkpe is not None and limit else None
        if self.curriculum is not None and self.curriculum.observe_verdict(
            summary.get("success_rate"), bool(verdict.get("tracked")), share
        ):
            self._apply_strength()

    def mirror(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The policy observation's and the action's mirror images (``VecEnv.mirror``): the joints'
        from the robot's geometry (robot/mirror.py), each observation term's by its kind."""
        info = self.model_info
        joints = joint_mirror(info.model, info.indices, tuple(self.robot.joint_names),
                              self._default_joint_pos)
        scale = np.asarray(self.action_scale, dtype=np.float64)
        if not np.allclose(scale[joints.source], scale, rtol=0.02):
            j = int(np.argmax(np.abs(scale[joints.source] - scale)))
            raise ConfigError(f"the action scale of {self.robot.joint_names[j]} differs from its "
                              "mirror partner's: the servos are not left-right symmetric",
                              fix="train without ppo.symmetry")
        obs = self.policy_observations.mirror(joints.source, joints.sign)
        return obs, (joints.source, joints.sign)

    def _encoder_bias(self) -> np.ndarray | None:
        """What the joint encoders add to every reading the policy gets [N, J] (None: nothing)."""
        return (
            None if self.actuation is None or not self.actuation.bias.any() else self.actuation.bias
        )

    def _servo_target(self) -> np.ndarray:
        """The reference's joint positions plus each servo's feedforward: the offset that makes a
        servo push the motion's torque while its joint is on the reference (inverse dynamics of the
        reference on the training model; docs/tasks.md, "Actions")."""
        ref = self.reference
        torques = motion_torques(self.model_info.model, self.model_info.indices, ref.root_pos_w,
                                 ref.root_quat_w, ref.joint_pos, 1.0 / self.step_dt)
        robot = self.robot
        return ref.joint_pos + servo_feedforward(torques, robot.stiffness, robot.damping,
                                                 robot.effort_limit)

    def _action_origin(self, steps: np.ndarray) -> np.ndarray:
        """The joint targets of a zero action at reference steps ``steps`` [n] → [n, J] (or [J])."""
        if self.action_offset == ACTION_OFFSET_REFERENCE:
            return self.reference.joint_pos[steps]
        if self.action_offset == ACTION_OFFSET_SERVO_TARGET:
            return self.servo_target[steps]
        return self._default_joint_pos

    def _apply_strength(self) -> None:
        """Scale the physics spread and the pushes to the curriculum's strength (reset noise reads
        it itself)."""
        strength = self.randomization_strength
        self.physics_randomization.apply(strength)
        self.actuation.apply(strength)
        if self.pusher is not None:
            self.pusher.strength = strength

    # -- resets -------------------------------------------------------------------
    def _start_steps(self, ids: np.ndarray) -> np.ndarray:
        """Where envs ``ids`` start: as the sampler draws, but frame 0 for the last env with
        ``sampling.last_slot_from_start`` (the others drawn as an env without it draws them)."""
        if not self._last_slot_from_start:
            return self.sampler.sample(ids.size)
        drawn = ids != self.num_envs - 1
        t = np.zeros(ids.size, np.int64)
        t[drawn] = self.sampler.sample(int(np.count_nonzero(drawn)))
        return t

    def _reset_envs(self, ids: np.ndarray) -> None:
        """Reference-state initialisation of envs ``ids`` at sampled start steps (with noise if
        randomising)."""
        n = ids.size
        if n == 0:
            return
        ref, idx, rng = self.reference, self.model_info.indices, self.rngs["reset"]
        t = self._start_steps(ids)
        self.time_steps[ids] = t
        self.episode_length[ids] = 0
        if self.pusher is not None:
            self.pusher.restart(ids)
        self.policy_observations.restart(ids)

        root_pos = ref.root_pos_w[t].copy()
        root_quat = ref.root_quat_w[t].copy()
        lin_vel = ref.root_lin_vel_w[t].copy()
        ang_vel_w = ref.root_ang_vel_w[t].copy()
        joint_pos = ref.joint_pos[t].copy()
        if self.randomize:
            strength = self.randomization_strength * self._randomized[ids][:, None]
            pose = strength * rng.uniform(*self._reset_pose_range, size=(n, 6))
            root_pos += pose[:, :3]
            root_quat = quat_mul(quat_from_euler_xyz(pose[:, 3], pose[:, 4], pose[:, 5]), root_quat)
            vel = strength * rng.uniform(*self._reset_velocity_range, size=(n, 6))
            lin_vel += vel[:, :3]
            ang_vel_w += vel[:, 3:]
            joint_pos += strength * rng.uniform(*self._reset_joint_range, size=joint_pos.shape)
            limits = self.model_info.soft_joint_pos_limits
            np.clip(joint_pos, limits[:, 0], limits[:, 1], out=joint_pos)

        qpos = np.repeat(self._qpos_template[None], n, axis=0)
        qvel = np.zeros((n, self.sim.qvel.shape[1]))
        tm = self.model_info
        qpos[:, tm.root_pos_qpos] = root_pos
        qpos[:, tm.root_quat_qpos] = root_quat
        qpos[:, idx.qpos_adr] = joint_pos
        qvel[:, tm.root_lin_vel_qvel] = lin_vel
        qvel[:, tm.root_ang_vel_qvel] = quat_apply_inverse(root_quat, ang_vel_w)  # body frame
        qvel[:, idx.dof_adr] = ref.joint_vel[t]
        ctrl = np.zeros((n, self.sim.ctrl.shape[1]))
        origin = np.broadcast_to(self._action_origin(t), (n, self.num_actions))
        ctrl[:, self._ctrl_cols] = (
            origin if self.actuation is None else self.actuation.servos.reset(ids, origin)
        )
        self.sim.reset(ids, qpos=qpos, qvel=qvel, ctrl=ctrl)
        self.state.action[ids] = 0.0
        self.state.prev_action[ids] = 0.0
