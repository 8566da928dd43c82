"""Training metrics: train.csv (flushed every row), the curves PNG (train/training_curves.py),
optional TensorBoard.

All file work happens on a background thread fed by an unbounded queue, so
``log`` never blocks the training loop (seed 000: printing from the loop
slowed the simulation). ``close`` drains the queue. A failed plot or
TensorBoard write is a warning; a full disk stops the writer, and the next
``log`` (or ``close``) raises ``DiskFullError`` in the training loop.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text, disk_full_error
from ..errors import ConfigError, DiskFullError
from ..rundir import CSV_FILE, CURVE_FILE
from .training_curves import render_grid

log = logging.getLogger(__name__)

WALL_CLOCK_COLUMNS = ("sps", "collect_s", "transfer_s", "update_s", "elapsed_s")
"""Columns that measure time, not learning; they differ between otherwise identical runs."""


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)  # shortest round-trip form: identical runs give identical text
    return "" if value is None else str(value)


def read_csv_rows(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a train.csv."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def complete_rows(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a train.csv without a torn row: a process killed while appending leaves a
    last line without its line end (or a row with too few or too many fields), and such a row would
    otherwise survive a resume with a value cut short."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # the unfinished last line
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = list(reader.fieldnames or [])
    rows = [row for row in reader if None not in row and None not in row.values()]
    return header, rows


class TrainingLog:
    """Background writer of one run's metrics (rank 0 only)."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        keep_until: int | None = None,
        plot_interval_s: float = 30.0,
        tensorboard: bool = False,
    ) -> None:
        """``keep_until``: on resume, keep rows up to this iteration and drop later ones."""
        self.run_dir = Path(run_dir)
        self.csv_path = self.run_dir / CSV_FILE
        self.png_path = self.run_dir / CURVE_FILE
        self.plot_interval_s = plot_interval_s
        self.header: list[str] = []
        self.rows: list[dict[str, Any]] = []
        if keep_until is not None and self.csv_path.is_file():
            header, rows = complete_rows(self.csv_path)
            self.rows = [r for r in rows
                         if r.get("iteration") and int(r["iteration"]) <= keep_until]
            self.header = header
        self._rewrite()
        self._tb = self._open_tensorboard() if tensorboard else None
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._fatal: DiskFullError | None = None
        self._last_plot = 0.0
        self._thread = threading.Thread(target=self._work, name="primebot-training-log",
                                        daemon=True)
        self._thread.start()

    def _open_tensorboard(self):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise ConfigError(
                f"--tensorboard needs the tensorboard package ({exc})",
                fix="pip install 'primebot[tensorboard]'"
            ) from None
        return SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))

    # -- called from the training loop ---------------------------------------------
    def log(self, row: dict[str, Any]) -> None:
        """Queue one iteration's row; returns at once. Raises ``DiskFullError`` once the disk filled
        up."""
        if self._fatal is not None:
            raise self._fatal
        self._queue.put(dict(row))

    def sync(self) -> None:
        """Wait until every queued row is in train.csv and on disk (before a checkpoint is written,
        so a checkpoint never gets ahead of its log). Raises ``DiskFullError`` once the disk filled
        up."""
        self._queue.join()
        if self._fatal is not None:
            raise self._fatal
        try:
            with open(self.csv_path, "rb+") as fh:
                os.fsync(fh.fileno())
        except OSError as exc:
            full = disk_full_error(exc, self.csv_path)
            if full is not None:
                raise full from exc
            log.warning("warning: train.csv could not be synced: %s", exc)

    def close(self, *, raise_errors: bool = True) -> None:
        """Write everything queued, draw the final curve, stop the thread.

        A full disk is raised (``DiskFullError``) unless ``raise_errors`` is
        False (the loop is already failing with another error).
        """
        self._queue.put(None)
        self._thread.join()
        if self._tb is not None:
            try:
                self._tb.close()
            except Exception as exc:  # noqa: BLE001 - a TensorBoard failure is only a warning
                self._error = self._error or exc
        if self._fatal is not None:
            if raise_errors:
                raise self._fatal
        elif self._error is not None:
            log.warning("warning: the training log writer failed: %s", self._error)

    # -- background thread ----------------------------------------------------------
    def _work(self) -> None:
        while True:
            row = self._queue.get()
            if self._fatal is not None and row is not None:
                self._queue.task_done()
                continue  # the disk is full: drop rows until close (the loop raises meanwhile)
            try:
                if row is None:
                    if self._fatal is None:
                        self._plot()
                    return
                self._write(row)
                if time.monotonic() - self._last_plot >= self.plot_interval_s:
                    self._plot()
            # logging must never kill training, a full disk does
            except Exception as exc:  # noqa: BLE001
                full = disk_full_error(exc, self.csv_path)
                if full is not None:
                    self._fatal = full
                else:
                    self._error = exc
            finally:
                self._queue.task_done()
                if row is None:
                    return  # noqa: B012 - close() waits for this thread whatever the last write did

    def _write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        new = [key for key in row if key not in self.header]
        if new:
            self.header += new
            self._rewrite()
        else:
            with open(self.csv_path, "a", newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerow([_format(row.get(key)) for key in self.header])
                fh.flush()
        if self._tb is not None:
            step = int(row.get("iteration", len(self.rows)))
            for key, value in row.items():
                if isinstance(value, (int, float)) and key != "iteration":
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()

    def _rewrite(self) -> None:
        buf = io.StringIO()
        writer = csv.writer(buf)
        if self.header:
            writer.writerow(self.header)
        for row in self.rows:
            writer.writerow([_format(row.get(key)) for key in self.header])
        atomic_write_text(self.csv_path, buf.getvalue())

    def _plot(self) -> None:
        self._last_plot = time.monotonic()
        render_grid(self.header, self.rows, self.png_path)
