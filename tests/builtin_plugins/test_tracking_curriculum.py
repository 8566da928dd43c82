"""The randomisation curriculum of the tracking task: strength moved by the fall rate of training
episodes or by the success rate of the runner's verdict checks."""

from __future__ import annotations

import numpy as np
import pytest

from primebot.pipeline.errors import CheckpointError, ConfigError
from primebot.plugins.tasks.tracking.curriculum import RandomizationCurriculum

# on, from 0
FALLS = {"start": 0.0, "signal": "falls", "step": 0.1, "raise_below": 0.3, "lower_above": 0.6}


def test_strength_rises_after_a_window_with_few_falls_and_drops_after_many():
    c = RandomizationCurriculum(FALLS, window=10)
    assert c.strength == 0.0
    assert not c.record(9, 0)  # the window is not full yet
    assert c.record(1, 0) and c.strength == pytest.approx(0.1)
    assert not c.record(10, 4)  # 40 % falls: between the thresholds, hold
    assert c.record(10, 7) and c.strength == pytest.approx(0.0)
    assert not c.record(10, 10)  # never below 0


def test_strength_reaches_exactly_one_and_stays_there():
    c = RandomizationCurriculum({**FALLS, "step": 0.3}, window=1)
    for _ in range(5):
        c.record(1, 0)
    assert c.strength == 1.0 and c.metrics() == {"randomization/strength": 1.0}


def test_without_a_curriculum_the_strength_is_one_throughout():
    c = RandomizationCurriculum(None, window=4)
    assert c.strength == 1.0 and not c.record(100, 100) and c.strength == 1.0


def test_state_round_trips():
    c = RandomizationCurriculum(FALLS, window=10)
    c.record(10, 0)
    c.record(3, 1)
    d = RandomizationCurriculum(FALLS, window=10)
    d.load_state_dict(c.state_dict())
    assert (d.strength, d.finished, d.fell) == (c.strength, 3, 1)
    assert all(isinstance(v, np.ndarray) for v in c.state_dict().values())


def test_a_verdict_curriculum_rises_only_on_a_tracked_check_by_default():
    c = RandomizationCurriculum({"start": 0.0}, window=4)
    assert c.signal == "verdict" and c.raise_on == "tracked" and not c.follows_falls
    # stays up but does not yet do the motion: hold
    assert not c.observe_verdict(1.0, tracked=False)
    assert c.observe_verdict(1.0, tracked=True) and c.strength == 0.25  # the default step
    assert not c.observe_verdict(0.5, tracked=False)  # half fell: between the thresholds
    assert c.observe_verdict(0.2, tracked=False) and c.strength == 0.0  # most fell: down
    assert not c.observe_verdict(None, tracked=True)  # no check, no move
    assert not c.record(100, 0)  # training episodes do not move a verdict curriculum


def test_raise_on_stays_up_rises_on_a_check_where_few_fell():
    c = RandomizationCurriculum({"start": 0.0, "raise_on": "stays_up"}, window=4)
    assert c.observe_verdict(0.8, tracked=False) and c.strength == 0.25
    assert not c.observe_verdict(0.6, tracked=True)  # 40 % fell: hold, tracked or not


def test_a_strength_not_tracked_for_fall_back_after_checks_falls_back_and_holds_for_twice_as_many():
    c = RandomizationCurriculum({"start": 0.25, "fall_back_after": 3}, window=4)
    assert c.observe_verdict(1.0, tracked=True) and c.strength == 0.5  # tracked: up
    assert not c.observe_verdict(0.9, tracked=False) and not c.observe_verdict(0.5, tracked=False)
    # the third in a row: back a step
    assert c.observe_verdict(0.8, tracked=False) and c.strength == 0.25
    assert c.hold == 6
    for _ in range(5):  # tracked again, but held at the strength it fell back to
        assert not c.observe_verdict(1.0, tracked=True) and c.strength == 0.25
    assert c.observe_verdict(1.0, tracked=True) and c.strength == 0.5  # the hold is over
    for _ in range(3):
        c.observe_verdict(1.0, tracked=False)
    assert c.strength == 0.25 and c.hold == 12  # the second fall-back from 0.5 holds twice as long


def test_the_hold_doubles_per_strength_fallen_from_not_over_every_fall_back():
    c = RandomizationCurriculum({"start": 1.0, "fall_back_after": 2}, window=4)
    for strength in (0.75, 0.5, 0.25):  # once from each of 1, 0.75 and 0.5: 4 checks each time
        assert not c.observe_verdict(1.0, tracked=False)
        assert c.observe_verdict(1.0, tracked=False) and (c.strength, c.hold) == (strength, 4)
    assert c.fall_backs == {1.0: 1, 0.75: 1, 0.5: 1}
    for _ in range(4):
        c.observe_verdict(1.0, tracked=True)
    assert c.strength == 0.5  # back up after 4 checks, not 16
    c.observe_verdict(1.0, tracked=False)
    assert c.observe_verdict(1.0, tracked=False) and (c.strength, c.hold) == (0.25, 8)  # 0.5 again


