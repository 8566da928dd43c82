"""The walk environment: N planar bipeds learning to walk forward, on ``BatchSim``.

Each step: clip the actions to [-1, 1], turn them into joint targets around
the standing pose, step the physics ``decimation`` substeps, then compute
observations, rewards and terminations with the pure functions of ``mdp``
over all envs at once, and reset the envs that finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import (
    BatchSim,
    Registry,
    RobotError,
    RobotSpec,
    StepResult,
    VecEnv,
    load_robot_model,
    robot_indices,
)

from . import mdp


class WalkEnv(VecEnv):
    """``num_envs`` walkers; see ``mdp`` for the observation and reward layout."""

    def __init__(
        self,
        robot: RobotSpec,
        num_envs: int,
        config: Mapping[str, Any],
        *,
        seed: int = 0,
        num_threads: int | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.robot = robot
        self.cfg = dict(config)
        root_joints = tuple(robot.extra.get("root_joints", ()))
        if len(root_joints) != 3:
            raise RobotError(
                f"robot {robot.name!r} has no planar base: extra['root_joints'] is {root_joints!r}",
                fix="walk needs a sagittal-plane robot whose base is (slide x, slide z, hinge "
                    "pitch), e.g. biped4",
            )
        # Checks joints, actuators and bodies against the spec and drives the joints with its gains.
        model = load_robot_model(robot)
        ix = robot_indices(model, robot)
        x_joint, z_joint, pitch_joint = (model.joint(name) for name in root_joints)
        self._x_adr, self._z_adr, self._pitch_adr = (int(j.qposadr[0])
                                                     for j in (x_joint, z_joint, pitch_joint))
        self._x_dof, self._z_dof, self._pitch_dof = (int(j.dofadr[0])
                                                     for j in (x_joint, z_joint, pitch_joint))
        self._qpos_adr = ix.qpos_adr
        self._dof_adr = ix.dof_adr
        self._actuators = ix.actuator_ids
        self._joint_range = ix.joint_range
        # rootz slides from the torso's rest position, so height = rest z + qpos.
        self._height_offset = float(model.body_pos[z_joint.bodyid[0], 2])
        key = model.key(robot.extra.get("keyframe", "stand"))
        self._init_qpos = key.qpos.copy()
        self._init_ctrl = key.ctrl.copy()

        self.sim = BatchSim(model, num_envs, num_threads=num_threads,
                            decimation=int(self.cfg["decimation"]))
        self.num_envs = int(num_envs)
        self.num_obs = mdp.NUM_OBS
        self.num_critic_obs = mdp.NUM_CRITIC_OBS
        self.num_actions = robot.num_joints
        self.max_episode_length = int(self.cfg["episode_length"])
        self.step_dt = self.sim.control_dt
        self.observation_names = mdp.OBSERVATION_NAMES
        self._default = np.asarray(robot.default_joint_pos, dtype=np.float64)
        self._scale = np.asarray(robot.action_scale, dtype=np.float64)
        self._direction = np.asarray(self.cfg["direction"], dtype=np.float64)
        self.walking_threshold = mdp.walking_return(
            float(self.cfg["walking_speed"]),
            episode_length=self.max_episode_length,
            dt=self.step_dt,
            forward_weight=float(self.cfg["forward_weight"]),
            alive_bonus=float(self.cfg["alive_bonus"]),
        )
        """Return of walking upright at ``walking_speed`` for a whole episode (the "walking"
        bar)."""
        self.termination_thresholds = {"min_height": float(self.cfg["min_height"]),
                                       "max_pitch": float(self.cfg["max_pitch"])}
        """The fall (``mdp.has_fallen``), exported so a deploy loop ends episodes where training
        did."""
        self.action_clip = 1.0
        """Actions are clipped to ±this before scaling (``mdp.actions_to_targets``); exported
        likewise."""
        self._rng = np.random.default_rng(seed)
        self._last_action = np.zeros((num_envs, self.num_actions))
        self._episode_step = np.zeros(num_envs, dtype=np.int64)
        self.rewards = mdp.reward_manager(self.cfg, dt=self.step_dt, num_envs=self.num_envs,
                                          registry=registry)
        """The reward: the walk terms (``mdp.REWARD_TERMS``) weighted by the task settings."""
        self._episode_distance = np.zeros(num_envs)

    # -- state read-outs ------------------------------------------------------
    def _pitch(self) -> np.ndarray:
        return self.sim.qpos[:, self._pitch_adr]

    def _height(self) -> np.ndarray:
        return self._height_offset + self.sim.qpos[:, self._z_adr]

    def forward_distance(self, start_qpos: np.ndarray, final_qpos: np.ndarray) -> np.ndarray:
        """Metres travelled along the walking direction between qpos rows [..., nq] (negative:
        backward)."""
        dx = np.asarray(final_qpos)[..., self._x_adr] - np.asarray(start_qpos)[..., self._x_adr]
        forward, _ = mdp.split_velocity(np.stack([dx, np.zeros_like(dx)], axis=-1), self._direction)
        return forward

    def _observations(self) -> tuple[np.ndarray, np.ndarray]:
        qpos, qvel = self.sim.qpos, self.sim.qvel
        obs = mdp.policy_observation(
            qpos[:, self._pitch_adr],
            qvel[:, self._pitch_dof],
            qpos[:, self._qpos_adr],
            qvel[:, self._dof_adr],
            self._last_action,
            self._default,
        )
        critic = mdp.critic_observation(obs, qvel[:, self._x_dof], qvel[:, self._z_dof],
                                        self._height())
        return obs, critic

    # -- resets ---------------------------------------------------------------
    def _reset_envs(self, ids: np.ndarray) -> None:
        n = len(ids)
        qpos = np.tile(self._init_qpos, (n, 1))
        qvel = np.zeros((n, self.sim.model.nv))
        noise = self.cfg["randomization"]
        if noise["enabled"]:
            qpos[:, self._qpos_adr] += (
                self._rng.uniform(-1, 1, (n, self.num_actions)) * noise["joint_pos"]
            )
            qvel += self._rng.uniform(-1, 1, qvel.shape) * noise["velocity"]
        self.sim.reset(ids, qpos=qpos, qvel=qvel, ctrl=np.tile(self._init_ctrl, (n, 1)))
        self._last_action[ids] = 0.0
        self._episode_step[ids] = 0
        self._episode_distance[ids] = 0.0
        self.rewards.reset(ids)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env to the standing pose (plus reset noise when
        ``randomization.enabled``)."""
        self._reset_envs(np.arange(self.num_envs))
        return self._observations()

    # -- step -------------------------------------------------------------------
    def step(self, actions: np.ndarray) -> StepResult:
        """Apply ``actions`` [N, 4] (clipped to [-1, 1]) for one control period."""
        cfg = self.cfg
        clipped, targets = mdp.actions_to_targets(actions, self._default, self._scale,
                                                  self._joint_range)
        self.sim.ctrl[:, self._actuators] = targets
        x_before = self.sim.qpos[:, self._x_adr].copy()
        faults = self.sim.step()
        self._last_action[:] = clipped
        self._episode_step += 1

        # Average velocity over the period, so the velocity reward sums to the distance walked.
        # The planar base has no y slide: sideways velocity is 0 by construction.
        displacement = self.sim.qpos[:, self._x_adr] - x_before
        velocity_xy = np.stack([displacement / self.step_dt, np.zeros(self.num_envs)], axis=1)
        forward, sideways = mdp.split_velocity(velocity_xy, self._direction)
        pitch = self._pitch()
        fallen = mdp.has_fallen(self._height(), pitch, cfg["min_height"], cfg["max_pitch"]) | faults
        state = mdp.WalkState(forward, sideways, pitch, ~fallen)
        # A broken state's displacement is meaningless: no reward, end the episode.
        reward = self.rewards.compute(state, valid=~faults if faults.any() else None).copy()
        displacement[faults] = 0.0
        self._episode_distance += displacement

        terminated = fallen
        truncated = (self._episode_step >= self.max_episode_length) & ~terminated
        done = np.flatnonzero(terminated | truncated)
        info: dict[str, Any] = {"physics_faults": int(faults.sum())}
        if done.size:
            info.update(self._episode_info(done, terminated))
            self._reset_envs(done)
        obs, critic = self._observations()
        return StepResult(
            obs=obs,
            critic_obs=critic,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            info=info,
        )

    def _episode_info(self, done: np.ndarray, terminated: np.ndarray) -> dict[str, Any]:
        """Means over the episodes that just finished (logged as ``episode/<name>``)."""
        duration = self._episode_step[done] * self.step_dt
        sums = self.rewards.episode_sums
        info: dict[str, Any] = {f"episode/{name}": float(value[done].mean())
                                for name, value in sums.items()}
        info["episode/return"] = float(sum(value[done] for value in sums.values()).mean())
        info["episode/length"] = float(self._episode_step[done].mean())
        info["episode/forward_speed"] = float((self._episode_distance[done] / duration).mean())
        info["episode/fall_rate"] = float(terminated[done].mean())
        info["episode_count"] = int(done.size)
        return info

    # -- resume -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The reset-noise RNG state."""
        return {"rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the reset-noise RNG state."""
        self._rng.bit_generator.state = state["rng"]

    def close(self) -> None:
        """Release the physics batch."""
        self.sim.close()
