"""report.html's robustness section: the stress test's verdict, sentence, plot and standard levels.

Reads ``stress.json`` (``deploy.stress``); the plot (``report/stress.png``,
matplotlib on Agg) has one panel per perturbation family: the success rate
against the level, the policy beside replaying the reference with no policy
and the statue, the standard levels marked and the ROBUST bar at 0.9.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..atomic import atomic_path
from ..evaluate.push_direction import push_directions_line
from ..train.training_curves import pyplot
from .curves import PLOT_DIR

PLOT = f"{PLOT_DIR}/stress.png"
STYLE = {"policy": ("#2d5fa8", "-", "o"), "replay": ("#d1495b", "--", "s"),
         "statue": ("#8a94a3", ":", "^")}
"""Colour, line and marker of each controller."""


def render_stress_plot(run_dir: Path, report: dict[str, Any]) -> str | None:
    """Draw ``report/stress.png`` from a stress report; returns its relative path (None without
    cells)."""
    rows = report.get("cells") or []
    nominal = next((r for r in rows if r["family"] == "nominal"), None)
    families = list(dict.fromkeys(r["family"] for r in rows if r["family"] != "nominal"))
    if not families:
        return None
    plt = pyplot()
    cols = min(4, len(families))
    count = (len(families) + cols - 1) // cols
    fig, axes = plt.subplots(count, cols, figsize=(3.3 * cols, 2.7 * count), dpi=100, squeeze=False)
    minimum = (report.get("verdict") or {}).get("min_success_rate", 0.9)
    for ax, family in zip(axes.flat, families, strict=False):
        cells = ([nominal] if nominal else []) + [r for r in rows if r["family"] == family]
        x = range(len(cells))
        for controller, (color, line, marker) in STYLE.items():
            ax.plot(x, [c[controller]["success_rate"] for c in cells], color=color, linestyle=line,
                    marker=marker,
                    markersize=4, label=controller)
        for i, cell in enumerate(cells):
            if cell["standard"]:
                ax.axvspan(i - 0.3, i + 0.3, color="#edae49", alpha=0.25, linewidth=0)
        ax.axhline(minimum, color="#66a182", linewidth=0.8)
        ax.set_xticks(list(x), [c["label"] for c in cells], rotation=30, fontsize=7, ha="right")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(family, fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(families):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("success rate", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    with atomic_path(run_dir / PLOT) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return PLOT


def robustness_section(run_dir: Path, report: dict[str, Any] | None) -> str:
    """The section's HTML: the verdict banner and sentence, the plot, the table of standard
    levels."""
    if not report or not report.get("cells"):
        return ('<p class="empty">No stress test yet: stress.json appears after the stress stage '
                "(<code>primebot stress RUN_DIR</code>).</p>")
    verdict = report.get("verdict") or {}
    robust = bool(verdict.get("robust"))
    css, label = ("tracked", "ROBUST") if robust else ("untracked", "NOT ROBUST")
    parts = [f'<div class="verdict {css}"><span class="big">{label}</span><span '
             'class="src">stress</span> · '
             f"{_e(verdict.get('reason', ''))}</div>",
             f"<p>{_e(verdict.get('sentence', ''))}</p>"]
    plot = render_stress_plot(run_dir, report)
    if plot:
        parts.append(f'<div class="plots"><figure><img src="{plot}" alt="success rate against '
                     'perturbation level">'
                     "<figcaption>success rate per perturbation family and level: the policy, "
                     "replaying the "
                     "reference with no policy, the statue; shaded: the standard levels ROBUST "
                     "needs</figcaption>"
                     "</figure></div>")
    head = "".join(f"<th class='num'>{c} success</th><th class='num'>{c} MPKPE</th>" for c in STYLE)
    body = []
    for row in report["cells"]:
        if not (row["standard"] or row["family"] == "nominal"):
            continue
        figures = "".join(f"<td class='num'>{row[c]['success_rate']:.2f}</td>"
                          f"<td class='num'>{_mm(row[c].get('mpkpe_m'))}</td>" for c in STYLE)
        causes = ", ".join(f"{k} {v}" for k, v in row["policy"].get("failures", {}).items())
        body.append(f"<tr><td>{_e(row['family'])}</td><td>{_e(row['label'])}</td>{figures}"
                    f"<td>{_e(causes)}</td></tr>")
    loop = report.get("loop", {})
    parts.append(f"<p class='detail'>{loop.get('episodes', '?')} episodes of "
                 f"{loop.get('window_steps', '?')} steps "
                 f"from {len(report.get('start_steps', []))} start frames per cell above "
                 f"({len(report.get('graded_start_steps', []))} per graded level), physics "
                 f"{loop.get('physics_hz', 0):.0f} Hz; every level of every family is in "
                 "<a href='stress.json'><code>stress.json</code></a>.</p>")
    parts.append("<table><thead><tr><th>family</th><th>standard level</th>" + head +
                 "<th>policy failures</th></tr></thead><tbody>" + "".join(body)
                 + "</tbody></table>")
    directions = push_directions_line(report)
    if directions:
        parts.append(f"<p class='detail'>{_e(directions)}: forward is a kick from behind, "
                     "relative to the robot's heading when it lands.</p>")
    return "\n".join(parts)


def _mm(value: float | None) -> str:
    return "" if value is None else f"{1000 * value:.1f} mm"


def _e(text: Any) -> str:
    return html.escape(str(text))
