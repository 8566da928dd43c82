"""One writer per run directory: everything that writes one holds ``run_dir_lock`` while it does.

``primebot train`` (new or resumed), ``pipeline run``, ``eval``, ``export``,
``sim2sim`` and ``pipeline report`` take the lock; a second process is
refused at once with the holder's pid and command. The lock is an
``flock`` on ``RUN_DIR/.primebot.lock``: the kernel releases it when its
process ends however it ends (SIGKILL, a power cut), so a stale lock file,
or a pid reused by an unrelated process, never blocks a resume. Within one
process the lock is re-entrant (the pipeline's train stage trains in the
pipeline's own run directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from .errors import ConfigError

LOCK_FILE = ".primebot.lock"

_HELD: dict[Path, int] = {}
"""Run directories this process holds, with the nesting depth."""


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or "pid unknown"


def _acquire(path: Path) -> int:
    """An open descriptor holding the exclusive flock on ``path``; ConfigError when another process
    holds it."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        # a read-only or vanished run directory: nothing can be written there
        except OSError as exc:
            raise ConfigError(
                f"cannot write in {path.parent}: {exc.strerror or exc}",
                fix="make the run directory writable (or copy it somewhere writable) and run the "
                    "command again",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = _holder(path)
            pid = (
                holder.split()[1]
                if holder.startswith("pid ") and len(holder.split()) > 1
                else "<pid>"
            )
            raise ConfigError(
                f"{path.parent} is in use by another primebot process ({holder})",
                fix="wait for it to finish, or stop it (Ctrl-C in its terminal, or kill -INT "
                    f"{pid.rstrip(':')}) "
                    "and resume",
            ) from None
        # The holder before us may have removed the file between our open and our flock: lock the
        # file that is there.
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


@contextlib.contextmanager
def run_dir_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock inside the block; ``ConfigError`` naming the holder when another
    process has it."""
    key = Path(run_dir).resolve()
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    path = key / LOCK_FILE
    fd = _acquire(path)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: primebot {' '.join(sys.argv[1:])}\n".encode())
        _HELD[key] = 1
        try:
            yield
        finally:
            del _HELD[key]
            # while still locked: a waiting process re-checks the inode
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)
