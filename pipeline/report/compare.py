"""Runs side by side (``primebot compare``): what their settings differ in and what each policy is
worth.

One column per run directory, one row per figure: the settings of ``args.yaml`` that differ between
the runs, the training (iterations, minutes, the verdict checks' success under the standard
push: the median over all checks and over the last ten, the figure that says whether a change
helped before the stress test does, and its mean by where the kick pointed; how many checks
tracked, and their median error), the exported policy's iteration and the curriculum's
randomisation strength there, sim2sim's verdict and error,
the stress test's verdict, every standard level's success (replaying the reference in brackets)
and the standard push by where it points. Results are read as report.html reads them
(``currency.run_currency``): a result made from another policy than the run's current one is left
out and the run's status row says so. Files are read as data only (JSON, YAML's safe loader, CSV)
and every string printed from them is escaped (``printable``).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..evaluate.push_direction import PUSH_DIRECTIONS
from ..robot.model_names import printable
from ..rundir import (
    ARGS_FILE,
    CSV_FILE,
    EXPORT_DIR,
    EXPORT_REPORT,
    PIPELINE_FILE,
    SIM2SIM_FILE,
    STRESS_FILE,
    read_args,
    read_result,
)
from ..train.log import complete_rows
from ..train.train_config import flatten
from .currency import run_currency

MISSING = "—"
PUSH_CHECK_COLUMN = "verdict/robust_success_rate"
SIDE_CHECK_PREFIX = "verdict/robust_"
TRACKED_CHECK_COLUMN = "verdict/tracked"
MPKPE_CHECK_COLUMN = "verdict/mpkpe_m"
STRENGTH_COLUMN = "randomization/strength"
LAST_CHECKS = 10
SKIPPED_SETTINGS = ("motion", "motion_sha256", "robot")
"""``config`` keys with rows of their own."""
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}")


@dataclass
class RunColumn:
    """One run's figures, by row label."""

    run_dir: Path
    name: str
    cells: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    """Flattened ``args.yaml`` config: dotted key → value as text."""


def resolve_run_dir(path: str | Path) -> Path:
    """``path`` itself when it is a run directory (it holds pipeline.json or args.yaml), else the
    newest run directory below it (``--log-dir LOGS --run-name NAME`` puts each run in
    LOGS/NAME/<timestamp>); a ``ConfigError`` naming it when there is none."""
    path = Path(path)
    if _is_run_dir(path):
        return path
    below = sorted((p for p in path.glob("*") if p.is_dir() and _is_run_dir(p)),
                   key=lambda p: p.name) if path.is_dir() else []
    if below:
        return below[-1]
    raise ConfigError(f"{path} is not a run directory: no {PIPELINE_FILE} or {ARGS_FILE} in it or "
                      "in a folder below it",
                      fix="pass the directory `primebot pipeline run` printed (\"run directory: "
                          "…\")")


def _is_run_dir(path: Path) -> bool:
    return (path / PIPELINE_FILE).is_file() or (path / ARGS_FILE).is_file()


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else {}: a file of the wrong shape shows as missing figures,
    never as a traceback."""
    return value if isinstance(value, dict) else {}


def _mappings(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN is no figure


def _training(column: RunColumn) -> dict[int, float]:
    """Fill the training rows; returns the curriculum's randomisation strength at each iteration
    that logged one."""
    path = column.run_dir / CSV_FILE
    if not path.is_file():
        return {}
    _, rows = complete_rows(path)
    if not rows:
        return {}
    last = rows[-1]
    iteration, elapsed = _number(last.get("iteration")), _number(last.get("elapsed_s"))
    if iteration is not None:
        column.cells["training"] = (f"{int(iteration)} it."
                                    + (f" in {elapsed / 60:.1f} min" if elapsed is not None
                                       else ""))
    checks = _column(rows, PUSH_CHECK_COLUMN)
    if checks:
        column.cells["checks under the push: median, all / last ten"] = (
            f"{statistics.median(checks):.2f} / {statistics.median(checks[-LAST_CHECKS:]):.2f} "
            f"({len(checks)} checks)")
    _checks_by_side(column, rows)
    tracked, errors = _column(rows, TRACKED_CHECK_COLUMN), _column(rows, MPKPE_CHECK_COLUMN)
    if tracked:
        column.cells["checks tracked"] = (
            f"{sum(v > 0 for v in tracked)} of {len(tracked)}"
            + (f" (median MPKPE {1000 * statistics.median(errors):.1f} mm)" if errors else ""))
    return strength_by_iteration(rows)


def _column(rows: list[dict[str, str]], name: str) -> list[float]:
    """train.csv's figures in column ``name``, the rows without one (between checks) left out."""
    return [v for v in (_number(r.get(name)) for r in rows) if v is not None]


