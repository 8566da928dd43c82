"""The training curves of report.html: one PNG per curve of train.csv.

Rendered with matplotlib (Agg, no display) into ``report/`` of the run
directory; which curves a CSV gives and how each is drawn is train/training_curves.py
(the same figures train.png shows in one grid): reward and episode return,
the verdict checks, every reward term's per-episode sum, episode length and
randomisation strength, losses, action std and entropy, learning rate and
KL, terminations and throughput.
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import atomic_path
from ..rundir import CSV_FILE
from ..train.log import read_csv_rows
from ..train.training_curves import curve_specs, draw_curve, pyplot

PLOT_DIR = "report"


def render_curves(run_dir: Path) -> list[tuple[str, str]]:
    """Draw one PNG per curve into ``report/``; returns (relative path, title) pairs."""
    csv_path = run_dir / CSV_FILE
    if not csv_path.is_file():
        return []
    header, rows = read_csv_rows(csv_path)
    if not rows:
        return []
    plt = pyplot()
    out = []
    for spec in curve_specs(header):
        tall = spec.legend_below and len(spec.left) > 3
        fig, ax = plt.subplots(figsize=(6.4, 4.0 if tall else 3.4), dpi=100,
                               constrained_layout=True)
        if not draw_curve(fig, ax, rows, spec, figure_legend=True):
            plt.close(fig)
            continue
        relative = f"{PLOT_DIR}/{spec.stem}.png"
        with atomic_path(run_dir / relative) as tmp:
            fig.savefig(tmp, format="png")
        plt.close(fig)
        out.append((relative, spec.title))
    return out
