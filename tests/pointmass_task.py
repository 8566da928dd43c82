"""A tiny, solvable task for the learner's tests: point masses pushed towards a target.

Each env is a point mass in ``dims`` dimensions; the action is its
acceleration. The reward is exp(−‖x − target‖²) minus a small effort cost,
so the optimum is known (drive to the target and stay). Leaving a radius of
4 is a failure (terminated); ``episode_length`` steps is a time-out
(truncated). ``state_dict`` carries everything, so resumes are bit-exact.
Registered as task ``pointmass`` through ``load_plugins(extra=[...])``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.sim.env import StepResult, VecEnv
from primebot.pipeline.sim.task import TaskSpec

DEFAULT_CONFIG = {
    "dims": 2,
    "episode_length": 40,
    "dt": 0.1,
    "nan_at_step": -1,
}
TRAINER_DEFAULTS = {
    "ppo": {"num_steps_per_env": 16, "num_mini_batches": 2, "num_learning_epochs": 2,
            "learning_rate": 3e-3},
    "policy": {"actor_hidden": [32, 32], "critic_hidden": [32, 32]},
    "runner": {"save_interval": 5},
}


class PointMassEnv(VecEnv):
    """N point masses; obs = [x − target, v], critic obs adds the target itself."""

    def __init__(self, num_envs: int, seed: int, dims: int = 2, episode_length: int = 40,
                 dt: float = 0.1,
                 nan_at_step: int = -1) -> None:
        self.num_envs = num_envs
        self.dims = dims
        self.num_obs = 2 * dims
        self.num_critic_obs = 3 * dims
        self.num_actions = dims
        self.max_episode_length = episode_length
        self.step_dt = dt
        self.nan_at_step = nan_at_step
        self.rng = np.random.default_rng(seed)
        self.pos = np.zeros((num_envs, dims))
        self.vel = np.zeros((num_envs, dims))
        self.target = np.zeros((num_envs, dims))
        self.t = np.zeros(num_envs, dtype=np.int64)
        self.sums = np.zeros((num_envs, 2))
        self.global_step = 0

    def _reset_ids(self, ids: np.ndarray) -> None:
        self.pos[ids] = self.rng.uniform(-1.5, 1.5, (len(ids), self.dims))
        self.vel[ids] = 0.0
        self.target[ids] = self.rng.uniform(-1.0, 1.0, (len(ids), self.dims))
        self.t[ids] = 0
        self.sums[ids] = 0.0

    def _observe(self) -> tuple[np.ndarray, np.ndarray]:
        obs = np.concatenate([self.pos - self.target, self.vel], axis=1).astype(np.float32)
        critic = np.concatenate([obs, self.target.astype(np.float32)], axis=1)
        return obs, critic

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self._reset_ids(np.arange(self.num_envs))
        return self._observe()

    def step(self, actions: np.ndarray) -> StepResult:
        a = np.clip(actions.astype(np.float64), -1.0, 1.0)
        self.vel = 0.9 * self.vel + self.step_dt * 2.0 * a
        self.pos = self.pos + self.step_dt * self.vel
        reach = np.exp(-np.sum((self.pos - self.target) ** 2, axis=1))
        effort = -0.01 * np.sum(a * a, axis=1)
        reward = (reach + effort).astype(np.float32)
        self.sums += np.stack([reach, effort], axis=1)
        self.t += 1
        terminated = np.linalg.norm(self.pos, axis=1) > 4.0
        truncated = (self.t >= self.max_episode_length) & ~terminated
        done = terminated | truncated
        info: dict[str, Any] = {}
        if done.any():
            ids = np.flatnonzero(done)
            info["episode/reach"] = float(self.sums[ids, 0].mean())
            info["episode/effort"] = float(self.sums[ids, 1].mean())
            self._reset_ids(ids)
        obs, critic = self._observe()
        self.global_step += 1
        if self.global_step == self.nan_at_step:
            obs[0, 1] = np.nan
        return StepResult(obs, critic, reward, terminated, truncated, info)

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state, "pos": self.pos.copy(), "vel": self.vel.copy(),
            "target": self.target.copy(), "t": self.t.copy(), "sums": self.sums.copy(),
            "global_step": self.global_step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pos, self.vel, self.target = (
            state["pos"].copy(),
            state["vel"].copy(),
            state["target"].copy(),
        )
        self.t, self.sums = state["t"].copy(), state["sums"].copy()
        self.global_step = int(state["global_step"])


def make_env(*, robot=None, motion=None, num_envs: int, seed: int, config: dict, registry=None,
             num_threads=None) -> PointMassEnv:
    return PointMassEnv(num_envs, seed, config["dims"], config["episode_length"], config["dt"],
                        config["nan_at_step"])


POINTMASS = TaskSpec("pointmass", make_env, DEFAULT_CONFIG,
                     "point masses pushed to a target (tests)",
                     needs_motion=False, trainer_defaults=TRAINER_DEFAULTS)


@hookimpl
def register_tasks(register) -> None:
    register(POINTMASS)
