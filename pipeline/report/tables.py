"""Metrics as console tables: what ``primebot eval`` and ``primebot sim2sim`` print (eval.json,
sim2sim.json), and the summary and line their stages (and the commands on a pipeline run) record in
pipeline.json."""

from __future__ import annotations

from typing import Any

SHOWN = ("success_rate", "fall_rate", "mean_episode_length_s", "mpkpe_m", "mpkpe_root_relative_m",
         "joint_pos_error_rad", "joint_vel_error_rad_s", "ee_pos_error_m", "anchor_pos_error_m",
         "anchor_ori_error_rad")


def metrics_table(groups: dict[str, dict]) -> str:
    """Metrics side by side, one column per episode group."""
    names = [g for g in groups if groups[g]]
    lines = [f"{'metric':<24}" + "".join(f"{g:>14}" for g in names)]
    for key in ("episodes", *SHOWN):
        cells = []
        for g in names:
            value = groups[g].get(key)
            cells.append(f"{value:>14.4g}" if isinstance(value, (int, float)) else f"{'-':>14}")
        lines.append(f"{key:<24}" + "".join(cells))
    return "\n".join(lines)


def scalar_table(metrics: dict) -> str:
    """A task's own metrics, one per line (its scalar values only; lists stay in eval.json)."""
    lines = []
    for key, value in metrics.items():
        if isinstance(value, bool):
            lines.append(f"{key:<28}{'yes' if value else 'no':>14}")
        elif isinstance(value, (int, float)):
            lines.append(f"{key:<28}{value:>14.4g}")
    return "\n".join(lines)


SUMMARY_KEYS = ("success_rate", "fall_rate", "mpkpe_m", "statue_mpkpe_m", "fraction_removed",
                "joint_pos_error_rad",
                "episodes")
"""The headline metrics a stage's pipeline.json summary keeps."""


def metrics_summary(metrics: dict[str, Any]) -> dict[str, Any]:
    """pipeline.json's summary of a metrics report's headline (``report.page.headline_metrics``):
    the figures of ``SUMMARY_KEYS`` and, where the report judged it, ``tracked`` and the
    ``verdict``'s reason."""
    out = {key: metrics[key] if isinstance(metrics[key], int) else round(float(metrics[key]), 4)
           for key in SUMMARY_KEYS if metrics.get(key) is not None}
    verdict = metrics.get("verdict") or {}
    if isinstance(verdict.get("tracked"), bool):
        out["tracked"], out["verdict"] = verdict["tracked"], verdict["reason"]
    return out


def metrics_headline(metrics: dict[str, Any]) -> str:
    """One line for a metrics report's headline: the verdict's label, success, MPKPE, statue,
    episodes."""
    parts = []
    if "success_rate" in metrics:
        parts.append(f"success {metrics['success_rate']:.2f}")
    if "mpkpe_m" in metrics:
        parts.append(f"MPKPE {metrics['mpkpe_m']:.3f} m")
    if "statue_mpkpe_m" in metrics:
        parts.append(f"statue {metrics['statue_mpkpe_m']:.3f} m")
    if "episodes" in metrics:
        parts.append(f"{metrics['episodes']} episodes")
    verdict = metrics.get("verdict") or {}
    head = f"{verdict['label'].upper()}: " if verdict.get("label") else ""
    return head + ", ".join(parts)
