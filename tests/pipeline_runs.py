"""Finding and reading a pipeline run directory (tests' shared helper)."""

from __future__ import annotations

import json
from pathlib import Path


def only_run_dir(log_dir: Path) -> Path:
    dirs = [p.parent for p in log_dir.rglob("pipeline.json")]
    assert len(dirs) == 1, dirs
    return dirs[0]


def read_pipeline(run_dir: Path) -> dict:
    return json.loads((run_dir / "pipeline.json").read_text(encoding="utf-8"))
