"""What a training checkpoint holds of a run, and how a run continues from one (docs/architecture.md
§3).

A checkpoint carries the learner (weights, optimiser, normalisers), the
iteration, the verdict checks' best and candidates, and per rank the env's
state, the staged observations, every random stream and the open episodes'
sums, so that a resumed run continues exactly where it stopped. It also
carries the run's identity and the hash of its settings: a run never
continues from another run's checkpoint, nor from one written with other
settings than those a resume may change (``RESUMABLE_SETTINGS``).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import OLDER_RUN_FIX, CheckpointError
from .checkpoints import from_storable, require_same_run, save_checkpoint, to_storable
from .train_config import TrainConfig, resumable_identity

EPISODE_WINDOW = 100
"""Finished episodes averaged for episode_return / episode_length."""


def config_hash(cfg: TrainConfig) -> str:
    """SHA-256 of the settings a checkpoint must agree with (``TrainConfig.identity``)."""
    return hashlib.sha256(json.dumps(cfg.identity(), sort_keys=True).encode()).hexdigest()


class RunnerState:
    """``OnPolicyRunner``'s state in a checkpoint (a mixin: the runner holds ``env``, ``cfg``,
    ``dist``, ``ppo``, ``transfer``, ``checks``, ``iteration``, ``run_id``, ``config_hash``,
    ``best_return`` and the episode sums and windows)."""

    def save(self, path: str | Path) -> Path:
        """Write a checkpoint of the current state to ``path`` (atomic; refuses non-finite)."""
        return save_checkpoint(path, self.checkpoint_payload())

    def _rank_state(self) -> dict[str, Any]:
        return {
            "env": to_storable(self.env.state_dict()),
            "obs": torch.from_numpy(self.transfer.obs.copy()),
            "critic_obs": torch.from_numpy(self.transfer.critic_obs.copy()),
            "learner_rng": self.ppo.rng_state(),
            "torch_rng": torch.get_rng_state(),
            "numpy_rng": to_storable(np.random.get_state()),
            "python_rng": random.getstate(),
            "episode_return_sum": torch.from_numpy(self._ep_return.copy()),
            "episode_length_sum": torch.from_numpy(self._ep_length.copy()),
            "episode_returns": list(self.episode_returns),
            "episode_lengths": list(self.episode_lengths),
        }

    def checkpoint_payload(self) -> dict[str, Any]:
        """Everything docs/architecture.md §3 lists: weights, optimiser, normaliser, iteration,
        every RNG, env state, config hash."""
        env = self.env
        return {
            "iteration": self.iteration,
            "run_id": self.run_id,
            "config": self.cfg.to_dict(),
            "config_hash": self.config_hash,
            "dims": {"num_obs": env.num_obs, "num_critic_obs": env.num_critic_obs,
                     "num_actions": env.num_actions},
            "learner": self.ppo.state_dict(),
            "best_return": self.best_return if np.isfinite(self.best_return) else None,
            "best_check": self.checks.state(),
            "final_candidates": self.checks.candidates_state(),
            "ranks": self.dist.gather_objects(self._rank_state()),
        }

    def restore(self, payload: dict[str, Any], source: str = "checkpoint") -> None:
        """Continue from a loaded checkpoint exactly where it stopped (never from another run's)."""
        require_same_run(payload, self.run_id, source)
        if payload.get("config_hash") != self.config_hash and not self._same_run(payload):
            raise CheckpointError(
                f"{source} was written with a different configuration (config hash differs)",
                fix="resume with the run's own args.yaml; only --iterations, --device and the "
                    "optimisation "
                    "settings of docs/training.md (--set ppo.learning_rate=…) may change on resume",
            )
        ranks = payload["ranks"]
        if len(ranks) != self.dist.world_size:
            raise CheckpointError(
                f"{source} was written by {len(ranks)} rank(s); this job has "
                f"{self.dist.world_size}",
                fix=f"resume with torchrun --nproc_per_node={len(ranks)} (or the same number of "
                    "ranks in total)",
            )
        self.ppo.load_state_dict(payload["learner"])
        state = ranks[self.dist.rank]
        self.env.load_state_dict(from_storable(state["env"]))
        self.transfer.stage(state["obs"].numpy(), state["critic_obs"].numpy())
        self.ppo.set_rng_state(state["learner_rng"])
        torch.set_rng_state(state["torch_rng"])
        np.random.set_state(from_storable(state["numpy_rng"]))
        random.setstate(state["python_rng"])
        self._ep_return[:] = state["episode_return_sum"].numpy()
        self._ep_length[:] = state["episode_length_sum"].numpy()
        self.episode_returns = deque(state["episode_returns"], maxlen=EPISODE_WINDOW)
        self.episode_lengths = deque(state["episode_lengths"], maxlen=EPISODE_WINDOW)
        best = payload["best_return"]
        self.best_return = -float("inf") if best is None else float(best)
        if "best_check" not in payload:
            raise CheckpointError(
                f"{source} records no best_check: an older primebot wrote it, and this one cannot "
                "resume it",
                fix=OLDER_RUN_FIX,
            )
        self.checks.load_state(payload["best_check"])
        # absent from a checkpoint of an older primebot: its run's candidates start again
        self.checks.load_candidates(payload.get("final_candidates"))
        self.iteration = int(payload["iteration"])

    def _same_run(self, payload: dict[str, Any]) -> bool:
        """The checkpoint's settings equal this run's but for ``RESUMABLE_SETTINGS`` (a resume with
        --set)."""
        try:
            theirs = TrainConfig.from_dict(payload["config"])
        except (KeyError, TypeError):
            return False
        return resumable_identity(theirs) == resumable_identity(self.cfg)
