"""A tracking environment's checkpoint state: everything that continues training bit for bit.

``TrackingEnv`` keeps its random streams, episode clocks, actions, pushes, servo history,
curriculum, last observations and log window here as numpy arrays (a checkpoint holds arrays
and loads with ``weights_only=True``), so a resumed run writes the same ``train.csv`` as one
that never stopped (docs/training.md, "Resuming").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import CheckpointError

RNG_STREAMS = ("physics", "reset", "sampler", "noise", "push")
"""The environment's random streams: randomised physics, reset noise, start frames, observation
noise, pushes (one each, so changing one feature leaves the others' draws alone)."""


def seeded_rngs(seed: int) -> dict[str, np.random.Generator]:
    """One independent PCG64 stream per ``RNG_STREAMS`` name, all from ``seed``."""
    streams = np.random.SeedSequence(seed).spawn(len(RNG_STREAMS))
    return {name: np.random.Generator(np.random.PCG64(s))
            for name, s in zip(RNG_STREAMS, streams, strict=True)}


def encode_rng(rng: np.random.Generator) -> np.ndarray:
    """A PCG64 generator's state as six uint64 (checkpoints hold arrays, not 128-bit ints)."""
    s = rng.bit_generator.state
    mask = (1 << 64) - 1
    state, inc = s["state"]["state"], s["state"]["inc"]
    return np.array(
        [state >> 64, state & mask, inc >> 64, inc & mask, s["has_uint32"], s["uinteger"]],
        np.uint64,
    )


def decode_rng(rng: np.random.Generator, code: np.ndarray) -> None:
    v = [int(x) for x in np.asarray(code, dtype=np.uint64)]
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (v[0] << 64) | v[1], "inc": (v[2] << 64) | v[3]},
        "has_uint32": v[4],
        "uinteger": v[5],
    }


class EnvCheckpoint:
    """``state_dict``/``load_state_dict`` for ``TrackingEnv`` (a mixin: it reads the env's
    attributes)."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit for bit (with the same seed and config): numpy arrays
        only."""
        out: dict[str, Any] = {f"rng/{name}": encode_rng(rng) for name, rng in self.rngs.items()}
        out.update({f"sampler/{k}": v for k, v in self.sampler.state_dict().items()})
        out.update({f"rewards/{k}": v.copy() for k, v in self.rewards.episode_sums.items()})
        out["sim/state"] = self.sim.batch.state.copy()
        out["env/time_steps"] = self.time_steps.copy()
        out["env/episode_length"] = self.episode_length.copy()
        out["env/action"] = self.state.action.copy()
        out["env/prev_action"] = self.state.prev_action.copy()
        if self.pusher is not None:
            out["push/countdown"] = self.pusher.countdown.copy()
        if self.actuation is not None:
            out["actuation/history"] = self.actuation.servos.history.copy()
        if self.curriculum is not None:
            out.update({f"curriculum/{k}": v for k, v in self.curriculum.state_dict().items()})
        # the last observations returned (with their noise), for the first step after a resume
        out["obs/policy"] = self.policy_observations.buffer.copy()
        out["obs/critic"] = self.critic_observations.buffer.copy()
        # the episode/* log window, so train.csv continues identically after a resume
        out.update({f"window/{name}": v.copy() for name, v in self._window.values.items()})
        out["window/count_head"] = np.array([self._window.count, self._window.head])
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore ``state_dict()``; the next ``reset()`` returns the restored episodes'
        observations."""
        missing = sorted(set(self.state_dict()) - set(state))
        if missing:
            raise CheckpointError(
                f"the checkpoint's environment state lacks {', '.join(missing[:4])}"
                f"{' …' if len(missing) > 4 else ''}: an older primebot wrote it",
                fix="retrain the run with this primebot, or use the primebot that trained it",
            )
        for name, rng in self.rngs.items():
            decode_rng(rng, state[f"rng/{name}"])
        self.sampler.load_state_dict(
            {k.split("/", 1)[1]: v for k, v in state.items() if k.startswith("sampler/")}
        )
        for name, sums in self.rewards.episode_sums.items():
            sums[:] = state[f"rewards/{name}"]
        self.sim.batch.state[:] = state["sim/state"]
        self.time_steps[:] = state["env/time_steps"]
        self.episode_length[:] = state["env/episode_length"]
        self.state.action[:] = state["env/action"]
        self.state.prev_action[:] = state["env/prev_action"]
        if self.pusher is not None:
            self.pusher.countdown[:] = state["push/countdown"]
        if self.actuation is not None:
            self.actuation.servos.history[:] = state["actuation/history"]
        if self.curriculum is not None:
            saved = {k.split("/", 1)[1]: v for k, v in state.items() if k.startswith("curriculum/")}
            self.curriculum.load_state_dict(saved)
            self._apply_strength()
        self.policy_observations.load(state["obs/policy"])
        self.critic_observations.load(state["obs/critic"])
        for name, values in self._window.values.items():
            values[:] = state[f"window/{name}"]
        self._window.count, self._window.head = (int(x) for x in state["window/count_head"])
        self.sim.forward()
        self.state.update()
        self._restored = True
