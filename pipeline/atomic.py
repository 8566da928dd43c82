"""Atomic file writes: a reader sees the old file or the new one, never a partial one."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import DiskFullError, PrimebotError

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
LOW_SPACE_BYTES = 1 << 20
"""Below this much free space a failed write is taken to be a full disk (torch wraps ENOSPC in a
``RuntimeError: … unexpected pos``, which names no errno)."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success fsync it and rename it over ``path``.

    On any exception the temporary file is removed and ``path`` is untouched.
    ``suffix`` defaults to the target's suffix so that writers which infer a
    format from the name (np.savez, imageio) still do the right thing.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=(target.suffix if suffix is None else suffix) + ".tmp",
        dir=target.parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    # mkstemp makes the file owner-only; give it the mode a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException as exc:
        full = disk_full_error(exc, target) if isinstance(exc, Exception) else None
        tmp.unlink(missing_ok=True)
        if full is not None:
            raise full from exc
        raise


def disk_full_error(exc: BaseException, path: str | os.PathLike) -> DiskFullError | None:
    """A ``DiskFullError`` naming ``path`` when ``exc`` (or what caused it) is a full file system,
    else None."""
    if isinstance(exc, PrimebotError):
        if isinstance(exc, DiskFullError):
            return exc
        if not isinstance(exc.__cause__, OSError):
            return None
        # e.g. a RenderError of a video encoder that died writing to a full disk
        exc = exc.__cause__
    seen: BaseException | None = exc
    full = False
    while seen is not None and not full:
        full = isinstance(seen, OSError) and seen.errno in FULL_ERRNOS
        seen = seen.__cause__ or seen.__context__
    if not full:
        try:
            full = shutil.disk_usage(Path(path).parent).free < LOW_SPACE_BYTES
        except OSError:
            return None
    if not full:
        return None
    where = Path(path).parent
    return DiskFullError(
        f"no space left on the device holding {where}: writing {Path(path).name} failed "
        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); nothing was "
        "replaced",
        fix=f"free space on that file system (df -h {where}), or write the run elsewhere "
            "(--log-dir), then resume",
    )


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w",
                encoding: str | None = "utf-8") -> Iterator[IO]:
    """``open()`` for writing, made atomic with ``atomic_path``."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding) as fh:
        yield fh


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path, "w") as fh:
        fh.write(text)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path, "wb") as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty staging directory beside ``path``; on success it replaces ``path`` as a whole.

    On any exception the staging directory is removed and ``path`` is untouched, so a failure never
    leaves a half-built directory where a good one was. The swap is two renames (``path`` to
    ``.<name>.old``, the staging directory to ``path``); ``recover_directory`` finishes or undoes
    one that a crash cut between them.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_directory(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield staging
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        full = disk_full_error(exc, staging / "x") if isinstance(exc, Exception) else None
        if full is not None:
            raise full from exc
        raise
    old = _old_copy(target)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    _fsync_dir(target.parent)
    shutil.rmtree(old, ignore_errors=True)


def _old_copy(target: Path) -> Path:
    return target.with_name(f".{target.name}.old")


def recover_directory(path: str | os.PathLike) -> None:
    """Finish what a crash left of an ``atomic_directory`` swap: put back the old directory when the
    new one never arrived, and remove leftover staging and old copies. Call it holding the run
    directory's lock."""
    target = Path(path)
    old = _old_copy(target)
    if old.exists() and not target.exists():
        os.replace(old, target)
    shutil.rmtree(old, ignore_errors=True)
    for staging in target.parent.glob(f".{target.name}.*.tmp"):
        if staging.is_dir():
            shutil.rmtree(staging, ignore_errors=True)


def clean_interrupted_writes(directory: str | os.PathLike) -> list[Path]:
    """Remove what killed writers left under ``directory``: ``atomic_path``'s temporary files and
    ``atomic_directory``'s staging directories, and finish cut directory swaps
    (``recover_directory``). Returns what was removed. Call it holding the directory's lock (nobody
    else is writing)."""
    root = Path(directory)
    for old in sorted(root.rglob(".*.old")):
        if old.is_dir():
            recover_directory(old.with_name(old.name[1:-len(".old")]))
    removed = []
    for leftover in sorted(root.rglob(".*.tmp"), key=lambda p: len(p.parts), reverse=True):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
        removed.append(leftover)
    return removed


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
