"""The ``episode/*`` log of the tracking task: per-term sums of the last finished episodes.

Training logs each reward term's episode sum (and the episode length) as a mean over a window of
recently finished episodes, not over the few that end in one step, so train.csv's ``episode/*``
columns are smooth. The window travels in the env's checkpoint, so a resumed run logs the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class EpisodeWindow:
    """Per-term sums of the last ``size`` finished episodes, for smooth ``episode/*`` logs."""

    def __init__(self, names: list[str], size: int) -> None:
        self.values = {name: np.zeros(size) for name in names}
        self.size, self.count, self.head = size, 0, 0

    def add(self, finished: Mapping[str, np.ndarray]) -> None:
        n = len(next(iter(finished.values()))) if finished else 0
        if n == 0:
            return
        slots = (self.head + np.arange(n)) % self.size
        for name, values in finished.items():
            self.values[name][slots] = values
        self.head = int((self.head + n) % self.size)
        self.count = min(self.size, self.count + n)

    def means(self) -> dict[str, float]:
        if self.count == 0:
            return {f"episode/{name}": 0.0 for name in self.values}
        return {f"episode/{name}": float(v[: self.count].mean()) for name, v in self.values.items()}
