"""Running the stages of one pipeline run, recording each in pipeline.json.

``pipeline.json`` is rewritten atomically after every change, so whatever
stops the process (a failure, Ctrl-C, SIGKILL, a power cut) leaves a record
that says which stages finished. ``--resume`` reads it, keeps the finished
stages and runs the rest; a stage that was running when the process died is
run again (the train stage continues from its newest checkpoint).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import clean_interrupted_writes
from ..errors import (
    NOT_ROBUST_EXIT_CODE,
    NOT_TRACKED_EXIT_CODE,
    ConfigError,
    DiskFullError,
    PluginError,
    PrimebotError,
    UnknownNameError,
)
from ..exit_guard import exit_call, no_hard_exit
from ..registry import Registry
from ..run_lock import run_dir_lock
from ..rundir import LOG_FILE, PIPELINE_FILE
from .contract import (
    Stage,
    StageContext,
    StageInterrupted,
    StageSkipped,
    normalize_result,
    order_stages,
)
from .record import PipelineRecord, StageRecord, format_duration, now_iso
from .staleness import Staleness

log = logging.getLogger(__name__)

INTERRUPTED_EXIT_CODE = 130
"""Exit code after Ctrl-C (128 + SIGINT); SIGTERM gives 143 (128 + SIGTERM), as ``primebot train``
does."""


def _interrupt_exit_code(reason: str) -> int:
    return 128 + signal.SIGTERM if "SIGTERM" in reason else INTERRUPTED_EXIT_CODE


@dataclass
class Selection:
    """Which stages to run, from ``--from``/``--only``/``--skip``."""

    from_stage: str | None = None
    only: Sequence[str] = ()
    skip: Sequence[str] = ()

    def check(self, names: list[str]) -> None:
        """Refuse unknown stage names and contradictory options."""
        if self.from_stage and self.only:
            raise ConfigError("--from and --only cannot be combined", fix="use one of them")
        for option, values in (("--from", [self.from_stage] if self.from_stage else []),
                               ("--only", self.only), ("--skip", self.skip)):
            for value in values:
                if value not in names:
                    raise UnknownNameError(f"{option} {value!r}: no such stage; stages: "
                                           f"{', '.join(names)}")

    def why_not(self, name: str, names: list[str]) -> str:
        """Empty when ``name`` is selected, else the reason it is not."""
        if name in self.skip:
            return "--skip"
        if self.only and name not in self.only:
            return "not in --only"
        if self.from_stage and names.index(name) < names.index(self.from_stage):
            return f"before --from {self.from_stage}"
        return ""

    def named(self, name: str, names: list[str]) -> bool:
        """Whether the user asked for ``name`` explicitly (so it reruns even when done)."""
        if name in self.only:
            return True
        return bool(self.from_stage) and names.index(name) >= names.index(self.from_stage)


@dataclass
class PipelineOutcome:
    """How a pipeline run ended."""

    run_dir: Path
    status: str
    """``done``, ``failed`` or ``interrupted``."""
    exit_code: int
    failed_stage: str | None = None
    report: Path | None = None


def ordered_stages(registry: Registry) -> list[tuple[Stage, str]]:
    """The registered stages in run order, each with the plugin that registered it."""
    owners = {reg.name: reg.plugin for reg in registry.registrations("stages")}
    return [(stage, owners[stage.name])
            for stage in order_stages(registry.items("stages").values(), owners)]


class PipelineRunner:
    """Runs the selected stages of one run directory in order, recording each step."""

    def __init__(
        self,
        registry: Registry,
        record: PipelineRecord,
        stages: list[tuple[Stage, str]],
        *,
        selection: Selection | None = None,
        resume: bool = False,
        echo: Callable[[str], None] = print,
        write_report: Callable[[Path], Path] | None = None,
    ) -> None:
        self.registry = registry
        self.record = record
        self.stages = stages
        self.selection = selection or Selection()
        self.resume = resume
        self._echo = echo
        self.write_report = write_report
        self.names = [stage.name for stage, _ in stages]
        self.selection.check(self.names)
        self.staleness = Staleness(record, [stage for stage, _ in stages])
        self._log_fh = None

    # -- output ----------------------------------------------------------------------
    def echo(self, line: str) -> None:
        """Print a progress line and keep it in pipeline.log (a log file that cannot be written, a
        full disk, only ends the copy in pipeline.log, with a warning)."""
        self._echo(line)
        if self._log_fh is not None:
            try:
                self._log_fh.write(line + "\n")
                self._log_fh.flush()
            except OSError as exc:
                self._log_fh = None
                self._echo(f"warning: {LOG_FILE} can no longer be written ({exc.strerror or exc}); "
                           "progress goes to the terminal only")

    # -- the run ---------------------------------------------------------------------
    def run(self) -> PipelineOutcome:
        """Run, record and report; never raises for a stage's failure (see the outcome)."""
        record = self.record
        with run_dir_lock(record.run_dir), self._log_file(), _sigterm_as_interrupt():
            record.status = "running"
            attempt = {"started": now_iso(), "argv": sys.argv[1:], "resume": self.resume}
            record.history.append(attempt)
            # what a killed attempt left half-written (this one holds the lock)
            clean_interrupted_writes(record.run_dir)
            record.save()
            # the report of a run in progress shows no result, even if this process is killed
            self._report()
            self.echo(f"primebot pipeline: {record.run_dir}")
            self.echo(self._plan_line())
            status, exit_code, failed = "running", 0, None
            try:
                for position, (stage, plugin) in enumerate(self.stages, start=1):
                    failed = stage.name
                    outcome = self._one_stage(position, stage, plugin)
                    if outcome == "failed":
                        status, failed = "failed", stage.name
                        exit_code = record.stage(stage.name).error.get("exit_code", 1)
                        break
                    if outcome == "interrupted":
                        status, failed = "interrupted", stage.name
                        exit_code = _interrupt_exit_code(record.stage(stage.name).reason)
                        break
                else:
                    status, failed = "done", None
                    exit_code = verdict_exit_code(self.verdict())
            except KeyboardInterrupt as exc:  # between stages: nothing is half-done
                status, exit_code = "interrupted", _interrupt_exit_code(str(exc))
            # pipeline.json itself could not be written: it keeps its last state
            except DiskFullError as exc:
                status, exit_code = "failed", exc.exit_code
                self.echo(f"      FAILED: {str(exc).splitlines()[0]}")
            finally:
                # "running" here means an unexpected error escaped: never leave the run looking
                # alive.
                record.status = "failed" if status == "running" else status
                attempt["finished"] = now_iso()
                attempt["status"] = record.status
                self.staleness.settle()
                try:
                    record.save()
                except DiskFullError as exc:
                    self.echo(f"warning: {PIPELINE_FILE} could not be updated "
                              f"({str(exc).splitlines()[0]}); "
                              "it keeps its last state, and --resume continues from there")
            report = self._report()
            self._summary(status, failed, report)
        return PipelineOutcome(record.run_dir, status, exit_code, failed, report)

    def verdict(self) -> dict[str, Any]:
        """The run's verdict: ``{"stage", "tracked", "reason"}`` of the last stage (in run order)
        that gave one, and ``{"robust_stage", "robust", "robust_reason", "sentence"}`` of the last
        that judged robustness, and ``next_step`` of the last that advised one (e.g. train, when
        its time limit cut it short: the command that trains on).

        Stages that score tracking put ``tracked`` (bool) and ``verdict``
        (the reason) in their summary; the deploy-side check runs last, so
        its word is final. The stress stage puts ``robust``, ``robust_reason``
        and ``stress_sentence`` (what the network adds over replaying the
        reference). Empty when no stage gave a verdict (a task that tracks
        no motion).
        """
        out: dict[str, Any] = {}
        for r in reversed(self.record.stages):
            if r.status != "done":
                continue
            if "tracked" not in out and isinstance(r.summary.get("tracked"), bool):
                out.update(stage=r.name, tracked=r.summary["tracked"],
                           reason=r.summary.get("verdict", ""))
            if "robust" not in out and isinstance(r.summary.get("robust"), bool):
                out.update(robust_stage=r.name, robust=r.summary["robust"],
                           robust_reason=r.summary.get("robust_reason", ""),
                           sentence=r.summary.get("stress_sentence", ""))
            if "next_step" not in out and r.summary.get("next_step"):
                out["next_step"] = str(r.summary["next_step"])
        return out

    def _plan_line(self) -> str:
        s = self.record.settings
        device = s.device or "auto"
        return (f"  motion {s.motion} | robot {s.robot or 'task default'} | task {s.task} | device "
                f"{device} | "
                f"preset {s.preset}: {s.num_envs} envs x {s.iterations} iterations, "
                f"{s.eval_episodes} eval episodes, "
                f"video {'on' if s.video else 'off'}")

    def _context(self, stage: Stage, previous_status: str | None) -> StageContext:
        done = [r for r in self.record.stages if r.status == "done"]
        return StageContext(
            run_dir=self.record.run_dir,
            settings=self.record.settings,
            registry=self.registry,
            stage=stage.name,
            outputs={r.name: dict(r.outputs) for r in done},
            summaries={r.name: dict(r.summary) for r in done},
            previous_status=previous_status,
            echo=self.echo,
        )

    def _one_stage(self, position: int, stage: Stage, plugin: str) -> str:
        record = self.record.stage(stage.name)
        record.plugin, record.description = plugin, stage.description
        head = f"[{position}/{len(self.stages)}] {stage.name}"
        why_not = self.selection.why_not(stage.name, self.names)
        outdated_by = self.staleness.outdated_by(stage.name)
        stale = "" if outdated_by else self.staleness.stale_reason(stage)
        if why_not:
            # its result no longer matches what it was made from: never keep it as done
            if outdated_by:
                record.status, record.reason = (
                    "skipped",
                    f"{why_not}; its earlier result predates {outdated_by}'s rerun",
                )
            elif stale:
                record.status, record.reason = (
                    "skipped",
                    f"{why_not}; its earlier result no longer holds: {stale}",
                )
            elif record.status != "done":
                record.status, record.reason = "skipped", why_not
            self.record.save()
            self.echo(f"{head}: "
                      f"{'kept from the earlier run' if record.status == 'done' else 'skipped'} "
                      f"({record.reason or why_not})")
            return record.status
        if outdated_by:
            self.echo(f"{head}: done earlier, but {outdated_by} ran again since: running it again")
        elif stale:
            self.echo(f"{head}: done earlier, but {stale}: running it again")
        elif (
            self.resume
            and record.status == "done"
            and not self.selection.named(stage.name, self.names)
        ):
            self.echo(f"{head}: done earlier ({format_duration(record.duration_s)}), kept"
                      # e.g. why training stopped early
                      + (f": {record.message}" if record.message else ""))
            return "done"

        previous = record.status if record.attempts else None
        record.status, record.reason, record.error = "running", "", None
        record.started, record.finished = now_iso(), None
        record.outputs, record.summary, record.message, record.warnings = {}, {}, "", []
        record.attempts += 1
        self.record.save()
        self.echo(f"{head}: {stage.description}" if stage.description else head)
        ctx = self._context(stage, previous)
        start = time.perf_counter()
        try:
            result = normalize_result(_run_stage(stage, ctx, plugin), stage.name)
        except StageSkipped as exc:
            self._finish(record, start, "skipped")
            record.reason = str(exc)
            record.warnings = [str(exc)]
            self.record.save()
            self.echo(f"      skipped: {exc}")
            return "skipped"
        except (KeyboardInterrupt, StageInterrupted) as exc:
            self._finish(record, start, "interrupted")
            record.reason = str(exc) or "interrupted (Ctrl-C / SIGTERM)"
            self.record.save()
            self.echo(f"      interrupted after {format_duration(record.duration_s)}; "
                      f"resume with: primebot pipeline run --resume {self.record.run_dir}")
            return "interrupted"
        except Exception as exc:  # noqa: BLE001 - any stage failure is recorded, then reported
            self._finish(record, start, "failed")
            record.error = error_dict(exc)
            self.record.save()
            self.echo(f"      FAILED after {format_duration(record.duration_s)}: "
                      f"{record.error['type']}: {record.error['message']}")
            if record.error.get("fix"):
                self.echo(f"      fix: {record.error['fix']}")
            log.debug("stage %s failed", stage.name, exc_info=True)
            return "failed"
        self._finish(record, start, "done")
        record.sequence = max(r.sequence for r in self.record.stages) + 1
        record.settings = {key: getattr(self.record.settings, key, None) for key in stage.settings}
        record.outputs, record.summary = dict(result.outputs), dict(result.summary)
        record.message, record.warnings = result.message, list(result.warnings)
        self.record.save()
        for warning in result.warnings:
            self.echo(f"      warning: {warning}")
        self.echo(f"      done in {format_duration(record.duration_s)}"
                  + (f": {result.message}" if result.message else ""))
        return "done"

    @staticmethod
    def _finish(record: StageRecord, start: float, status: str) -> None:
        record.status = status
        record.finished = now_iso()
        record.duration_s = round(time.perf_counter() - start, 3)
        record.total_s = round(record.total_s + record.duration_s, 3)

    def _report(self) -> Path | None:
        if self.write_report is None:
            return None
        try:
            path = self.write_report(self.record.run_dir)
            self.record.report_error = None
        except Exception as exc:  # noqa: BLE001 - a broken report must not hide the run's outcome
            self.record.report_error = f"{type(exc).__name__}: {exc}"
            self.echo(f"warning: report.html could not be written: {self.record.report_error}")
            log.debug("report failed", exc_info=True)
            path = None
        with contextlib.suppress(DiskFullError):  # already said; pipeline.json keeps its last state
            self.record.save()
        return path

    def _summary(self, status: str, failed: str | None, report: Path | None) -> None:
        self.echo("")
        self.echo(f"{'stage':<12} {'status':<12} {'time':>9}  detail")
        for r in self.record.stages:
            detail = r.message or r.reason or (r.error or {}).get("message", "")
            self.echo(f"{r.name:<12} {r.status:<12} {format_duration(r.duration_s):>9}  "
                      f"{detail.splitlines()[0] if detail else ''}")
        self.echo(f"run directory: {self.record.run_dir}")
        if report is not None:
            self.echo(f"report:        {report}")
        verdict = self.verdict() if status == "done" else {}
        if verdict.get("tracked") is True and verdict.get("robust") is True:
            self.echo(f"[DONE] pipeline: TRACKED and ROBUST ({verdict['stage']}: "
                      f"{verdict['reason']}; "
                      f"{verdict['robust_stage']}: {verdict['robust_reason']})")
            self.echo(f"      {verdict['sentence']}")
        elif verdict.get("tracked") is True:
            robustness = (f"NOT ROBUST ({verdict['robust_stage']}: {verdict['robust_reason']})"
                          if verdict.get("robust") is False
                          else "robustness not measured (the stress stage did not run)")
            self.echo(f"[DONE] pipeline: TRACKED, {robustness}; exit {NOT_ROBUST_EXIT_CODE}. "
                      f"({verdict['stage']}: {verdict['reason']}). What to try: docs/tasks.md, "
                      "\"What to try when a motion is tracked but not robust\"")
            if verdict.get("sentence"):
                self.echo(f"      {verdict['sentence']}")
        elif verdict.get("tracked") is False:
            self.echo(f"[DONE] pipeline: NOT TRACKED ({verdict['stage']}: {verdict['reason']}); "
                      f"exit {NOT_TRACKED_EXIT_CODE}. What to try: docs/tasks.md, \"When a motion "
                      "does not track\"")
        elif status == "done":
            self.echo("[DONE] pipeline")
        elif status == "interrupted":
            self.echo(f"[STOPPED] at {failed}; resume with: primebot pipeline run --resume "
                      f"{self.record.run_dir}")
        else:
            self.echo(f"[FAILED] at {failed}; after fixing, rerun with: "
                      f"primebot pipeline run --resume {self.record.run_dir}")
        falls_short = verdict.get("tracked") is False or verdict.get("robust") is False
        if falls_short and verdict.get("next_step"):
            self.echo(f"      next: {verdict['next_step']}")

    @contextlib.contextmanager
    def _log_file(self) -> Iterator[None]:
        """Keep the progress lines and every log record of the run in pipeline.log."""
        handler = _RunLogHandler(self.record.run_dir / LOG_FILE, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        self._log_fh = handler.stream
        try:
            yield
        finally:
            self._log_fh = None
            root.removeHandler(handler)
            handler.close()


class _RunLogHandler(logging.FileHandler):
    """pipeline.log's handler: a write that fails (a full disk) ends the copy in the file quietly,
    instead of logging's traceback on stderr at every later record."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self.setLevel(logging.CRITICAL + 1)


def verdict_exit_code(verdict: dict[str, Any]) -> int:
    """0 tracked and robust (or a task with no verdict), ``NOT_ROBUST_EXIT_CODE`` tracked but not
    shown robust, ``NOT_TRACKED_EXIT_CODE`` not tracked."""
    if verdict.get("tracked") is False:
        return NOT_TRACKED_EXIT_CODE
    if verdict.get("tracked") is True and verdict.get("robust") is not True:
        return NOT_ROBUST_EXIT_CODE
    return 0


def _run_stage(stage: Stage, ctx: StageContext, plugin: str) -> Any:
    """``stage.run(ctx)``; a ``sys.exit`` or ``os._exit`` inside it is the stage failing, not the
    pipeline ending with its code (exit_guard.py)."""
    try:
        with no_hard_exit():
            return stage.run(ctx)
    except SystemExit as exc:
        raise PluginError(
            f"stage {stage.name!r} (plugin {plugin!r}) called {exit_call(exc)}",
            fix="a stage fails by raising an exception; fix the plugin or disable it "
                "(PRIMEBOT_DISABLE_PLUGINS)",
        ) from None


def error_dict(exc: BaseException) -> dict[str, Any]:
    message = str(exc.args[0]) if isinstance(exc, PrimebotError) and exc.args else str(exc)
    if isinstance(exc, PrimebotError) and exc.fix:
        message = message.split("\n  fix: ")[0]
    return {
        "type": type(exc).__name__,
        "message": message or repr(exc),
        "fix": getattr(exc, "fix", None),
        "exit_code": exc.exit_code if isinstance(exc, PrimebotError) else 1,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:]),
    }


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a stage like Ctrl-C does (recorded as interrupted, resumable)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
