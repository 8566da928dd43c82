"""Where a pushed episode's kick pointed, relative to the robot's heading when it landed, and how
often the policy survived each direction: the stress test's (docs/deploy.md, "Before you deploy:
the stress report") and training's verdict checks' pushed episodes alike.

A kick along a robot's feet and one across them are different tests: on q1 the standard push moves
the capture point past its toes or heels but not past the outer edges of its feet, so only a kick
from the front or behind takes a step.
"""

from __future__ import annotations

import numpy as np

from ..success_rates import ROBUST_SUCCESS

PUSH_DIRECTIONS = ("forward", "left", "backward", "right")
"""Where a push points relative to the robot's heading when it lands: four 90° sectors centred on
forward (the robot shoved from behind), left, backward and right."""


def push_sector(angle: np.ndarray) -> np.ndarray:
    """The ``PUSH_DIRECTIONS`` index of kicks at ``angle`` rad from the robot's heading
    (counter-clockwise seen from above, as yaw)."""
    turns = np.mod(np.asarray(angle, dtype=np.float64) / (2 * np.pi) + 1 / 8, 1.0)
    return np.minimum((turns * 4).astype(np.int64), 3)


def by_push_direction(records: list[dict]) -> dict[str, dict]:
    """Episodes and success rate per ``PUSH_DIRECTIONS`` sector of a push cell's episodes (a sector
    no push pointed to is left out)."""
    out = {}
    for name in PUSH_DIRECTIONS:
        ok = [r["failure"] is None for r in records if r.get("push_direction") == name]
        if ok:
            out[name] = {"episodes": len(ok), "success_rate": float(np.mean(ok))}
    return out


def push_directions_line(report: dict) -> str | None:
    """One line on the standard push's success by where it points, the policy beside replaying the
    reference (None without a standard push cell)."""
    push = next((row for row in report["cells"] if row["standard"] and row["family"] == "push"),
                None)
    if push is None or not push["policy"].get("by_direction"):
        return None
    replay = push["replay"].get("by_direction", {})
    parts = [f"{name} {figures['success_rate']:.2f}"
             + (f" ({replay[name]['success_rate']:.2f})" if name in replay else "")
             for name, figures in push["policy"]["by_direction"].items()]
    return (f"standard push ({push['label']}) by where it points, policy (replay): "
            + ", ".join(parts))


CLEARLY_WEAKER = 2.0
"""How many standard errors of the difference a side's success must lie below the other sides'
pooled success before the verdict names it: with 8 episodes a side (a 32-episode cell) a gap of
0.40 or more around a success of one half."""


def weakest_direction(figures: dict, min_success: float = ROBUST_SUCCESS) -> str:
    """``, weakest kicked backward: 0.12 of 8 (the other sides 0.67 of 24)`` for a push cell whose
    worst direction (``by_direction``) is below ``min_success`` and clearly below the other
    sides together (``CLEARLY_WEAKER`` standard errors of the difference of two success rates,
    pooled); empty otherwise: with a handful of episodes a side the worst one is often noise."""
    sectors = figures.get("by_direction") or {}
    if len(sectors) < 2:
        return ""
    name = min(sectors, key=lambda k: sectors[k]["success_rate"])
    worst = sectors[name]
    if worst["success_rate"] >= min_success:
        return ""
    n_worst = worst["episodes"]
    n_rest = sum(v["episodes"] for k, v in sectors.items() if k != name)
    ok_rest = sum(v["success_rate"] * v["episodes"] for k, v in sectors.items() if k != name)
    rest = ok_rest / n_rest
    pooled = (ok_rest + worst["success_rate"] * n_worst) / (n_rest + n_worst)
    spread = np.sqrt(pooled * (1.0 - pooled) * (1.0 / n_worst + 1.0 / n_rest))
    if rest - worst["success_rate"] <= CLEARLY_WEAKER * spread:
        return ""
    return (f", weakest kicked {name}: {worst['success_rate']:.2f} of {n_worst} "
            f"(the other sides {rest:.2f} of {n_rest})")
