"""pipeline.json: the record of one pipeline run, rewritten atomically at every change.

It holds the resolved settings, the overall status, one ``StageRecord`` per
registered stage (status, times, outputs, summary, warnings, error) and the
history of attempts. Whatever stops the process leaves a file that says
which stages finished; ``--resume`` reads it back.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..atomic import atomic_write_text
from ..errors import ConfigError
from ..rundir import PIPELINE_FILE
from .contract import Stage
from .presets import PipelineSettings

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

STATUSES = ("pending", "running", "done", "failed", "skipped", "interrupted")
"""A stage's status. ``interrupted``: stopped by a signal, resumable."""


def now_iso() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


@dataclass
class StageRecord:
    """One stage's line in pipeline.json."""

    name: str
    plugin: str = ""
    description: str = ""
    status: str = "pending"
    reason: str = ""
    """Why it was skipped, or why it did not run."""
    started: str | None = None
    finished: str | None = None
    duration_s: float | None = None
    """Seconds of the latest attempt."""
    total_s: float = 0.0
    """Seconds over every attempt (a resumed train stage adds up)."""
    attempts: int = 0
    outputs: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    """``{"type", "message", "fix", "exit_code"}`` of a failed stage."""
    sequence: int = 0
    """When the stage last finished done, counted over the run (1, 2, …): a done stage whose
    upstream stage has a higher number is out of date and runs again."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The values of the settings the stage depends on (``Stage.settings``) when it last finished
    done."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in known})


class PipelineRecord:
    """pipeline.json of one run directory: settings, overall status and the stage records."""

    def __init__(self, run_dir: Path, settings: PipelineSettings,
                 stages: list[StageRecord]) -> None:
        self.run_dir = run_dir
        self.path = run_dir / PIPELINE_FILE
        self.settings = settings
        self.stages = stages
        self.status = "pending"
        self.created = now_iso()
        self.history: list[dict[str, Any]] = []
        self.report_error: str | None = None

    def stage(self, name: str) -> StageRecord:
        return next(record for record in self.stages if record.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "primebot_version": __version__,
            "status": self.status,
            "created": self.created,
            "updated": now_iso(),
            "settings": self.settings.to_dict(),
            "stages": [asdict(record) for record in self.stages],
            "history": self.history,
            "report_error": self.report_error,
        }

    def save(self) -> None:
        """Rewrite pipeline.json atomically (a reader never sees half a file)."""
        atomic_write_text(self.path,
                          json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> PipelineRecord:
        """Read a run's pipeline.json; a missing or broken file names the run directory."""
        path = run_dir / PIPELINE_FILE
        if not path.is_file():
            raise ConfigError(
                f"{run_dir} has no {PIPELINE_FILE}: not a pipeline run directory",
                fix="pass the directory printed by 'primebot pipeline run' "
                    "(logs/<run-name>/<timestamp>)",
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path} is unreadable: {exc}", fix="start a new run") from None
        record = cls(run_dir, PipelineSettings.from_dict(data.get("settings", {})),
                     [StageRecord.from_dict(item) for item in data.get("stages", [])])
        record.status = data.get("status", "pending")
        record.created = data.get("created", record.created)
        record.history = list(data.get("history", []))
        return record


def format_duration(value: float | None) -> str:
    """Seconds as ``12.3s``, ``4m05s`` or ``1h02m`` (``-`` when unknown)."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f}s"
    minutes, seconds = divmod(int(round(value)), 60)
    return f"{minutes}m{seconds:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def new_record(run_dir: Path, settings: PipelineSettings,
               stages: list[tuple[Stage, str]]) -> PipelineRecord:
    """A fresh pipeline.json for ``run_dir`` with every stage pending."""
    return PipelineRecord(run_dir, settings, [
        StageRecord(stage.name, plugin, stage.description) for stage, plugin in stages
    ])


def resumed_record(run_dir: Path, stages: list[tuple[Stage, str]]) -> PipelineRecord:
    """The run's pipeline.json with its stages matched to the ones registered now.

    A stage a newly installed plugin adds starts pending; a stage whose
    plugin is gone is dropped from the record (with a warning).
    """
    record = PipelineRecord.load(run_dir)
    old = {r.name: r for r in record.stages}
    merged = []
    for stage, plugin in stages:
        kept = old.pop(stage.name, None)
        merged.append(kept or StageRecord(stage.name, plugin, stage.description))
        if merged[-1].status == "done" and stage.settings and not merged[-1].settings:
            raise ConfigError(
                f"{run_dir / PIPELINE_FILE} records stage {stage.name!r} done without the settings "
                "it ran with: an older primebot wrote it",
                fix="start a new run with this primebot, or use the primebot that started it",
            )
    for name in old:
        log.warning("stage %r of %s is no longer registered; dropped from pipeline.json", name,
                    run_dir)
    record.stages = merged
    return record
