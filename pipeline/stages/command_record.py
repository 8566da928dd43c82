"""A single-stage command's outcome, recorded in the pipeline run it worked on.

``primebot train --resume``, ``eval``, ``export``, ``sim2sim`` and ``stress`` on a pipeline run
leave its pipeline.json saying what was done, as the stage would have, and mark what that change
outdates as pending, so the record never claims results the run directory no longer has.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..registry import Registry
from ..rundir import PIPELINE_FILE
from .record import now_iso, resumed_record
from .stage_runner import error_dict, ordered_stages
from .staleness import Staleness


def record_command(registry: Registry, run_dir: str | Path, stage: str, *, status: str = "done",
                   outputs: dict[str, str] | None = None, summary: dict[str, Any] | None = None,
                   message: str = "",
                   warnings: Sequence[str] = (), error: BaseException | None = None,
                   settings: dict[str, Any] | None = None, command: str = "",
                   reason: str = "") -> bool:
    """Record in a pipeline run's pipeline.json what a single-stage command did to it, as its stage
    would have.

    ``primebot train --resume``, ``eval``, ``export``, ``sim2sim`` and ``stress`` on a pipeline run
    call this (holding the run's lock; ``command`` names it): the stage gets the command's outcome
    and a new ``sequence``, ``settings`` (e.g. train's ``iterations``) are updated, and every stage
    the change outdates is marked pending (``Staleness.settle``), so a following ``pipeline run
    --resume`` reruns exactly what is out of date. Returns False (and records nothing) when
    ``run_dir`` is not a pipeline run or has no such stage.
    """
    run_dir = Path(run_dir)
    if not (run_dir / PIPELINE_FILE).is_file():
        return False
    stages = ordered_stages(registry)
    if stage not in [s.name for s, _ in stages]:
        return False
    record = resumed_record(run_dir, stages)
    for key, value in (settings or {}).items():
        setattr(record.settings, key, value)
    entry, now = record.stage(stage), now_iso()
    command = command or "primebot " + " ".join(sys.argv[1:])
    entry.attempts += 1
    entry.started = entry.finished = now
    entry.duration_s = None
    entry.status, entry.error = status, (error_dict(error) if error is not None else None)
    entry.reason = "" if status == "done" else reason or f"{command}: {status}"
    if status == "done":
        entry.sequence = max(r.sequence for r in record.stages) + 1
        entry.settings = {key: getattr(record.settings, key, None)
                          for key in next(s for s, _ in stages if s.name == stage).settings}
        entry.outputs, entry.summary = dict(outputs or {}), dict(summary or {})
        entry.message, entry.warnings = (
            f"{message} (by {command}, outside the pipeline)",
            list(warnings),
        )
    record.history.append({"started": now, "finished": now, "argv": sys.argv[1:], "stage": stage,
                           "status": status})
    Staleness(record, [s for s, _ in stages]).settle()
    if all(r.status in ("done", "skipped") for r in record.stages):
        record.status = "done"
    elif status != "done":
        record.status = status
    elif record.status == "done":
        record.status = "pending"  # work to do for the policy on disk: --resume does it
    record.save()
    return True
