"""The training curves of report.html: one PNG per group of train.csv columns.

Rendered with matplotlib (Agg, no display) into ``report/`` of the run
directory: reward and episode return, every reward term's per-episode sum,
episode length, surrogate and value loss, action std and entropy, learning
rate and KL, terminations and throughput. Only the groups whose columns
train.csv has are drawn, so any task's CSV works.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_path
from ..rundir import CSV_FILE
from ..train.log import read_csv_rows

PLOT_DIR = "report"
NON_TERM_EPISODE_KEYS = {"episode/finished", "episode/length", "episode/return"}
"""``episode/*`` columns that are not reward terms."""


def _csv_series(rows: list[dict[str, str]], key: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for i, row in enumerate(rows):
        value = row.get(key)
        if value in (None, ""):
            continue
        try:
            y = float(value)
        except ValueError:
            continue
        if not math.isfinite(y):
            continue
        xs.append(float(row.get("iteration") or i + 1))
        ys.append(y)
    return xs, ys


@dataclass(frozen=True)
class Curve:
    """One training-curve PNG: columns on the left axis, optionally others on a right axis."""

    stem: str
    title: str
    left: tuple[str, ...]
    right: tuple[str, ...] = ()
    left_label: str = ""
    right_label: str = ""
    log: bool = False
    legend_below: bool = False


def curve_specs(header: list[str]) -> list[Curve]:
    """The curves train.csv can give, restricted to the columns it has."""
    terms = tuple(k for k in header if k.startswith("episode/") and k not in NON_TERM_EPISODE_KEYS)
    terminations = tuple(k for k in header if k.startswith("terminations/"))
    specs = [
        Curve("reward", "Reward", ("episode_return",), ("reward_mean",), "episode return", "mean reward per step"),
        Curve("reward_terms", "Reward terms (per-episode sums)", terms, left_label="sum over episode",
              legend_below=True),
        Curve("episode_length", "Episode length and randomisation strength", ("episode_length",),
              ("randomization/strength",), "steps", "strength (curriculum)"),
        Curve("losses", "Losses", ("loss_surrogate",), ("loss_value",), "surrogate", "value"),
        Curve("exploration", "Exploration", ("action_std",), ("entropy",), "action std", "entropy"),
        Curve("optimizer", "Learning rate and KL", ("learning_rate", "approx_kl"), log=True),
        Curve("terminations", "Terminations per iteration", terminations, left_label="envs", legend_below=True),
        Curve("throughput", "Throughput", ("sps",), left_label="env steps / s"),
    ]
    out = []
    for spec in specs:
        left = tuple(c for c in spec.left if c in header)
        right = tuple(c for c in spec.right if c in header)
        if left or right:
            out.append(dataclasses.replace(spec, left=left or right, right=right if left else ()))
    return out


_COLORS = ("#2d5fa8", "#d1495b", "#edae49", "#00798c", "#66a182", "#8d6a9f", "#30343f", "#e07a5f", "#81b29a")


def _draw(ax, rows: list[dict[str, str]], columns: tuple[str, ...], colors, log: bool) -> list:
    lines = []
    for column, color in zip(columns, colors, strict=False):
        xs, ys = _csv_series(rows, column)
        if not xs:
            continue
        label = column.removeprefix("episode/").removeprefix("terminations/")
        (line,) = ax.plot(xs, ys, label=label, color=color, linewidth=1.4,
                          marker="o" if len(xs) < 8 else None, markersize=3)
        lines.append(line)
        if log and min(ys) <= 0:
            log = False
    if log and lines:
        ax.set_yscale("log")
    return lines


def render_curves(run_dir: Path) -> list[tuple[str, str]]:
    """Draw one PNG per curve into ``report/``; returns (relative path, title) pairs."""
    csv_path = run_dir / CSV_FILE
    if not csv_path.is_file():
        return []
    header, rows = read_csv_rows(csv_path)
    if not rows:
        return []
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    out = []
    for spec in curve_specs(header):
        tall = spec.legend_below and len(spec.left) > 3
        fig, ax = plt.subplots(figsize=(6.4, 4.0 if tall else 3.4), dpi=100, constrained_layout=True)
        lines = _draw(ax, rows, spec.left, _COLORS, spec.log)
        if spec.right:
            twin = ax.twinx()
            lines += _draw(twin, rows, spec.right, _COLORS[len(spec.left):], spec.log)
            twin.set_ylabel(spec.right_label, fontsize=9)
            twin.tick_params(labelsize=8)
            twin.spines["top"].set_visible(False)
        if not lines:
            plt.close(fig)
            continue
        ax.set_title(spec.title, fontsize=11, loc="left")
        ax.set_xlabel("iteration", fontsize=9)
        ax.set_ylabel(spec.left_label, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.25)
        ax.spines["top"].set_visible(False)
        if not spec.right:
            ax.spines["right"].set_visible(False)
        labels = [line.get_label() for line in lines]
        if spec.legend_below:
            fig.legend(lines, labels, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
        else:
            ax.legend(lines, labels, fontsize=7, frameon=False, loc="best")
        relative = f"{PLOT_DIR}/{spec.stem}.png"
        with atomic_path(run_dir / relative) as tmp:
            fig.savefig(tmp, format="png")
        plt.close(fig)
        out.append((relative, spec.title))
    return out