def _checks_by_side(column: RunColumn, rows: list[dict[str, str]]) -> None:
    """The checks' pushed episodes by where the kick pointed (train.csv's
    ``verdict/robust_<side>``, about 8 episodes a side a check): the mean over the checks, which a
    single check's few episodes cannot give."""
    sides = [key.removeprefix(SIDE_CHECK_PREFIX) for key in rows[0]
             if key.startswith(SIDE_CHECK_PREFIX) and key != PUSH_CHECK_COLUMN]
    # train.csv orders its columns as they first came (a side with no pushed episode in the first
    # check comes later): one order for every run, so that their rows line up
    sides.sort(key=lambda side: (PUSH_DIRECTIONS.index(side) if side in PUSH_DIRECTIONS
                                 else len(PUSH_DIRECTIONS), side))
    means = []
    for side in sides:
        values = _column(rows, SIDE_CHECK_PREFIX + side)
        means.append(f"{statistics.mean(values):.2f}" if values else MISSING)
    if any(mean != MISSING for mean in means):
        column.cells["checks under the push by side, mean: " + " / ".join(sides)] = " / ".join(
            means)


def strength_by_iteration(rows: list[dict[str, str]]) -> dict[int, float]:
    """Iteration → the curriculum's randomisation strength, from train.csv's rows (where logged)."""
    strength = {}
    for row in rows:
        iteration, value = _number(row.get("iteration")), _number(row.get(STRENGTH_COLUMN))
        if iteration is not None and value is not None:
            strength[int(iteration)] = value
    return strength


def _sim2sim(column: RunColumn, doc: dict[str, Any]) -> None:
    overall = _mapping(doc.get("overall"))
    verdict = _mapping(overall.get("verdict"))
    mpkpe, statue = _number(overall.get("mpkpe_m")), _number(overall.get("statue_mpkpe_m"))
    success = _number(overall.get("success_rate"))
    parts = [str(verdict.get("label", "")).upper() or MISSING]
    if mpkpe is not None:
        parts.append(f"{1000 * mpkpe:.0f} mm" + (f" (statue {1000 * statue:.0f})"
                                                 if statue is not None else ""))
    if success is not None:
        parts.append(f"success {success:.2f}")
    column.cells["sim2sim"] = ", ".join(parts)


def _passes(figures: dict[str, Any], minimum: float) -> bool:
    return (_number(figures.get("success_rate")) or 0.0) >= minimum


def _stress(column: RunColumn, doc: dict[str, Any]) -> None:
    verdict = _mapping(doc.get("verdict"))
    minimum = _number(verdict.get("min_success_rate")) or 0.9
    standard = [c for c in _mappings(doc.get("cells")) if c.get("standard")]
    policy = sum(_passes(_mapping(c.get("policy")), minimum) for c in standard)
    replay = sum(_passes(_mapping(c.get("replay")), minimum) for c in standard)
    column.cells["stress"] = (f"{str(verdict.get('label', '')).upper() or MISSING}: "
                              f"{policy} of {len(standard)} standard levels (replay {replay})")
    for cell in standard:
        mine, theirs = _mapping(cell.get("policy")), _mapping(cell.get("replay"))
        success = _number(mine.get("success_rate"))
        if success is None:
            continue
        text = f"{success:.2f} of {mine.get('episodes', '?')}"
        other = _number(theirs.get("success_rate"))
        column.cells[f"  {cell.get('family')} {cell.get('label')}"] = (
            text + (f" ({other:.2f})" if other is not None else ""))
        sectors = _mapping(mine.get("by_direction"))
        if cell.get("family") == "push" and sectors:
            column.cells["  push by direction: " + " / ".join(map(str, sectors))] = " / ".join(
                f"{(_number(_mapping(f).get('success_rate')) or 0.0):.2f}"
                for f in sectors.values())


