"""Adaptive start-frame sampling: bins where envs fail are drawn more often."""

from __future__ import annotations

import numpy as np
import pytest

from primebot.pipeline.errors import ConfigError
from primebot.plugins.tasks.tracking.sampler import StartFrameSampler

CONFIG = {
    "mode": "adaptive",
    "bin_s": 1.0,
    "kernel_size": 1,
    "lambda": 0.8,
    "uniform_ratio": 0.1,
    "alpha": 0.001,
}


def _sampler(**overrides) -> StartFrameSampler:
    # 500 steps of 0.02 s: 10 s, one bin per second → 11 bins (mjlab counts T // 50 + 1)
    return StartFrameSampler(500, 0.02, {**CONFIG, **overrides}, np.random.default_rng(0))


def test_without_failures_every_bin_is_equally_likely():
    sampler = _sampler()
    assert sampler.num_bins == 11
    np.testing.assert_allclose(sampler.probabilities(), np.full(11, 1 / 11))


def test_failing_bin_is_favoured_in_probabilities_and_samples():
    sampler = _sampler()
    for _ in range(200):
        sampler.record_failures(
            np.array([160, 170, 199])
        )  # steps 150..199 are bin 3 (500·3/11 = 136..181)
        sampler.update()
    p = sampler.probabilities()
    assert int(np.argmax(p)) == sampler.bin_of(np.array([170]))[0] == 3
    assert p[3] > 5 * p[0]
    starts = sampler.sample(4000)
    assert starts.min() >= 0 and starts.max() < 499
    in_bin = np.mean(sampler.bin_of(starts) == 3)
    assert in_bin == pytest.approx(p[3], abs=0.03)


def test_moving_average_uses_alpha_per_step():
    sampler = _sampler(alpha=0.5)
    sampler.record_failures(np.array([0, 0]))
    sampler.update()
    assert sampler.failed_count[0] == pytest.approx(1.0)  # 0.5·2 + 0.5·0
    sampler.update()
    assert sampler.failed_count[0] == pytest.approx(0.5)


def test_kernel_spreads_weight_to_the_bins_before_a_failure():
    sampler = _sampler(kernel_size=3, uniform_ratio=0.0, alpha=1.0)
    sampler.record_failures(np.array([250]))  # bin 5
    sampler.update()
    p = sampler.probabilities()
    # kernel 1, λ, λ² normalised: bin 5 gets 1, bin 4 gets λ, bin 3 gets λ²
    expected = np.array([1.0, 0.8, 0.64])[::-1] / (1 + 0.8 + 0.64)
    np.testing.assert_allclose(p[3:6], expected / expected.sum())
    assert p[6:].sum() == 0 and p[:3].sum() == 0


def test_state_round_trips_and_other_modes():
    sampler = _sampler()
    sampler.record_failures(np.array([10]))
    sampler.update()
    other = _sampler()
    other.load_state_dict(sampler.state_dict())
    np.testing.assert_array_equal(other.probabilities(), sampler.probabilities())
    assert _sampler(mode="start").sample(3).tolist() == [0, 0, 0]
    assert _sampler(mode="uniform").sample(100).max() < 499
    with pytest.raises(ConfigError):
        _sampler(mode="sometimes")


def _episodes_to_the_end(sampler: StartFrameSampler, rng: np.random.Generator,
                         steps: int = 3000, envs: int = 64, fail_per_step: float = 0.004) -> None:
    """Episodes that start uniformly and run to the motion's end, failing at the same rate per step
    in every bin: the late bins are visited by every episode that started before them."""
    t = rng.integers(0, 499, size=envs)
    for _ in range(steps):
        failed = rng.random(envs) < fail_per_step
        sampler.record_visits(t)
        sampler.record_failures(t[failed])
        sampler.update()
        t = np.where(failed | (t >= 498), rng.integers(0, 499, size=envs), t + 1)


def test_per_visit_weighs_failure_rates_not_counts_that_favour_the_motions_end():
    # every bin equally hard: by failure counts the sampler favours the last bins (visited most),
    # by failures per visit it stays near uniform
    by_count, per_visit = _sampler(), _sampler(per_visit=True)
    _episodes_to_the_end(by_count, np.random.default_rng(1))
    _episodes_to_the_end(per_visit, np.random.default_rng(1))
    counts, rates = by_count.probabilities(), per_visit.probabilities()
    assert counts[-2] > 2.5 * counts[0]
    assert rates.max() < 1.6 * rates.min()
    # a bin that is really harder still wins, and its state round-trips with the visits
    hard = _sampler(per_visit=True, alpha=0.01)
    for _ in range(300):
        hard.record_visits(np.arange(0, 499, 10))
        hard.record_failures(np.array([170, 330]) if _ % 2 else np.array([170]))
        hard.update()
    p = hard.probabilities()
    assert int(np.argmax(p)) == 3 and p[3] > 0.5 and p.min() >= 0.1 / 11 - 1e-12
    copy = _sampler(per_visit=True)
    copy.load_state_dict(hard.state_dict())
    np.testing.assert_array_equal(copy.probabilities(), p)


def test_stratified_starts_cover_the_motion_evenly_and_each_is_still_uniform():
    """The judging envs' starts (``PLAY.spread``): one in each of ``count`` equal parts of the
    span (which leaves ``window_s`` of motion), the parts dealt to the envs at random."""
    sampler = _sampler(mode="stratified", window_s=2.0)  # 499 steps, 100 kept: span 399
    draws = np.array([sampler.sample(16) for _ in range(2000)])
    assert draws.min() >= 0 and draws.max() < 399
    # every draw has one start in each sixteenth of the span (to the step it is rounded down to)
    middles = (np.arange(16) + 0.5) * 399 / 16
    assert (np.abs(np.sort(draws, axis=1) - middles) <= 399 / 32 + 1).all()
    # each env's start alone is uniform over the span: its mean and spread are a uniform's
    assert abs(draws[:, 3].mean() - 199) < 10 and abs(draws[:, 3].std() - 399 / 12 ** 0.5) < 8
    # the statue's error on 16 such starts varies far less than on 16 uniform ones
    uniform = _sampler(mode="uniform", window_s=2.0)
    assert np.std(draws.mean(axis=1)) < 0.3 * np.std([uniform.sample(16).mean()
                                                      for _ in range(2000)])


def test_the_logged_start_distribution_is_the_one_the_mode_draws_from():
    # failures are counted in every mode (the adaptive weights stay readable), but only the
    # adaptive mode draws by them: a uniform run once logged 52 % of its starts in the last bin
    failing_at_the_end = np.array([495] * 50)
    for mode in ("adaptive", "uniform", "stratified", "start"):
        sampler = _sampler(mode=mode)
        for _ in range(200):
            sampler.record_failures(failing_at_the_end)
            sampler.update()
        starts = np.bincount(sampler.bin_of(sampler.sample(20000)), minlength=sampler.num_bins)
        # within a bin's edge: an adaptive start is placed by the last start step, a bin counted
        # by the motion's steps, so a start drawn in a bin's first steps may count in the one
        # before it
        np.testing.assert_allclose(sampler.draw_probabilities(), starts / 20000, atol=0.035)
        metrics = sampler.metrics()
        assert metrics["sampler/top1_prob"] == pytest.approx(sampler.draw_probabilities().max())
    assert _sampler(mode="uniform").metrics()["sampler/entropy"] > 0.99
    start = _sampler(mode="start").metrics()
    assert start["sampler/entropy"] == pytest.approx(0.0, abs=1e-9)
    assert (start["sampler/top1_prob"], start["sampler/top1_bin"]) == (1.0, 0.0)
