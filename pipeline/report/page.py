"""report.html: one self-contained page per run (stages, metrics, curves, videos).

Everything the page shows is a file of the run directory, linked by a
relative path: the training curves are PNGs rendered here with matplotlib
from train.csv into ``report/``, the videos are the ``videos/`` files the
stages wrote. No script, font or style is fetched from the network, so the
page opens from a copied or archived run directory as it does in place.
"""

from __future__ import annotations

import datetime as dt
import html
import logging
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from .. import __version__
from ..atomic import atomic_write_text
from ..errors import ConfigError
from ..evaluate.metrics import TRACKING_RULE
from ..rundir import (
    ARGS_FILE,
    BEST_CHECKPOINT,
    CSV_FILE,
    EVAL_FILE,
    LOG_FILE,
    PIPELINE_FILE,
    REPORT_FILE,
    SIM2SIM_FILE,
    STRESS_FILE,
    VIDEO_DIR,
    read_args,
    read_result,
)
from ..stages.record import format_duration
from ..train.log import read_csv_rows
from .currency import run_currency
from .curves import render_curves
from .robustness import robustness_section

log = logging.getLogger(__name__)

VIDEO_SUFFIXES = (".mp4", ".webm", ".ogv", ".mov")

CARD_METRICS = (
    ("success_rate", "success rate", "{:.0%}", ""),
    ("mpkpe_m", "MPKPE", "{:.3f} m", "mean body position error"),
    ("statue_mpkpe_m", "statue MPKPE", "{:.3f} m", "a robot frozen at the start frame"),
    ("fraction_removed", "statue error removed", "{:.0%}", ""),
    ("mpkpe_root_relative_m", "MPKPE root-relative", "{:.3f} m", ""),
    ("joint_pos_error_rad", "joint position error", "{:.3f} rad", ""),
    ("ee_pos_error_m", "end-effector error", "{:.3f} m", ""),
    ("fall_rate", "fall rate", "{:.0%}", ""),
)
"""(metric, label, format, note) of the metric cards, shown for sim2sim and for evaluate."""



# -- reading the run directory ------------------------------------------------------
def _read_json(path: Path) -> dict[str, Any] | None:
    data = read_result(path)
    if data is None and path.is_file():
        log.warning("report: %s is unreadable or not a JSON object", path)
    return data


def headline_metrics(doc: dict[str, Any] | None) -> dict[str, Any]:
    """The summary metrics of an eval.json / sim2sim.json: every episode counted once.

    eval.json carries them as ``overall``; sim2sim.json has one group per
    kind of start (``from_start``, ``sampled``), pooled here from their
    episode records with the same ``pooled_summary`` evaluation uses.
    """
    if not doc:
        return {}
    if isinstance(doc.get("overall"), dict):
        return doc["overall"]
    groups = {g: doc[g] for g in ("from_start", "sampled") if isinstance(doc.get(g), dict)}
    if not any(g.get("episode_records") for g in groups.values()):
        return next(iter(groups.values()), {})
    from ..evaluate.metrics import pooled_summary

    policy_hz = (doc.get("loop") or {}).get("policy_hz")
    control_dt = (
        1.0 / policy_hz if policy_hz else (doc.get("settings") or {}).get("control_dt", 0.02)
    )
    return pooled_summary(groups, control_dt)


def _scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """Numeric top-level entries of a metrics dict (failure counts flattened as
    ``failures/<kind>``)."""
    out = {}
    for key, value in metrics.items():
        if key == "episode_records":
            continue
        if isinstance(value, dict):
            out.update({f"{key}/{k}": float(v) for k, v in value.items()
                        if isinstance(v, (int, float))})
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    return out


# -- HTML pieces --------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _href(relative: str) -> str:
    """A relative URL for a run-directory path (percent-encodes spaces and non-ASCII names)."""
    from urllib.parse import quote

    return quote(relative.replace("\\", "/"))


def _format_value(value: float) -> str:
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.4g}"


def _read_args_config(run_dir: Path) -> dict[str, Any]:
    """The ``config`` section of the run's args.yaml (written by the train stage), or {}."""
    try:
        config = read_args(run_dir).get("config")
    # no train stage yet, or an unreadable file: the report still renders
    except (OSError, ConfigError):
        return {}
    return config if isinstance(config, dict) else {}


