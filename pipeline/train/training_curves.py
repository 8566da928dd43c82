"""Training curves: which figures train.csv's columns give, and how one is drawn.

One catalogue and one drawing routine for both places the curves appear:
``train.png`` (every curve in one grid, redrawn while training runs:
train/log.py) and report.html (one PNG per curve: report/curves.py). Only
the curves whose columns a run's CSV has are drawn, so any task's CSV works.
Rows are train.csv's (strings) or the logger's (numbers and None); a blank,
unparsable or non-finite value is skipped.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import atomic_path

NON_TERM_EPISODE_KEYS = {"episode/finished", "episode/length", "episode/return"}
"""``episode/*`` columns that are not reward terms."""

COLORS = ("#2d5fa8", "#d1495b", "#edae49", "#00798c", "#66a182", "#8d6a9f", "#30343f", "#e07a5f",
          "#81b29a")


@dataclass(frozen=True)
class Curve:
    """One figure: columns on the left axis, optionally others on a right axis."""

    stem: str
    title: str
    left: tuple[str, ...]
    right: tuple[str, ...] = ()
    left_label: str = ""
    right_label: str = ""
    log: bool = False
    legend_below: bool = False


def curve_specs(header: list[str]) -> list[Curve]:
    """The curves a CSV with these columns gives, restricted to the columns it has."""
    terms = tuple(k for k in header if k.startswith("episode/") and k not in NON_TERM_EPISODE_KEYS)
    terminations = tuple(k for k in header if k.startswith("terminations/"))
    # the checks' pushed episodes: all of them, then by where the kick pointed
    pushed = tuple(k for k in header if k.startswith("verdict/robust_"))
    specs = [
        Curve("reward", "Reward", ("episode_return",), ("reward_mean",), "episode return",
              "mean reward per step"),
        Curve("verdict", "Verdict checks (deterministic, no randomisation)",
              ("verdict/mpkpe_m", "verdict/statue_mpkpe_m"), ("verdict/success_rate",), "MPKPE (m)",
              "success rate"),
        Curve("pushed", "Verdict checks under the standard push: success", pushed,
              left_label="success rate", legend_below=True),
        Curve("reward_terms", "Reward terms (per-episode sums)", terms,
              left_label="sum over episode",
              legend_below=True),
        Curve("episode_length", "Episode length and randomisation strength", ("episode_length",),
              ("randomization/strength",), "steps", "strength (curriculum)"),
        Curve("losses", "Losses", ("loss_surrogate",), ("loss_value",), "surrogate", "value"),
        Curve("exploration", "Exploration", ("action_std",), ("entropy",), "action std", "entropy"),
        Curve("optimizer", "Learning rate and KL", ("learning_rate", "approx_kl", "approx_kl_last"),
              log=True),
        Curve("terminations", "Terminations per iteration", terminations, left_label="envs",
              legend_below=True),
        Curve("throughput", "Throughput", ("sps",), left_label="env steps / s"),
    ]
    out = []
    for spec in specs:
        left = tuple(c for c in spec.left if c in header)
        right = tuple(c for c in spec.right if c in header)
        if left or right:
            out.append(dataclasses.replace(spec, left=left or right, right=right if left else ()))
    return out


def series(rows: list[dict[str, Any]], column: str) -> tuple[list[float], list[float]]:
    """(iterations, values) of ``column`` over the rows that have a finite value in it."""
    xs, ys = [], []
    for i, row in enumerate(rows):
        value = row.get(column)
        if value in (None, ""):
            continue
        try:
            y = float(value)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(y):
            continue
        xs.append(float(row.get("iteration") or i + 1))
        ys.append(y)
    return xs, ys


def _lines(ax, rows: list[dict[str, Any]], columns: tuple[str, ...], colors, log: bool) -> list:
    lines = []
    for column, color in zip(columns, colors, strict=False):
        xs, ys = series(rows, column)
        if not xs:
            continue
        label = (
            column.removeprefix("episode/").removeprefix("terminations/").removeprefix("verdict/")
        )
        (line,) = ax.plot(xs, ys, label=label, color=color, linewidth=1.4,
                          marker="o" if len(xs) < 8 else None, markersize=3)
        lines.append(line)
        if log and min(ys) <= 0:
            log = False
    if log and lines:
        ax.set_yscale("log")
    return lines


def draw_curve(fig, ax, rows: list[dict[str, Any]], spec: Curve, *,
               figure_legend: bool = False) -> bool:
    """Draw ``spec`` into ``ax`` (a right axis is added when it has one); False when no column had
    data.

    ``figure_legend`` puts a long legend below the figure (a figure of its own), else it stays in
    the axes."""
    lines = _lines(ax, rows, spec.left, COLORS, spec.log)
    if spec.right:
        twin = ax.twinx()
        lines += _lines(twin, rows, spec.right, COLORS[len(spec.left):], spec.log)
        twin.set_ylabel(spec.right_label, fontsize=9)
        twin.tick_params(labelsize=8)
        twin.spines["top"].set_visible(False)
    if not lines:
        return False
    ax.set_title(spec.title, fontsize=11, loc="left")
    ax.set_xlabel("iteration", fontsize=9)
    ax.set_ylabel(spec.left_label, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.25)
    ax.spines["top"].set_visible(False)
    if not spec.right:
        ax.spines["right"].set_visible(False)
    labels = [line.get_label() for line in lines]
    if figure_legend and spec.legend_below:
        fig.legend(lines, labels, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    else:
        ax.legend(lines, labels, fontsize=7, frameon=False, loc="best")
    return True


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def render_grid(header: list[str], rows: list[dict[str, Any]], path: str | Path) -> None:
    """Every curve of ``header`` in one PNG (train.png), three to a row; written atomically."""
    specs = curve_specs(header)
    if not specs or not rows:
        return
    plt = pyplot()
    columns = 3
    count = math.ceil(len(specs) / columns)
    # fixed margins: constrained layout measures every tick label of every axis and doubled the time
    # of a redraw, which runs beside training every runner.plot_interval_s
    fig, axes = plt.subplots(count, columns, figsize=(15, 3.6 * count), squeeze=False)
    fig.subplots_adjust(left=0.05, right=0.95, bottom=0.06, top=0.95, wspace=0.42, hspace=0.42)
    for ax, spec in zip(axes.flat, specs, strict=False):
        if not draw_curve(fig, ax, rows, spec):
            ax.set_visible(False)
    for ax in list(axes.flat)[len(specs):]:
        ax.set_visible(False)
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)
