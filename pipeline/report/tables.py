"""Metrics as console tables: what ``primebot eval`` and ``primebot sim2sim`` print (eval.json, sim2sim.json)."""

from __future__ import annotations

SHOWN = ("success_rate", "fall_rate", "mean_episode_length_s", "mpkpe_m", "mpkpe_root_relative_m",
         "joint_pos_error_rad", "joint_vel_error_rad_s", "ee_pos_error_m", "anchor_pos_error_m", "anchor_ori_error_rad")


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
