"""Start-frame sampling for the tracking task: adaptive by per-bin failure rate (mjlab's scheme).

The motion is cut into bins of ``bin_s`` seconds. Each failure is counted in
the bin where the env *was* when it failed; the counts decay as an
exponential moving average (``alpha`` per env step). Start bins are drawn with
probability proportional to the smoothed failure count plus a uniform floor
(``uniform_ratio``); the smoothing kernel λ⁰, λ¹, … spreads a bin's weight to
the bins before it, so envs start a little ahead of where they tend to fall.

``uniform`` draws each start alike over the motion; ``stratified`` too, but the starts drawn
together cover it evenly (one in each of as many equal parts), which is how a policy is judged
(``PLAY.spread`` in task.py): the verdict compares a policy's error with a statue's on the same
starts, and 16 uniform starts and the first frame of the shipped wave put the statue's error
anywhere in 15–22 mm (5th to 95th percentile; a wave run's checks read 15–23), 16 stratified ones
in 18–19.5 mm (``tools/bench_start_spread.py``).

With ``per_visit`` a bin's weight is its failures per visit instead (the env
steps spent in it, counted the same way): a failure count grows with the
visits, and a bin late in a short motion is visited by every episode that
starts before it, and more often still once the sampler favours it, so by
counts the last bins draw most starts whatever their difficulty. The weights
are then the rates' shares, mixed with ``uniform_ratio`` of uniform draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import ConfigError

MODES = ("adaptive", "uniform", "stratified", "start")


class StartFrameSampler:
    """Draws start steps in [0, num_steps - 1) for resetting envs, and learns where they fail."""

    def __init__(
        self, num_steps: int, step_dt: float, config: Mapping[str, Any], rng: np.random.Generator
    ) -> None:
        self.mode = str(config.get("mode", "adaptive"))
        if self.mode not in MODES:
            raise ConfigError(f"sampling.mode {self.mode!r} is not one of {', '.join(MODES)}")
        self.num_steps = int(num_steps)
        self.rng = rng
        bin_steps = max(1, round(float(config.get("bin_s", 1.0)) / step_dt))
        self.num_bins = self.num_steps // bin_steps + 1
        self.kernel_size = int(config.get("kernel_size", 1))
        self.kernel_lambda = float(config.get("lambda", 0.8))
        self.uniform_ratio = float(config.get("uniform_ratio", 0.1))
        self.alpha = float(config.get("alpha", 0.001))
        window_s = config.get("window_s")
        self.window_steps = 0 if window_s is None else max(0, round(float(window_s) / step_dt))
        """``uniform`` draws only start steps that leave this many steps of motion (as many as fit;
        0: any)."""
        kernel = self.kernel_lambda ** np.arange(self.kernel_size)
        self._kernel = kernel / kernel.sum()
        self.failed_count = np.zeros(self.num_bins)
        """Decaying count of failures per bin."""
        self._current_failed = np.zeros(self.num_bins)
        self.per_visit = bool(config.get("per_visit", False))
        self.visit_count = np.zeros(self.num_bins)
        """Decaying count of env steps per bin (``per_visit`` only)."""
        self._current_visits = np.zeros(self.num_bins)

    def bin_of(self, time_steps: np.ndarray) -> np.ndarray:
        bins = (np.asarray(time_steps) * self.num_bins) // max(self.num_steps, 1)
        return np.clip(bins, 0, self.num_bins - 1)

    def record_failures(self, time_steps: np.ndarray) -> None:
        """Count failures of envs that were at ``time_steps`` when they failed."""
        if len(time_steps):
            self._current_failed += np.bincount(self.bin_of(time_steps), minlength=self.num_bins)

    def record_visits(self, time_steps: np.ndarray) -> None:
        """Count the envs at ``time_steps`` this step (every env; used with ``per_visit``)."""
        if self.per_visit and len(time_steps):
            self._current_visits += np.bincount(self.bin_of(time_steps), minlength=self.num_bins)

    def update(self) -> None:
        """Fold this step's failures (and visits) into the moving averages (call once per env
        step)."""
        pairs = [(self.failed_count, self._current_failed)]
        if self.per_visit:
            pairs.append((self.visit_count, self._current_visits))
        for count, current in pairs:
            count *= 1.0 - self.alpha
            count += self.alpha * current
            current[:] = 0.0

    def probabilities(self) -> np.ndarray:
        """Sampling probability of each bin."""
        if self.per_visit:
            rates = self.failed_count / np.maximum(self.visit_count, 1e-12)
            total = rates.sum()
            shares = rates / total if total > 0 else np.full(self.num_bins, 1.0 / self.num_bins)
            weights = (1.0 - self.uniform_ratio) * shares + self.uniform_ratio / self.num_bins
        else:
            weights = self.failed_count + self.uniform_ratio / self.num_bins
        padded = np.concatenate((weights, np.full(self.kernel_size - 1, weights[-1])))
        smoothed = np.convolve(padded, self._kernel[::-1], mode="valid")
        return smoothed / smoothed.sum()

    def sample(self, count: int) -> np.ndarray:
        """Start steps for ``count`` envs (int64)."""
        if self.mode == "start" or count == 0:
            return np.zeros(count, np.int64)
        last = max(self.num_steps - 1, 1)
        span = max(last - self.window_steps, 1)
        if self.mode == "uniform":
            return self.rng.integers(0, span, size=count)
        if self.mode == "stratified":
            # one start in each of ``count`` equal parts of the span, the parts dealt to the envs at
            # random: each start is still uniform, but a set of them covers the motion evenly
            parts = (self.rng.permutation(count) + self.rng.random(count)) / count
            return np.minimum((parts * span).astype(np.int64), span - 1)
        bins = self.rng.choice(self.num_bins, size=count, p=self.probabilities())
        steps = (bins + self.rng.random(count)) / self.num_bins * last
        return np.minimum(steps.astype(np.int64), last - 1)

    def draw_probabilities(self) -> np.ndarray:
        """The share of starts ``sample`` draws in each bin in this mode: the adaptive weights
        (``probabilities``), each bin's share of the span a uniform or stratified start falls in,
        or the first bin alone (``start``). Failures are counted in every mode, so the adaptive
        weights are there to read; only ``adaptive`` draws by them."""
        if self.mode == "adaptive":
            return self.probabilities()
        if self.mode == "start":
            return np.bincount([0], minlength=self.num_bins).astype(float)
        span = max(max(self.num_steps - 1, 1) - self.window_steps, 1)
        return np.bincount(self.bin_of(np.arange(span)), minlength=self.num_bins) / span

    def metrics(self) -> dict[str, float]:
        """Entropy of the bins starts are drawn from (1 = uniform) and the most likely bin, for
        logging."""
        p = self.draw_probabilities()
        entropy = (
            float(-(p * np.log(p + 1e-12)).sum() / np.log(self.num_bins))
            if self.num_bins > 1
            else 1.0
        )
        top = int(np.argmax(p))
        return {
            "sampler/entropy": entropy,
            "sampler/top1_prob": float(p[top]),
            "sampler/top1_bin": float(top),
        }

    def state_dict(self) -> dict[str, np.ndarray]:
        state = {
            "failed_count": self.failed_count.copy(),
            "current_failed": self._current_failed.copy(),
        }
        if self.per_visit:
            state.update(visit_count=self.visit_count.copy(),
                         current_visits=self._current_visits.copy())
        return state

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        self.failed_count[:] = state["failed_count"]
        self._current_failed[:] = state["current_failed"]
        if self.per_visit:
            self.visit_count[:] = state["visit_count"]
            self._current_visits[:] = state["current_visits"]
