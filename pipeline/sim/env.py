"""The environment contract every task implements (one small abstract class)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError


@dataclass
class StepResult:
    """What ``VecEnv.step`` returns. N = num_envs, O = num_obs, P = num_critic_obs."""

    obs: np.ndarray
    """[N, O] float32 policy observations, already reset for the envs that finished."""
    critic_obs: np.ndarray
    """[N, P] float32 privileged observations for the critic (same as obs when none)."""
    reward: np.ndarray
    """[N] float32 reward of the step just taken (weights and dt applied)."""
    terminated: np.ndarray
    """[N] bool: episode ended by a failure; the value after it is zero."""
    truncated: np.ndarray
    """[N] bool: episode ended by its time limit; the learner bootstraps the value."""
    info: dict[str, Any] = field(default_factory=dict)
    """Scalars for logging, e.g. ``episode/<term>`` sums of finished episodes,
    ``physics_faults``."""


class VecEnv(ABC):
    """N environments stepped together on the host; arrays are numpy, float32.

    Envs that terminate or truncate are reset inside ``step``: the returned
    observations already belong to the new episode.
    """

    num_envs: int
    num_obs: int
    num_critic_obs: int
    num_actions: int
    max_episode_length: int
    """Steps per episode before ``truncated``."""
    step_dt: float
    """Seconds of simulated time per ``step`` (control period)."""

    @abstractmethod
    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset all envs; return (obs [N, O], critic_obs [N, P]), float32."""

    @abstractmethod
    def step(self, actions: np.ndarray) -> StepResult:
        """Apply ``actions`` [N, A] float32 for one control period and return the result."""

    @property
    def curriculum_complete(self) -> bool:
        """False while a curriculum still trains under easier conditions than the task configures.

        The runner's stop-when-tracked rule waits for True, so a run that
        stops early stops with the policy trained under the full conditions.
        """
        return True

    @property
    def curriculum_progress(self) -> float:
        """How far a curriculum has come, in [0, 1] (1: the full conditions). Among verdict checks
        that tracked, the runner keeps as ``model_best.pt`` the policy trained furthest along; the
        default follows ``curriculum_complete``."""
        return 1.0 if self.curriculum_complete else 0.0

    def observe_verdict(self, summary: dict[str, Any]) -> None:
        """The runner's verdict check just ran (``runner.check_interval``): a curriculum may follow
        it.

        ``summary`` is the probe's evaluation summary (``success_rate``,
        ``mpkpe_m``, ``verdict``, ...: episodes under the task's evaluation
        settings, docs/architecture.md §9). The stop rule reads
        ``curriculum_complete`` just before this call: a check counts towards
        stopping only when the policy it checked trained under the full
        conditions. The default ignores it.
        """

    def mirror(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The left-right mirror image of a policy observation and of an action, each as
        ``(source, sign)``: ``sign · x[..., source]`` (``ppo.symmetry``, docs/training.md). The
        default: this env has none."""
        raise ConfigError(f"{type(self).__name__} does not say how its observations and actions "
                          "mirror", fix="train without ppo.symmetry")

    def state_dict(self) -> dict[str, Any]:
        """RNG and sampler state needed to resume bit-for-bit (numpy arrays and scalars only)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""

    def close(self) -> None:
        """Release threads and buffers."""