def _facts(pipeline: dict[str, Any], run_dir: Path) -> str:
    s = pipeline.get("settings", {})
    total = sum((r.get("total_s") or 0.0) for r in pipeline.get("stages", []))
    device = next((r.get("summary", {}).get("device") for r in pipeline.get("stages", [])
                   if r.get("summary", {}).get("device")), None) or s.get("device") or "auto"
    robot = s.get("robot") or (_read_args_config(run_dir).get("robot")) or "task default"
    items = [
        ("motion", s.get("motion", "?")), ("robot", robot), ("task", s.get("task", "?")),
        ("device", device), ("preset", s.get("preset", "?")),
        ("training", _training_fact(pipeline, s)),
        ("stage time", format_duration(total)), ("started", pipeline.get("created", "?")),
    ]
    return "".join(f"<div>{_e(k)} <b>{_e(v)}</b></div>" for k, v in items)


def _verdict_of(sim_doc: dict[str, Any], eval_doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The verdict the page leads with: sim2sim's (what the robot would do), else evaluate's."""
    for doc, source in ((sim_doc, "sim2sim"), (eval_doc, "evaluate")):
        verdict = doc.get("verdict")
        if isinstance(verdict, dict) and isinstance(verdict.get("tracked"), bool):
            return verdict, source
    return {}, ""


def _verdict(verdict: dict[str, Any], source: str) -> str:
    """The banner: TRACKED (green) only when the policy really does the motion
    (evaluate.metrics.tracking_verdict)."""
    if not verdict:
        return ('<div class="verdict unknown"><span class="big">No verdict yet</span>'
                "it appears once evaluate or sim2sim has scored the policy against its motion's "
                "statue baseline</div>")
    css, label = ("tracked", "TRACKED") if verdict["tracked"] else ("untracked", "NOT TRACKED")
    advice = "" if verdict["tracked"] else (
        " · what to try: docs/tasks.md, “When a motion does not track”")
    return (f'<div class="verdict {css}"><span class="big">{label}</span><span '
            f'class="src">{_e(source)}</span> · '
            f"{_e(verdict.get('reason', ''))}{_e(advice)}</div>")


def _training_fact(pipeline: dict[str, Any], settings: dict[str, Any]) -> str:
    """envs × iterations × steps; the iterations actually trained when the stop rule ended training
    early."""
    planned = settings.get("iterations", "?")
    trained = next((r.get("summary", {}).get("iterations") for r in pipeline.get("stages", [])
                    if r.get("name") == "train" and r.get("status") == "done"), None)
    iterations = (
        f"{trained} of at most {planned}" if trained is not None and trained != planned else planned
    )
    return (
        f"{settings.get('num_envs', '?')} envs × {iterations} it × "
        f"{settings.get('steps_per_env', '?')} steps"
    )


def _cards(eval_metrics: dict[str, float], sim_metrics: dict[str, float],
           verdict: dict[str, Any]) -> str:
    """One card per metric: the sim2sim value (what the robot would do) large, evaluate's beside it.

    Only the two verdict criteria are coloured, against the verdict's own bounds.
    """
    rule = verdict.get("rule", {})
    targets = {"success_rate": (">=", rule.get("min_success_rate", TRACKING_RULE.min_success_rate)),
               # no bound without a statue baseline
               "mpkpe_m": ("<=", verdict.get("mpkpe_limit_m"))}
    cards = []
    for key, label, fmt, note in CARD_METRICS:
        sim, ev = sim_metrics.get(key), eval_metrics.get(key)
        if sim is None and ev is None:
            continue
        value, source = (sim, "sim2sim") if sim is not None else (ev, "evaluate")
        notes = [note] if note else []
        if sim is not None and ev is not None:
            notes.append(f"evaluate {fmt.format(ev)}")
        css = ""
        if targets.get(key, (None, None))[1] is not None:
            op, bound = targets[key]
            css = " pass" if (value >= bound if op == ">=" else value <= bound) else " fail"
            notes.append(f"target {'≥' if op == '>=' else '≤'} {fmt.format(bound)}")
        cards.append(
            f'<div class="card{css}"><div class="label">{_e(label)} <span '
            f'class="src">{source}</span></div>'
            f'<div class="value">{_e(fmt.format(value))}</div><div '
            f'class="note">{_e(" · ".join(notes))}</div></div>'
        )
    if not cards:
        return (
            '<p class="empty">No evaluation yet: eval.json and sim2sim.json appear after the '
            'evaluate and sim2sim stages.</p>'
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


def _said_in(value: Any, message: str) -> bool:
    """A summary's sentence that the stage's message already carries (the stress stage's reason):
    shown once, not twice."""
    return isinstance(value, str) and len(value) > 30 and value in message


def _stage_rows(pipeline: dict[str, Any]) -> str:
    rows = []
    for i, r in enumerate(pipeline.get("stages", []), start=1):
        status = r.get("status", "pending")
        outputs = " ".join(
            f'<a href="{_href(path)}"><code>{_e(label)}</code></a>'
            for label, path in (r.get("outputs") or {}).items()
        )
        detail = [f"<div>{_e(r['message'])}</div>"] if r.get("message") else []
        if r.get("summary"):
            facts = ", ".join(f"{k} {v}" for k, v in r["summary"].items()
                              if not isinstance(v, (dict, list))
                              and not _said_in(v, r.get("message") or ""))
            if facts:
                detail.append(f'<div class="detail">{_e(facts)}</div>')
        if r.get("reason") and status != "done":
            detail.append(f'<div class="detail">{_e(r["reason"])}</div>')
        for warning in r.get("warnings") or []:
            if warning != r.get("reason"):
                detail.append(f'<div class="detail">⚠ {_e(warning)}</div>')
        error = r.get("error")
        if error:
            detail.append(f'<div class="error"><b>{_e(error.get("type", "error"))}</b>: '
                          f'<pre>{_e(error.get("message", ""))}</pre></div>')
            if error.get("fix"):
                detail.append(f'<div class="fix">fix: {_e(error["fix"])}</div>')
        attempts = r.get("attempts") or 0
        time_cell = format_duration(r.get("duration_s"))
        if attempts > 1:
            time_cell += (
                f"<br><span class='detail'>{attempts} attempts, "
                f"{format_duration(r.get('total_s'))}</span>"
            )
        rows.append(
            f"      <tr><td>{i}</td><td><b>{_e(r.get('name'))}</b><br><span "
            f"class='detail'>{_e(r.get('description', ''))}</span></td>"
            f'<td><span class="pill {_e(status)}">{_e(status)}</span></td><td '
            f'class="num">{time_cell}</td>'
            f"<td>{outputs}</td><td>{''.join(detail)}</td></tr>"
        )
    return "\n".join(rows)


def _train_facts(run_dir: Path) -> str:
    csv_path = run_dir / CSV_FILE
    if not csv_path.is_file():
        return ""
    _, rows = read_csv_rows(csv_path)
    if not rows:
        return ""
    last = rows[-1]
    parts = [f"{len(rows)} iterations logged"]
    for key, label in (("episode_return", "last episode return"),
                       ("episode_length", "episode length"),
                       ("sps", "env steps/s"), ("elapsed_s", "training time")):
        value = last.get(key)
        if value not in (None, ""):
            number = float(value)
            parts.append(f"{label} "
                         f"{format_duration(number) if key == 'elapsed_s' else f'{number:,.1f}'}")
    return f'<p class="detail">{_e(" · ".join(parts))}</p>'


def _plots(curves: list[tuple[str, str]]) -> str:
    if not curves:
        return (
            '    <p class="empty">No training curves yet: train.csv appears when the train stage '
            'runs.</p>'
        )
    return "\n".join(
        f'    <figure><img src="{_href(path)}" alt="{_e(title)}"></figure>'
        for path, title in curves
    )


def find_videos(run_dir: Path, pipeline: dict[str, Any]) -> list[tuple[str, str]]:
    """(relative path, caption) of every video: those stages recorded first, then others in
    videos/."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for r in pipeline.get("stages", []):
        for label, path in (r.get("outputs") or {}).items():
            if (
                Path(path).suffix.lower() in VIDEO_SUFFIXES
                and (run_dir / path).is_file()
                and path not in seen
            ):
                seen.add(path)
                found.append((path, f"{r.get('name')}: {label}"))
    videos_dir = run_dir / VIDEO_DIR
    if videos_dir.is_dir():
        for file in sorted(videos_dir.rglob("*")):
            relative = file.relative_to(run_dir).as_posix()
            if file.suffix.lower() in VIDEO_SUFFIXES and relative not in seen:
                seen.add(relative)
                found.append((relative, file.stem))
    return found


def _videos(videos: list[tuple[str, str]]) -> str:
    if not videos:
        return (
            '    <p class="empty">No videos: they are rendered when the preset enables video and '
            'OpenGL (EGL/OSMesa) is available.</p>'
        )
    return "\n".join(
        f'    <figure><video controls muted loop preload="metadata" src="{_href(path)}"></video>'
        f'<figcaption>{_e(caption)} · <a '
        f'href="{_href(path)}"><code>{_e(path)}</code></a></figcaption></figure>'
        for path, caption in videos
    )


def _metric_tables(eval_metrics: dict[str, float], sim_metrics: dict[str, float]) -> str:
    keys = list(dict.fromkeys([*eval_metrics, *sim_metrics]))
    if not keys:
        return '  <p class="empty">No metrics yet.</p>'
    rows = []
    for key in keys:
        a, b = eval_metrics.get(key), sim_metrics.get(key)
        gap = _format_value(b - a) if a is not None and b is not None else ""
        rows.append(
            f"    <tr><td><code>{_e(key)}</code></td><td "
            f"class='num'>{'' if a is None else _format_value(a)}</td>"
            f"<td class='num'>{'' if b is None else _format_value(b)}</td><td "
            f"class='num'>{gap}</td></tr>"
        )
    return ("  <table><thead><tr><th>metric</th><th class='num'>evaluate (eval.json)</th>"
            "<th class='num'>sim2sim (sim2sim.json)</th><th class='num'>sim2sim − "
            "evaluate</th></tr></thead>"
            "<tbody>\n" + "\n".join(rows) + "\n  </tbody></table>")


def _files(run_dir: Path) -> str:
    names = [PIPELINE_FILE, LOG_FILE, ARGS_FILE, CSV_FILE, BEST_CHECKPOINT, EVAL_FILE, SIM2SIM_FILE,
             STRESS_FILE,
             "export/policy.onnx", "export/deploy.yaml"]
    checkpoints = sorted(run_dir.glob("model_*.pt"), key=lambda p: p.stat().st_mtime)
    if checkpoints and checkpoints[-1].name != BEST_CHECKPOINT:
        names.insert(5, checkpoints[-1].name)
    present = [name for name in names if (run_dir / name).is_file()]
    if not present:
        return '<p class="empty">No files yet.</p>'
    return " · ".join(f'<a href="{_href(name)}"><code>{_e(name)}</code></a>' for name in present)


def _template() -> Template:
    text = (
        resources.files("primebot.pipeline.report")
        .joinpath("templates/report.html")
        .read_text(encoding="utf-8")
    )
    return Template(text)


def write_report(run_dir: str | Path) -> Path:
    """Render ``report.html`` (and its curve PNGs) for ``run_dir`` from the files there; returns its
    path."""
    run_dir = Path(run_dir)
    recorded = _read_json(run_dir / PIPELINE_FILE)
    pipeline = recorded or {"stages": [], "settings": {}}
    # results of the policy on disk only (report/currency.py)
    current = run_currency(run_dir, recorded)
    eval_head = headline_metrics(current.read(EVAL_FILE))
    sim_head = headline_metrics(current.read(SIM2SIM_FILE))
    eval_metrics, sim_metrics = _scalars(eval_head), _scalars(sim_head)
    verdict, verdict_source = _verdict_of(sim_head, eval_head) if current.final else ({}, "")
    curves = render_curves(run_dir)
    status = pipeline.get("status", "pending")
    failed = next(
        (r for r in pipeline.get("stages", []) if r.get("status") in ("failed", "interrupted")),
        None,
    )
    note = ""
    if failed is not None:
        note = f'<span class="detail">stopped at <b>{_e(failed.get("name"))}</b>: resume with ' \
               f'<code>primebot pipeline run --resume {_e(run_dir)}</code></span>'
    motion = Path(pipeline.get("settings", {}).get("motion", "") or "run").stem
    page = _template().substitute(
        title=_e(f"primebot · {motion}"),
        version=_e(__version__),
        run_dir=_e(run_dir),
        status=_e(status),
        status_note=note,
        facts=_facts(pipeline, run_dir),
        verdict=current.notice() + _verdict(verdict, verdict_source),
        cards=_cards(eval_metrics, sim_metrics, verdict),
        robustness=robustness_section(run_dir, current.read(STRESS_FILE)),
        stage_rows=_stage_rows(pipeline),
        train_facts=_train_facts(run_dir),
        plots=_plots(curves),
        videos=_videos([v for v in find_videos(run_dir, pipeline) if not current.stale(v[0])]),
        metric_tables=_metric_tables(eval_metrics, sim_metrics),
        files=_files(run_dir),
        generated=_e(dt.datetime.now().astimezone().isoformat(timespec="seconds")),
    )
    path = run_dir / REPORT_FILE
    atomic_write_text(path, page)
    return path
