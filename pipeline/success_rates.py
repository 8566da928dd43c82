"""When a success rate is high enough: the robustness line, when a count of episodes cannot yet
tell a rate from it, and how to print a rate beside that line.

Shared by the stress test (``deploy.stress``: more starts for a standard cell too near the line),
training's stop rule (``train.verdict_checks``: more checks, then a confirmation) and the
evaluation that feeds both (``evaluate``); a module of its own so that training reads it without
importing evaluation.
"""

from __future__ import annotations

import math

import numpy as np

ROBUST_SUCCESS = 0.9
"""The success rate a policy needs under every standard perturbation to be ROBUST (the stress test,
``deploy.stress``; training's robustness checks, ``evaluate.evaluate_run.VerdictProbe``)."""


def rate_text(rate: float, threshold: float = ROBUST_SUCCESS) -> str:
    """``rate`` with two decimals, or three where two would round it up to the ``threshold`` it
    falls short of: 115 of 128 is "0.898", not "0.90" beside a line of 0.90."""
    text = f"{rate:.2f}"
    if rate < threshold and float(text) >= threshold:
        text = f"{math.floor(rate * 1000) / 1000:.3f}"
    return text


CONFIRM_Z = 1.645
"""A success rate is ``undecided`` while its 90 % Wilson interval holds ``ROBUST_SUCCESS``: of 32
episodes, 27 to 31 successes (0.84–0.97); 26 or 32 decide."""


def undecided(successes: list[bool], threshold: float = ROBUST_SUCCESS,
              z: float = CONFIRM_Z) -> bool:
    """Whether ``successes`` cannot tell a success rate from ``threshold`` (Wilson score
    interval): the stress test then runs more starts of that cell, training's stop rule more
    checks."""
    n = len(successes)
    if n == 0:
        return False
    p = sum(successes) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return bool(centre - half <= threshold <= centre + half)
