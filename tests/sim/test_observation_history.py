"""Observation history: a term's last H values, oldest first; an episode's first value fills its
history; noise is drawn once per value; the config names slots and whole numbers of steps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.registry import Registry
from primebot.pipeline.sim.observation_history import ObservationHistory
from primebot.pipeline.sim.observation_terms import (
    ObservationGroup,
    ObservationSlot,
    ObservationTerm,
    with_history,
)


def test_a_term_holds_its_last_values_oldest_first_and_a_new_episode_fills_its_history():
    history = ObservationHistory(widths=[1, 2], lengths=[0, 3], num_rows=2)
    assert history.active and history.frame_size == 3 and history.size == 1 + 2 * 3
    frame = lambda k: np.array([[k, 10 * k, 10 * k + 1], [-k, -10 * k, -10 * k - 1]], np.float32)  # noqa: E731
    np.testing.assert_array_equal(history.push(frame(1))[0], [1, 10, 11, 10, 11, 10, 11])
    history.push(frame(2))
    out = history.push(frame(3))
    np.testing.assert_array_equal(out[0], [3, 10, 11, 20, 21, 30, 31])
    np.testing.assert_array_equal(out[1], [-3, -10, -11, -20, -21, -30, -31])
    history.restart(np.array([1]))
    out = history.push(frame(4))
    np.testing.assert_array_equal(out[0], [4, 20, 21, 30, 31, 40, 41])
    np.testing.assert_array_equal(out[1], [-4, -40, -41, -40, -41, -40, -41])


def test_without_history_the_observation_is_the_frame():
    assert not ObservationHistory(widths=[3, 2], lengths=[0, 1], num_rows=4).active
    with pytest.raises(ValueError, match="expected"):
        ObservationHistory(widths=[3], lengths=[2], num_rows=4).push(np.zeros((4, 6), np.float32))


def _group(history: int, noise: dict | None = None) -> tuple[ObservationGroup, SimpleNamespace]:
    registry = Registry()
    registry.declare("observation_terms")
    registry.add("observation_terms", "clock",
                 ObservationTerm("clock", lambda s: s.value.copy(), 3, mirror="polar"), "test")
    state = SimpleNamespace(value=np.zeros((3, 3), np.float32))
    group = ObservationGroup([ObservationSlot("clock", history=history)], registry, state, 3,
                             noise, np.random.default_rng(0))
    return group, state


def test_each_value_keeps_the_noise_it_was_observed_with():
    group, state = _group(history=3, noise={"clock": 0.5})
    assert group.layout.terms == (("clock", 9),) and group.history_lengths == (3,)
    assert group.frame_layout.terms == (("clock", 3),)
    first = group.compute(state).copy()
    np.testing.assert_array_equal(first[:, 0:3], first[:, 6:9])  # the first value fills it
    second = group.compute(state).copy()
    np.testing.assert_array_equal(second[:, 3:6], first[:, 6:9])  # not drawn again
    assert not np.array_equal(second[:, 6:9], first[:, 6:9])
    assert np.abs(second).max() <= 0.5


def test_a_restarted_env_starts_its_history_from_its_next_value():
    group, state = _group(history=2)
    for k in (1.0, 2.0):
        state.value[:] = k
        group.compute(state)
    group.restart(np.array([0]))
    state.value[:] = 3.0
    out = group.compute(state)
    np.testing.assert_array_equal(out[0], [3, 3, 3, 3, 3, 3])
    np.testing.assert_array_equal(out[1], [2, 2, 2, 3, 3, 3])
    # a history mirrors value by value (``ppo.symmetry``): y negated in each
    _, sign = group.mirror(np.array([], np.int64), np.array([]))
    np.testing.assert_array_equal(sign, [1, -1, 1, 1, -1, 1])


def test_the_config_names_policy_slots_and_whole_numbers_of_steps():
    slots = [ObservationSlot("joint_vel"), ObservationSlot("actions", "last_action")]
    assert [s.history for s in with_history(slots, {"joint_vel": 4})] == [4, 0]
    with pytest.raises(ConfigError, match="joint_velocity") as err:
        with_history(slots, {"joint_velocity": 4})
    assert "joint_vel, actions" in err.value.fix
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(ConfigError, match="whole number"):
            with_history(slots, {"joint_vel": bad})
