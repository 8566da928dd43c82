"""report.html's robustness section: verdict banner, the sentence, the plot of success against
level, the table."""

from __future__ import annotations

from pathlib import Path

from primebot.pipeline.deploy.perturbations import cells
from primebot.pipeline.deploy.robust_verdict import robustness_verdict
from primebot.pipeline.report.robustness import PLOT, robustness_section


def _stress_report() -> dict:
    rows = []
    for cell in cells():
        hard = cell.family == "push" and cell.level >= 0.2
        rows.append({"family": cell.family, "level": cell.level, "label": cell.label(2.21),
                     "standard": cell.standard,
                     "policy": {"success_rate": 0.62 if hard else 1.0, "mpkpe_m": 0.01,
                                "failures": {"ee_height": 6} if hard else {}},
                     "replay": {"success_rate": 0.5 if hard else 1.0, "mpkpe_m": 0.009,
                                "statue_mpkpe_m": 0.017},
                     "statue": {"success_rate": 0.06, "mpkpe_m": 0.014}})
    report = {"cells": rows, "loop": {"episodes": 1536, "window_steps": 200, "physics_hz": 500.0},
              "start_steps": list(range(16))}
    report["verdict"] = robustness_verdict(report)
    return report


def test_the_section_leads_with_the_verdict_and_draws_every_family(tmp_path: Path):
    report = _stress_report()
    html = robustness_section(tmp_path, report)
    assert '<span class="big">NOT ROBUST</span>' in html and "push 0.44 m/s: 0.62" in html
    assert (
        "The policy survives 11 of 12 standard perturbations (replaying the reference: 11)" in html
    )
    assert f'src="{PLOT}"' in html and (tmp_path / PLOT).stat().st_size > 10_000
    # one table row per standard level, and the nominal cell
    assert html.count("<tr><td>") == 1 + sum(row["standard"] for row in report["cells"])
    assert "ee_height 6" in html


def test_without_a_stress_test_the_section_says_how_to_get_one(tmp_path: Path):
    assert "No stress test yet" in robustness_section(tmp_path, None)
    assert not (tmp_path / PLOT).exists()
