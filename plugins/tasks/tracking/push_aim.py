"""Aimed pushes: training's kicks pointed at the side the policy falls to most.

A humanoid standing on two feet rides out a kick across its feet more easily
than one along them (docs/tasks.md, "Which pushes fail"), and a policy trained
with kicks drawn evenly in every direction learns the easy sides first. With
``push.aim: adaptive`` the ``Pusher`` keeps each kick's horizontal speed but
points it, relative to the robot's heading when it lands, at one of the stress
test's four sides (``PUSH_DIRECTIONS``: forward, left, backward, right), drawn
by how often recent kicks to that side were followed by a fall.
"""

from __future__ import annotations

import numpy as np

from primebot.pipeline.api import PUSH_DIRECTIONS

FALL_WINDOW_S = 2.0
"""A fall this soon after a kick counts against the kick's side (the stress test's kicked-forward
q1 falls about a second after the kick)."""
MEMORY_KICKS = 2000.0
"""How many recent kick outcomes the fall rates remember (an exponential memory): about 500 a
side, so a side's rate reads to about ±0.02."""
EVEN_SHARE = 0.4
"""The share of kicks drawn evenly over the four sides, so a side the policy has learnt is still
practised; the rest go to the sides that fall more often than the best one."""

SECTOR_WIDTH = 2 * np.pi / len(PUSH_DIRECTIONS)


class PushAim:
    """Which side each kick points to, and the fall rate after recent kicks to each side."""

    def __init__(self, num_envs: int, control_dt: float) -> None:
        self.window_steps = int(round(FALL_WINDOW_S / control_dt))
        sides = len(PUSH_DIRECTIONS)
        self.outcomes = np.zeros(sides)
        """Recent kick outcomes per side (decayed counts)."""
        self.falls = np.zeros(sides)
        """Recent falls within ``FALL_WINDOW_S`` of a kick, per side (decayed counts)."""
        self.pending = np.full(num_envs, -1, np.int64)
        """The side of each env's last kick while its outcome is open (-1: none)."""
        self.age = np.zeros(num_envs, np.int64)
        """Control steps since each env's last kick."""

    def fall_rates(self) -> np.ndarray:
        """[4] the share of recent kicks to each side followed by a fall (0 before any)."""
        return self.falls / np.maximum(self.outcomes, 1e-9)

    def probabilities(self) -> np.ndarray:
        """[4] the chance the next kick points to each side: ``EVEN_SHARE`` spread evenly, the rest
        by how much more often than the best side each side falls (all even while they fall
        alike)."""
        excess = self.fall_rates() - self.fall_rates().min()
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

    def kicked(self, ids: np.ndarray, sides: np.ndarray) -> None:
        """Envs ``ids`` were just kicked towards ``sides``; an open kick before it counts as
        survived."""
        self._resolve(ids[self.pending[ids] >= 0], fell=False)
        self.pending[ids] = sides
        self.age[ids] = 0

    def record(self, terminated: np.ndarray, done: np.ndarray) -> None:
        """After a control step: a kicked env that fell (``terminated``) counts as a fall of its
        side; one still up ``FALL_WINDOW_S`` later, or whose episode ended otherwise (``done``),
        as survived."""
        open_ = self.pending >= 0
        self.age[open_] += 1
        self._resolve(np.flatnonzero(open_ & terminated), fell=True)
        decided = done | (self.age >= self.window_steps)
        self._resolve(np.flatnonzero(open_ & ~terminated & decided), fell=False)

    def _resolve(self, ids: np.ndarray, *, fell: bool) -> None:
        if ids.size == 0:
            return
        keep = (1.0 - 1.0 / MEMORY_KICKS) ** ids.size
        self.outcomes *= keep
        self.falls *= keep
        sides = self.pending[ids]
        np.add.at(self.outcomes, sides, 1.0)
        if fell:
            np.add.at(self.falls, sides, 1.0)
        self.pending[ids] = -1

    def metrics(self) -> dict[str, float]:
        """Per side: the recent fall rate after a kick and the chance of the next kick, for
        train.csv."""
        rates, chance = self.fall_rates(), self.probabilities()
        out = {}
        for i, side in enumerate(PUSH_DIRECTIONS):
            out[f"push/falls_{side}"] = float(rates[i])
            out[f"push/aim_{side}"] = float(chance[i])
        return out

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"outcomes": self.outcomes.copy(), "falls": self.falls.copy(),
                "pending": self.pending.copy(), "age": self.age.copy()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        for name in ("outcomes", "falls", "pending", "age"):
            getattr(self, name)[:] = state[name]
