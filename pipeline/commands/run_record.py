"""What a single-stage command leaves in a pipeline run it worked on: pipeline.json and report.html.

Not a command itself: ``primebot train --resume``, ``eval``, ``export``, ``sim2sim`` and ``stress``
call ``note_in_pipeline`` while they hold the run's lock, so a run directory made by ``pipeline
run`` keeps saying what was done to it (``stages.command_record.record_command``) and its report
shows the policy on disk.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from ..hooks.host import PluginHost
from ..rundir import REPORT_FILE
from ..stages.command_record import record_command

log = logging.getLogger(__name__)


def note_in_pipeline(host: PluginHost, run_dir: str | Path, stage: str, **outcome: Any) -> bool:
    """Record the command's ``outcome`` as ``stage`` of the pipeline run ``run_dir`` (keywords of
    ``record_command``) and rewrite its report.html; False when ``run_dir`` is no pipeline run."""
    run_dir = Path(run_dir)
    context = click.get_current_context(silent=True)
    outcome.setdefault("command", context.command_path if context is not None else "")
    if not record_command(host.registry, run_dir, stage, **outcome):
        return False
    click.echo(f"recorded as the {stage} stage in {run_dir}/pipeline.json (primebot pipeline run "
               "--resume "
               f"{run_dir} reruns what this made out of date)")
    if (run_dir / REPORT_FILE).is_file():
        from ..report.page import write_report

        try:
            write_report(run_dir)
        # a broken report must not hide what the command did
        except Exception as exc:  # noqa: BLE001
            click.echo(
                f"warning: {REPORT_FILE} could not be rewritten: {type(exc).__name__}: {exc}"
            )
            log.debug("report failed", exc_info=True)
    return True
