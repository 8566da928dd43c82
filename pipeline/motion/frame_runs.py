"""Runs of consecutive frames: where a per-frame flag holds, as (first, last + 1) pairs.

Shared by the checks that reason about stretches of a motion rather than single frames: the
validator's balance edge rule (a pose held near the edge of the feet) and the retargeter's foot
contacts (contact and swing phases).
"""

from __future__ import annotations

import numpy as np


def runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """(first, last + 1) of every run of True in ``flags``."""
    padded = np.concatenate(([False], np.asarray(flags, bool), [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
