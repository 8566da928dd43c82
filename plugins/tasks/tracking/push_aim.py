"""Aimed pushes: training's kicks pointed at the side the verdict checks see the policy fall to.

A humanoid standing on two feet rides out a kick across its feet more easily
than one along them (docs/tasks.md, "Which pushes fail"), and a policy trained
with kicks drawn evenly in every direction learns the easy sides first. With
``push.aim: adaptive`` the ``Pusher`` keeps each kick's horizontal speed but
points it, relative to the robot's heading when it lands, at one of the stress
test's four sides (``PUSH_DIRECTIONS``: forward, left, backward, right), drawn
by how often the recent verdict checks' pushed episodes kicked to that side
failed (the check plays the stress test's standard push: ``PLAY.robustness``).

The checks, not training's own falls, say where the policy is weak: at full
randomisation about half of training's kicks are followed by a fall within 2 s
whichever way they point (the wave, stop 62: forward 0.48–0.61, the other
sides 0.50–0.66), while the stress test's standard push fails the same
policy three times in four kicked forward and hardly ever otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import PUSH_DIRECTIONS

CHECK_MEMORY = 0.75
"""Each check's per-side counts weigh this much more than the next one's: the aim remembers about
the last four checks (about 128 pushed episodes, some 32 a side)."""
EVEN_SHARE = 0.4
"""The share of kicks drawn evenly over the four sides, so a side the policy has learnt is still
practised; the rest go to the sides that fail more often than the best one."""

SECTOR_WIDTH = 2 * np.pi / len(PUSH_DIRECTIONS)


class PushAim:
    """Which side each kick points to, from the failure rate of the recent checks' pushed episodes
    on each side."""

    def __init__(self) -> None:
        sides = len(PUSH_DIRECTIONS)
        self.episodes = np.zeros(sides)
        """Recent checks' pushed episodes per side (decayed counts)."""
        self.failures = np.zeros(sides)
        """Those of them that failed (decayed counts)."""

    def failure_rates(self) -> np.ndarray:
        """[4] the share of the recent checks' episodes kicked to each side that failed (0 before
        any)."""
        return self.failures / np.maximum(self.episodes, 1e-9)

    def probabilities(self) -> np.ndarray:
        """[4] the chance the next kick points to each side: ``EVEN_SHARE`` spread evenly, the rest
        by how much more often than the best side each side fails (all even while they fail
        alike)."""
        rates = self.failure_rates()
        excess = rates - rates.min()
        even = np.full(len(PUSH_DIRECTIONS), 1.0 / len(PUSH_DIRECTIONS))
        if excess.sum() < 1e-6:
            return even
        return EVEN_SHARE * even + (1.0 - EVEN_SHARE) * excess / excess.sum()

    def angles(self, rng: np.random.Generator, heading: np.ndarray) -> tuple[np.ndarray,
                                                                              np.ndarray]:
        """(sides, world angles) of kicks on robots facing ``heading`` (yaw, rad): a side drawn by
        ``probabilities``, an angle uniform within its 90° sector."""
        sides = rng.choice(len(PUSH_DIRECTIONS), size=heading.size, p=self.probabilities())
        jitter = rng.uniform(-SECTOR_WIDTH / 2, SECTOR_WIDTH / 2, size=heading.size)
        return sides, heading + sides * SECTOR_WIDTH + jitter

    def observe_check(self, by_direction: Mapping[str, Mapping[str, Any]] | None) -> None:
        """A verdict check's pushed episodes per side (``{side: {episodes, success_rate}}``, as
        ``evaluate.push_direction.by_push_direction`` gives them); nothing without them."""
        if not by_direction:
            return
        self.episodes *= CHECK_MEMORY
        self.failures *= CHECK_MEMORY
        for i, side in enumerate(PUSH_DIRECTIONS):
            figures = by_direction.get(side)
            if figures:
                self.episodes[i] += figures["episodes"]
                self.failures[i] += figures["episodes"] * (1.0 - figures["success_rate"])

    def metrics(self) -> dict[str, float]:
        """Per side: the recent checks' failure rate and the chance of the next kick, for
        train.csv."""
        rates, chance = self.failure_rates(), self.probabilities()
        out = {}
        for i, side in enumerate(PUSH_DIRECTIONS):
            out[f"push/check_failures_{side}"] = float(rates[i])
            out[f"push/aim_{side}"] = float(chance[i])
        return out

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"episodes": self.episodes.copy(), "failures": self.failures.copy()}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        self.episodes[:] = state["episodes"]
        self.failures[:] = state["failures"]
