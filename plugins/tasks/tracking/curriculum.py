"""The randomisation curriculum: the strength of the training randomisation, moved by how the policy
fares.

Full-strength randomisation from the first iteration (mjlab's reset noise and
pushes, sized for a 1.3 m robot) keeps a policy that cannot yet do its motion
from ever seeing it whole: the G1's squat under it stayed at success 0.27
after 15 minutes, q1's march at ~0.3. One strength in [0, 1] scales every
part of the randomisation (``randomization.py``; 1 is the configured ranges)
and moves by ``step`` on one of two signals:

- ``verdict`` (the default, from ``start`` 1): the runner's verdict checks
  (``runner.check_interval``), episodes of the deterministic policy without
  randomisation. Down when more than ``lower_above`` of them fell; up when
  the check tracked its motion (``raise_on: tracked``, the default: success
  and MPKPE both within the verdict) or merely when fewer than
  ``raise_below`` fell (``raise_on: stays_up``). So a policy that does its
  motion trains under full randomisation throughout, and one that cannot yet
  stay up learns the motion undisturbed first and gets the randomisation
  back once it does the motion, not merely once it stays up (on the march,
  rising as soon as it stayed up knocked it back over before it had learnt
  to lift a knee). Without verdict checks the strength stays at ``start``.
  A strength at which ``fall_back_after`` checks in a row did not track
  (and no more than ``lower_above`` fell) falls back a step and may not
  rise again for twice as many checks, doubling at each fall-back from that
  same strength: the kick and the march, raised from 0.25 to 0.5 once they
  tracked, then fell at up to half of their checks for the rest of the 15
  minutes and never tracked again, while the policy they had at 0.25 was
  still improving. A hold ends early at a check that tracks with its MPKPE
  at most ``release_below`` (0.6) of the verdict's limit: the Booster T1's
  squat, held at 0.25 from iteration 650, tracked there at 3–6 mm against a
  9 mm limit from iteration 700 and, released at 1050, tracked at 0.5, 0.75
  and 1 in its next three checks. (Doubling over every fall-back instead held the kick and
  the H1's wave, which had fallen back from 1, 0.75 and 0.5 once each, at
  0.25 for 64 checks; released, the H1 tracked at 0.5, 0.75 and 1 in the
  next three.)
  ``null`` turns it off.
- ``falls``: the fall rate of every ``num_envs`` finished training episodes,
  with the same thresholds (``raise_on`` does not apply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from primebot.pipeline.api import CheckpointError, ConfigError

KEYS = ("start", "signal", "step", "raise_on", "raise_below", "lower_above", "fall_back_after",
        "release_below")
SIGNALS = ("falls", "verdict")
RAISE_ON = ("tracked", "stays_up")
DEFAULTS = {"start": None, "signal": "verdict", "step": 0.25, "raise_on": "tracked",
            "raise_below": 0.3,
            "lower_above": 0.6, "fall_back_after": 8, "release_below": 0.6}
"""What a key left out of ``randomization.curriculum`` means; ``start`` None (or no mapping at all)
is off."""


class RandomizationCurriculum:
    """Strength of the randomisation in [0, 1], moved by the fall rate of finished episodes."""

    def __init__(self, config: Mapping[str, Any] | None, window: int) -> None:
        """``config`` None or ``start`` None: no curriculum, strength 1 throughout. ``window``:
        episodes per decision."""
        cfg = dict(config or {})
        unknown = sorted(set(cfg) - set(KEYS))
        if unknown:
            raise ConfigError(f"tracking task: unknown key(s) {', '.join(unknown)} in "
                              "randomization.curriculum",
                              fix=f"known keys: {', '.join(KEYS)} (see docs/tasks.md)")
        cfg = {**DEFAULTS, **cfg}
        self.enabled = cfg["start"] is not None
        self.start = float(cfg["start"]) if self.enabled else 1.0
        self.signal = str(cfg["signal"])
        if self.signal not in SIGNALS:
            raise ConfigError("tracking task: randomization.curriculum.signal must be one of "
                              f"{', '.join(SIGNALS)}, "
                              f"not {self.signal!r}",
                              fix="--set task.randomization.curriculum.signal=verdict")
        self.raise_on = str(cfg["raise_on"])
        if self.raise_on not in RAISE_ON:
            raise ConfigError("tracking task: randomization.curriculum.raise_on must be one of "
                              f"{', '.join(RAISE_ON)}, "
                              f"not {self.raise_on!r}",
                              fix="--set task.randomization.curriculum.raise_on=tracked")
        self.step = float(cfg["step"])
        self.raise_below, self.lower_above = float(cfg["raise_below"]), float(cfg["lower_above"])
        if not (0.0 <= self.start <= 1.0 and 0.0 < self.step <= 1.0
                and 0.0 <= self.raise_below <= self.lower_above <= 1.0):
            raise ConfigError(
                "tracking task: randomization.curriculum needs 0 ≤ start ≤ 1, 0 < step ≤ 1 and "
                f"0 ≤ raise_below ≤ lower_above ≤ 1; got start={self.start}, step={self.step}, "
                f"raise_below={self.raise_below}, lower_above={self.lower_above}",
                fix="--set task.randomization.curriculum.start=0.0 (or curriculum=null for full "
                    "strength)")
        fall_back_after = cfg["fall_back_after"]
        self.fall_back_after = None if fall_back_after is None else int(fall_back_after)
        if self.fall_back_after is not None and self.fall_back_after < 1:
            raise ConfigError("tracking task: randomization.curriculum.fall_back_after must be a "
                              "number of checks "
                              f"≥ 1 or null, not {fall_back_after!r}",
                              fix="--set task.randomization.curriculum.fall_back_after=8 (or null: "
                                  "never)")
        release_below = cfg["release_below"]
        if release_below is not None and (isinstance(release_below, bool)
                                          or not isinstance(release_below, (int, float))
                                          or not 0.0 <= release_below <= 1.0):
            raise ConfigError("tracking task: randomization.curriculum.release_below must be a "
                              f"fraction of the verdict's MPKPE limit in [0, 1] or null, not "
                              f"{release_below!r}",
                              fix="--set task.randomization.curriculum.release_below=0.6 (or null: "
                                  "a hold always runs its course)")
        self.release_below = None if release_below is None else float(release_below)
        self.window = max(1, int(window))
        self.strength = self.start if self.enabled else 1.0
        self.finished = 0
        self.fell = 0
        self.untracked = 0
        """Verdict checks in a row at this strength that did not track."""
        self.hold = 0
        """Verdict checks left before the strength may rise again (after a fall-back)."""
        self.fall_backs: dict[float, int] = {}
        """Fall-backs so far from each strength."""

    @property
    def follows_falls(self) -> bool:
        """True when training episodes move the strength (``record``), False when verdict checks
        do."""
        return self.enabled and self.signal == "falls"

    def record(self, finished: int, fell: int) -> bool:
        """Count ``finished`` training episodes of which ``fell`` ended in a fall; True when the
        strength changed."""
        if not self.follows_falls:
            return False
        self.finished += int(finished)
        self.fell += int(fell)
        if self.finished < self.window:
            return False
        rate = self.fell / self.finished
        self.finished = self.fell = 0
        return self._move(up=rate < self.raise_below, down=rate > self.lower_above)

    def observe_verdict(self, success_rate: float | None, tracked: bool,
                        mpkpe_share: float | None = None) -> bool:
        """A verdict check's success rate (nominal episodes), whether it tracked and its MPKPE as a
        share of the verdict's limit; True when the strength changed."""
        if not self.enabled or self.signal != "verdict" or success_rate is None:
            return False
        fall_rate = 1.0 - float(success_rate)
        self.hold = max(0, self.hold - 1)
        if (self.hold and tracked and self.release_below is not None and mpkpe_share is not None
                and mpkpe_share <= self.release_below):
            # tracked with room to spare: the policy has outgrown the strength it fell back to
            self.hold = 0
        self.untracked = 0 if tracked else self.untracked + 1
        if (self.fall_back_after is not None and self.untracked >= self.fall_back_after
                and fall_rate <= self.lower_above and self.strength > 0.0):
            # a strength the policy has not tracked in fall_back_after checks: back to the one
            # below, and stay
            before = self.fall_backs.get(self.strength, 0)
            self.hold = self.fall_back_after * 2 ** (before + 1)
            self.fall_backs[self.strength] = before + 1
            return self._move(up=False, down=True)
        up = tracked if self.raise_on == "tracked" else fall_rate < self.raise_below
        return self._move(up=up and self.hold == 0, down=fall_rate > self.lower_above)

    def _move(self, *, up: bool, down: bool) -> bool:
        """A step up if ``up``, else a step down if ``down``; True when the strength changed."""
        before = self.strength
        if up:
            self.strength = min(1.0, round(self.strength + self.step, 9))
        elif down:
            self.strength = max(0.0, round(self.strength - self.step, 9))
        if self.strength != before:
            self.untracked = 0
        return self.strength != before

    def metrics(self) -> dict[str, float]:
        return {"randomization/strength": self.strength}

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"strength_finished_fell": np.array([self.strength, self.finished, self.fell],
                                                   np.float64),
                "untracked_hold": np.array([self.untracked, self.hold], np.int64),
                "fall_backs_by_strength": np.array(sorted(self.fall_backs.items()),
                                                   np.float64).reshape(-1, 2)}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        strength, finished, fell = (float(x) for x in state["strength_finished_fell"])
        self.strength, self.finished, self.fell = strength, int(finished), int(fell)
        if "untracked_hold" not in state or "fall_backs_by_strength" not in state:
            raise CheckpointError(
                "the checkpoint's curriculum state has no fall-back counts: an older primebot "
                "wrote it",
                fix="retrain the run with this primebot, or use the primebot that trained it",
            )
        self.untracked, self.hold = (int(x) for x in state["untracked_hold"])
        self.fall_backs = {float(strength): int(count)
                           for strength, count in state["fall_backs_by_strength"]}
