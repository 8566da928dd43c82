"""What report.html may show as current: results of the policy on disk, a verdict only for a
finished run.

``run_currency(run_dir, pipeline)`` judges the run directory once per
report (docs/architecture.md §6, train/provenance.py): a result file made
from another policy than the one the run holds now (after a rerun of train,
a standalone ``primebot train --resume``, an interrupted rerun, a file copied
in from another run) is left out of the metrics, the verdict and the videos,
and named in a notice instead. For a pipeline run the page leads with a
verdict only when pipeline.json says the run finished, as the pipeline's
last line does; a run in progress, stopped or failed gets the notice and no
banner verdict. A page written while the run is in progress (at the start of
each attempt) shows no result at all: the process may replace any of them
after the page was written, and if it is killed the page stays as it is.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rundir import read_result
from ..train.provenance import Staleness, covered, results, stale_results


@dataclass
class Currency:
    """The run directory as the report may present it."""

    run_dir: Path
    staleness: Staleness
    final: bool
    """Whether the page may lead with a verdict (no pipeline.json, or a pipeline run that
    finished)."""
    why_not_final: str = ""
    _docs: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def read(self, name: str) -> dict[str, Any] | None:
        """The JSON result ``name`` when it exists and was made from the run's current policy, else
        None."""
        if name not in self._docs:
            self._docs[name] = (
                None if self.staleness.reason(name) else read_result(self.run_dir / name)
            )
        return self._docs[name]

    def stale(self, relative: str) -> str:
        """Why the file at ``relative`` is not current, or ''."""
        return self.staleness.reason(relative)

    def notice(self) -> str:
        """HTML: why the page shows no verdict, and which files it leaves out as stale (empty when
        neither)."""
        items = []
        if not self.final and self.why_not_final:
            items.append(f"<div>{html.escape(self.why_not_final)}</div>")
        if self.staleness.stale:
            listed = "".join(f"<li><code>{html.escape(path)}</code>: {html.escape(why)}</li>"
                             for path, why in sorted(self.staleness.stale.items())
                             if not path.endswith(".mp4"))
            items.append("<div>Left out (<code>primebot pipeline run --resume "
                         f"{html.escape(str(self.run_dir))}</code> makes them "
                         f"again):<ul>{listed}</ul></div>")
        if self.staleness.unknown:
            items.append("<div>Which results are current could not be checked: "
                         f"{html.escape(self.staleness.unknown)}"
                         "</div>")
        return f'<div class="verdict unknown stale">{"".join(items)}</div>' if items else ""


def run_currency(run_dir: Path, pipeline: dict[str, Any] | None) -> Currency:
    """Judge ``run_dir`` for its report; ``pipeline`` is its pipeline.json (None for a run made by
    hand)."""
    final, why = True, ""
    if pipeline is not None:
        status = pipeline.get("status", "pending")
        final = status == "done"
        stopped = next((r.get("name") for r in pipeline.get("stages", [])
                        if r.get("status") in ("failed", "interrupted", "running")), None)
        resume = f"primebot pipeline run --resume {run_dir}"
        if status == "running":
            why = (f"The run is in progress{f' ({stopped})' if stopped else ''}, or its process "
                   "was killed: "
                   f"no verdict until it finishes (if it was killed: {resume}).")
        elif status in ("failed", "interrupted"):
            why = (
                f"The run {status}{f' at {stopped}' if stopped else ''}: no verdict until it "
                f"finishes ({resume})."
            )
        elif not final:
            pending = [r.get("name") for r in pipeline.get("stages", [])
                       if r.get("status") == "pending"]
            why = (f"Stages to run for the policy on disk: {', '.join(pending) or 'some'}; no "
                   "verdict until they "
                   f"have ({resume}).")
    staleness = stale_results(run_dir)
    if pipeline is not None and pipeline.get("status") == "running":
        why_held = (
            "written while the run was in progress: the run may replace it after this page was "
            "written"
        )
        for record, document in results(run_dir).items():
            for path in covered(record, document):
                staleness.stale.setdefault(path, f"{record} {why_held}")
    return Currency(run_dir, staleness, final, why)