def _pipeline_status(pipeline: dict[str, Any]) -> str:
    """``done in 24.8 min`` (every stage's time, retries included), or the status it has."""
    status = str(pipeline.get("status", "pending"))
    seconds = [_number(s.get("total_s")) for s in _mappings(pipeline.get("stages"))]
    total = sum(s for s in seconds if s is not None)
    return f"{status} in {total / 60:.1f} min" if total and status == "done" else status


def read_run(run_dir: str | Path) -> RunColumn:
    """One run directory's figures (see the module docstring)."""
    run_dir = resolve_run_dir(run_dir)
    name = run_dir.parent.name if _TIMESTAMP.fullmatch(run_dir.name) else run_dir.name
    column = RunColumn(run_dir, name)
    pipeline = read_result(run_dir / PIPELINE_FILE)
    if pipeline is not None and not all(isinstance(s, dict)
                                        for s in pipeline.get("stages") or []):
        pipeline = {"status": "unreadable"}  # stages of another shape: nothing to judge it by
    try:
        config = _mapping(read_args(run_dir).get("config"))
    except ConfigError:
        config = {}
    motion = config.get("motion") or _mapping(_mapping(pipeline).get("settings")).get("motion")
    if motion:
        column.cells["motion"] = Path(str(motion)).name
    if config.get("robot"):
        column.cells["robot"] = str(config["robot"])
    column.settings = {k: _text(v) for k, v in flatten(config).items()
                       if k not in SKIPPED_SETTINGS}
    currency = run_currency(run_dir, pipeline)
    status = [] if pipeline is None else [_pipeline_status(pipeline)]
    if currency.staleness.stale:
        status.append("stale, left out: " + ", ".join(sorted(
            p for p in currency.staleness.stale if not p.endswith(".mp4"))))
    if currency.staleness.unknown:
        status.append(f"which results are current could not be checked: "
                      f"{currency.staleness.unknown}")
    column.cells["status"] = "; ".join(status) or "a run made by hand (no pipeline.json)"
    strength = _training(column)
    exported = currency.read(f"{EXPORT_DIR}/{EXPORT_REPORT}")
    if exported and isinstance(exported.get("iteration"), int | str):
        iteration = exported["iteration"]
        trained_at = strength.get(iteration) if isinstance(iteration, int) else None
        column.cells["exported policy"] = f"iteration {iteration}" + (
            f", trained at randomisation strength {trained_at:g}" if trained_at is not None
            else "")
    sim2sim = currency.read(SIM2SIM_FILE)
    if sim2sim:
        _sim2sim(column, sim2sim)
    stress = currency.read(STRESS_FILE)
    if stress:
        _stress(column, stress)
    return column


def comparison(columns: list[RunColumn]) -> list[tuple[str, list[str]]]:
    """(row label, one value per run) rows: the settings that differ first, then the figures in the
    order the runs have them."""
    names = _unique_names(columns)
    rows: list[tuple[str, list[str]]] = [("run", names)]
    keys = list(dict.fromkeys(k for c in columns for k in c.settings))
    differing = [k for k in keys if len({c.settings.get(k, MISSING) for c in columns}) > 1]
    for key in differing:
        rows.append((f"set {key}", [c.settings.get(key, MISSING) for c in columns]))
    labels = list(dict.fromkeys(k for c in columns for k in c.cells))
    rows += [(label, [c.cells.get(label, MISSING) for c in columns]) for label in labels]
    return [(printable(label), [printable(v) for v in values]) for label, values in rows]


def _unique_names(columns: list[RunColumn]) -> list[str]:
    names = [c.name for c in columns]
    return [f"{c.name} ({c.run_dir.name})" if names.count(c.name) > 1 else c.name
            for c in columns]


def format_comparison(rows: Iterable[tuple[str, list[str]]]) -> str:
    """The rows as a text table, one column per run."""
    rows = list(rows)
    label_width = max(len(label) for label, _ in rows)
    widths = [max(len(values[i]) for _, values in rows) for i in range(len(rows[0][1]))]
    return "\n".join(
        f"{label:<{label_width}}  " + "  ".join(f"{v:<{w}}" for v, w in zip(values, widths,
                                                                            strict=True)).rstrip()
        for label, values in rows)


def comparison_json(rows: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """The rows for ``--json``: the runs' names and each row's values in their order."""
    return {"runs": rows[0][1], "rows": [{"label": label.strip(), "values": values}
                                         for label, values in rows[1:]]}
