"""Is an exported policy ROBUST? The verdict from a stress report's cells, and when a cell's
success rate is too near the threshold to call (docs/deploy.md, "Before you deploy: the stress
report" and "How many starts")."""

from __future__ import annotations

import numpy as np

from ..evaluate.metrics import tracking_verdict, where_episodes_fail
from ..evaluate.push_direction import weakest_direction
from ..success_rates import ROBUST_SUCCESS, rate_text
from .perturbations import NOMINAL

MOST_NAMED = 3
"""The most standard levels the reason names, the weakest first; the rest are counted (the
report's table and stress.json have every one)."""


def robustness_verdict(report: dict, min_success: float = ROBUST_SUCCESS) -> dict:
    """ROBUST or not, and what the network adds over replaying the reference, from a stress report's
    cells.

    ``robust``: the policy's success is at least ``min_success`` at every standard level of every
    family. ``replay_does_as_well``: replaying the reference with no policy tracks the motion
    undisturbed (``tracking_verdict``) and succeeds at least as often as the policy at every
    standard level: then this motion needs no policy, and the sentence says so.
    """
    rows = report["cells"]
    standard = [r for r in rows if r["standard"]]
    nominal = next((r for r in rows if r["family"] == NOMINAL), None)
    failing = [r for r in standard if not r["policy"]["success_rate"] >= min_success]
    short = [f"{r['family']} {r['label']}: {rate_text(r['policy']['success_rate'], min_success)}"
             + where_episodes_fail(r["policy"]) + weakest_direction(r["policy"], min_success)
             for r in failing]
    robust = bool(standard) and not short
    replay_short = [r for r in standard if not r["replay"]["success_rate"] >= min_success]
    replay_tracked = bool(nominal and tracking_verdict(nominal["replay"]).get("tracked"))
    gains = [r["policy"]["success_rate"] - r["replay"]["success_rate"] for r in rows
             if r["family"] != NOMINAL]
    mean_gain = float(np.mean(gains)) if gains else 0.0
    as_well = replay_tracked and all(r["replay"]["success_rate"] >= r["policy"]["success_rate"]
                                     for r in standard)
    push = next((r for r in standard if r["family"] == "push"), None)
    at_push = (f"at the standard push ({push['label']}) the policy succeeds in "
               f"{push['policy']['success_rate']:.0%} "
               f"of the episodes, replaying the reference in "
               f"{push['replay']['success_rate']:.0%}") if push else ""
    adds = (
        f"over every perturbation the network adds {mean_gain:+.2f} to the success rate on average"
    )
    if as_well:
        sentence = ("Replaying the reference under PD with no policy does as well: this motion "
                    "needs no policy; "
                    f"{adds}" + (f" ({at_push})" if at_push else "") + ".")
    else:
        sentence = (f"The policy survives {len(standard) - len(short)} of {len(standard)} standard "
                    "perturbations "
                    f"(replaying the reference: {len(standard) - len(replay_short)}); {adds}"
                    + (f"; {at_push}" if at_push else "") + ".")
    return {
        "robust": robust,
        "label": "robust" if robust else "not robust",
        "min_success_rate": min_success,
        "short_of": short,
        "reason": _reason(standard, failing, short, nominal, min_success),
        "replay_tracked": replay_tracked,
        "replay_robust": bool(standard) and not replay_short,
        "replay_does_as_well": as_well,
        "mean_success_gain_over_replay": mean_gain,
        "sentence": sentence,
    }


def _reason(standard: list[dict], failing: list[dict], short: list[str], nominal: dict | None,
            min_success: float) -> str:
    """Why the policy is ROBUST or not, in one line: the levels it fails, at most ``MOST_NAMED`` of
    them by name (the weakest first); or that it fails undisturbed already, where every level's
    failure is the tracking's."""
    if not standard:
        return "no standard levels run"
    if not failing:
        return f"success ≥ {min_success:.2f} at every standard level ({len(standard)})"
    if nominal and not nominal["policy"]["success_rate"] >= min_success:
        return (f"success < {min_success:.2f} undisturbed already (nominal: "
                f"{rate_text(nominal['policy']['success_rate'], min_success)}"
                f"{where_episodes_fail(nominal['policy'])}), and at {len(failing)} of the "
                f"{len(standard)} standard levels: make it track its motion first "
                '(docs/tasks.md, "When a motion does not track")')
    weakest = sorted(range(len(failing)), key=lambda i: failing[i]["policy"]["success_rate"])
    named = [short[i] for i in sorted(weakest[:MOST_NAMED])]
    more = len(failing) - len(named)
    return (f"success < {min_success:.2f} at " + "; ".join(named)
            + (f"; and {more} more standard level{'s' if more > 1 else ''} (stress.json)"
               if more else ""))
