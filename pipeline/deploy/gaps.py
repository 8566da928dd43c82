"""How far the deploy loop strays from evaluation: the gaps sim2sim.json flags (docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path

GAP_THRESHOLDS = {
    "success_rate": 0.2,
    "fall_rate": 0.2,
    "mpkpe_m": 0.05,
    "mpkpe_root_relative_m": 0.05,
    "joint_pos_error_rad": 0.1,
    "anchor_ori_error_rad": 0.2,
}
"""|sim2sim − eval| beyond these is flagged: the policy leans on something training had and the
robot lacks."""


def gap_flags(gaps: dict[str, float], thresholds: dict[str, float] | None = None) -> list[str]:
    """One line per metric whose sim2sim − eval difference is beyond its threshold."""
    thresholds = GAP_THRESHOLDS if thresholds is None else thresholds
    return [f"{key}: sim2sim − eval = {gaps[key]:+.4g} (threshold ±{limit:g})"
            for key, limit in thresholds.items() if key in gaps and not abs(gaps[key]) <= limit]


def checkpoint_flags(policy: dict, evaluation: dict) -> list[str]:
    """A flag when eval.json scored another checkpoint than the ONNX's ``policy`` metadata names."""
    exported = (policy.get("checkpoint"), str(policy.get("iteration")))
    evaluated = (Path(str(evaluation.get("checkpoint"))).name, str(evaluation.get("iteration")))
    if exported == evaluated:
        return []
    return [f"eval.json scored {evaluated[0]} (iteration {evaluated[1]}) but the ONNX holds "
            f"{exported[0]} (iteration {exported[1]}): the gaps compare different policies"]