def test_a_fall_back_waits_for_checks_in_a_row_and_leaves_many_falls_to_lower_above():
    c = RandomizationCurriculum({"start": 0.5, "fall_back_after": 2}, window=4)
    assert not c.observe_verdict(1.0, tracked=False)
    # a tracked check breaks the run
    assert c.observe_verdict(1.0, tracked=True) and c.strength == 0.75
    assert not c.observe_verdict(1.0, tracked=False)
    # most fell: lower_above's step
    assert c.observe_verdict(0.2, tracked=False) and c.strength == 0.5
    assert c.hold == 0 and c.untracked == 0  # no hold: it may rise at the next tracked check
    c = RandomizationCurriculum({"start": 0.0, "fall_back_after": 1}, window=4)
    assert not c.observe_verdict(1.0, tracked=False) and c.strength == 0.0  # nothing below 0
    c = RandomizationCurriculum({"start": 0.5, "fall_back_after": None}, window=4)
    for _ in range(50):
        assert not c.observe_verdict(1.0, tracked=False)  # null: never


def test_the_fall_back_counts_survive_a_resume_and_an_older_checkpoint_is_refused():
    c = RandomizationCurriculum({"start": 0.5, "fall_back_after": 2}, window=4)
    c.observe_verdict(1.0, tracked=False)
    c.observe_verdict(1.0, tracked=False)
    c.observe_verdict(1.0, tracked=False)
    d = RandomizationCurriculum({"start": 0.5, "fall_back_after": 2}, window=4)
    d.load_state_dict(c.state_dict())
    assert (d.strength, d.untracked, d.hold, d.fall_backs) == (0.25, 1, 3, {0.5: 1})
    old = {k: v for k, v in c.state_dict().items() if k != "fall_backs_by_strength"}
    with pytest.raises(CheckpointError, match="no fall-back counts: an older primebot") as info:
        d.load_state_dict(old)
    assert "retrain" in info.value.fix


@pytest.mark.parametrize("bad",
                         [{"start": 1.5}, {"step": 0}, {"raise_below": 0.7}, {"speed": 1},
                          {"signal": "reward"},
                                 {"raise_on": "never"}, {"fall_back_after": 0}])
def test_bad_settings_are_a_config_error_naming_the_fix(bad):
    with pytest.raises(ConfigError) as err:
        RandomizationCurriculum({**FALLS, **bad}, window=4)
    assert "curriculum" in str(err.value)


def test_the_default_config_follows_the_verdict_from_full_strength_and_a_set_changes_it():
    from primebot.pipeline.train.train_config import TrainConfig, parse_set, set_value
    from primebot.plugins.tasks.tracking.task import TRACKING

    cfg = TrainConfig(task="tracking")
    cfg.task_config = TRACKING.settings()
    default = RandomizationCurriculum(cfg.task_config["randomization"]["curriculum"], window=4)
    assert (
        default.enabled
        and default.strength == 1.0
        and default.signal == "verdict"
        and not default.follows_falls
    )
    assert default.step == 0.25 and default.fall_back_after == 8
    for key, value in parse_set(["task.randomization.curriculum.start=0",
                                 "task.randomization.curriculum.signal=falls"]):
        set_value(cfg, key, value)
    c = RandomizationCurriculum(cfg.task_config["randomization"]["curriculum"], window=4)
    assert c.enabled and c.strength == 0.0 and c.follows_falls
    for key, value in parse_set(["task.randomization.curriculum=null"]):
        set_value(cfg, key, value)
    assert not RandomizationCurriculum(
        cfg.task_config["randomization"]["curriculum"], window=4
    ).enabled


def test_a_termination_set_to_null_is_switched_off_and_a_word_is_still_refused():
    from primebot.pipeline.train.train_config import TrainConfig, parse_set, set_value
    from primebot.plugins.tasks.tracking.task import TRACKING

    cfg = TrainConfig(task="tracking")
    cfg.task_config = TRACKING.settings()
    for key, value in parse_set(["task.terminations.end_effector_height=null"]):
        set_value(cfg, key, value)
    assert cfg.task_config["terminations"]["end_effector_height"] is None
    with pytest.raises(ValueError, match="expects a number"):
        for key, value in parse_set(["task.terminations.anchor_height=high"]):
            set_value(cfg, key, value)


def test_a_check_tracked_well_inside_its_limit_ends_a_hold_early():
    """The Booster T1's squat: held at 0.25 after a fall-back from 0.5, it tracked at a fraction of
    the limit for 14 checks before the hold ran out, then tracked at 0.5, 0.75 and 1."""
    c = RandomizationCurriculum({"start": 0.5, "fall_back_after": 2}, window=4)
    c.observe_verdict(1.0, tracked=False)
    assert c.observe_verdict(1.0, tracked=False, mpkpe_share=1.3) and (c.strength, c.hold) == (
        0.25, 4)
    # tracked, but close to the limit: the hold runs on
    assert not c.observe_verdict(1.0, tracked=True, mpkpe_share=0.9) and c.hold == 3
    # tracked with room to spare: released, and up at once
    assert c.observe_verdict(1.0, tracked=True, mpkpe_share=0.5) and (c.strength, c.hold) == (
        0.5, 0)
    held = RandomizationCurriculum({"start": 0.5, "fall_back_after": 2, "release_below": None},
                                   window=4)
    held.observe_verdict(1.0, tracked=False)
    held.observe_verdict(1.0, tracked=False)
    assert not held.observe_verdict(1.0, tracked=True, mpkpe_share=0.1) and held.strength == 0.25
    for bad in (1.5, -0.1, "half", True):
        with pytest.raises(ConfigError, match="release_below"):
            RandomizationCurriculum({"start": 0.0, "release_below": bad}, window=4)
