"""Checkpoints: written atomically, loaded with ``weights_only=True``, verified by digest.

A checkpoint (docs/architecture.md §3) is a dict of tensors, numbers, strings and lists
only, so that ``torch.load(weights_only=True)`` can read it without running
pickle code. It carries a SHA-256 digest of its own content: a truncated or
bit-flipped file is refused by name, and resume falls back to the previous
good one; a file that cannot be read for another reason (I/O error, out of
memory, a newer format) stops with that reason instead. Nothing non-finite
is ever written.
"""

from __future__ import annotations

import errno
import hashlib
import io
import logging
import os
import pickle
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..atomic import atomic_path
from ..errors import OLDER_RUN_FIX, CheckpointError, CorruptCheckpointError, NonFiniteError
from ..limits import MAX_CHECKPOINT_BYTES, over_budget

log = logging.getLogger(__name__)

FORMAT = "primebot-checkpoint"
VERSION = 1
CHECKPOINT_PATTERN = re.compile(r"^model_(\d+)\.pt$")
"""Numbered checkpoints, ``model_<iteration>.pt``; ``model_best.pt`` is not resumed from."""
# The way out of a truncated or corrupt checkpoint (both load errors suggest it).
_EARLIER_CHECKPOINT_FIX = (
    "resume from an earlier model_<it>.pt (primebot does this automatically with --resume)"
)
ZIP_MAGIC = b"PK\x03\x04"
"""torch.save's format is a zip archive; anything else is not a checkpoint primebot wrote."""
REQUIRED_KEYS = ("iteration", "learner")
"""What every primebot checkpoint holds besides its format marker and digest."""


# -- numpy ↔ tensor, so environment state survives weights_only -------------------
def to_storable(value: Any) -> Any:
    """Replace numpy arrays/scalars by tensors/Python numbers, recursively."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": torch.from_numpy(np.ascontiguousarray(value).copy())}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: to_storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_storable(v) for v in value)
    return value


def from_storable(value: Any) -> Any:
    """Inverse of ``to_storable``."""
    if isinstance(value, dict):
        if set(value) == {"__ndarray__"}:
            return value["__ndarray__"].numpy()
        return {k: from_storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(from_storable(v) for v in value)
    return value


# -- digest and finiteness ---------------------------------------------------------
def _walk(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _walk(value[key], f"{prefix}/{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{prefix}[{i}]")
    else:
        yield prefix, value


def content_digest(payload: dict[str, Any]) -> str:
    """SHA-256 over every leaf (tensor bytes, dtype, shape; repr of other values)."""
    digest = hashlib.sha256()
    for name, leaf in _walk({k: v for k, v in payload.items() if k != "digest"}):
        digest.update(name.encode())
        if isinstance(leaf, torch.Tensor):
            t = leaf.detach().cpu().contiguous()
            digest.update(f"{t.dtype}{tuple(t.shape)}".encode())
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(leaf).encode())
    return digest.hexdigest()


def nonfinite_entries(payload: Any) -> list[str]:
    """Paths of floating-point tensors (or floats) holding NaN or Inf."""
    bad = []
    for name, leaf in _walk(payload):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            if not bool(torch.isfinite(leaf).all()):
                bad.append(name)
        elif isinstance(leaf, float) and not np.isfinite(leaf):
            bad.append(name)
    return bad


# -- save / load -------------------------------------------------------------------
def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` atomically (temp file in the same directory, fsync, rename).

    Refuses (``NonFiniteError``) when any tensor holds NaN/Inf: a bad
    checkpoint must never replace a good one.
    """
    path = Path(path)
    bad = nonfinite_entries(payload)
    if bad:
        raise NonFiniteError(
            f"refusing to write checkpoint {path}: non-finite values in {', '.join(bad[:5])}",
            fix="training diverged; resume from the previous checkpoint with a lower learning rate "
                "(primebot train --resume RUN_DIR --set ppo.learning_rate=1e-4)",
        )
    data = {**payload, "format": FORMAT, "version": VERSION}
    data["digest"] = content_digest(data)
    with atomic_path(path) as tmp:
        torch.save(data, tmp)
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load and verify a checkpoint; any problem is a ``CheckpointError`` naming the file.

    This is the one rule for reading a checkpoint (resume, eval, export): the
    file must be a zip archive (what ``torch.save`` writes), load with
    ``weights_only=True`` (a pickled object, code that would run on load, is
    rejected before anything in it executes), carry the primebot format
    marker and version, the keys every checkpoint has, and a digest matching
    its content. The file is read in one piece first, so an I/O error or a
    lack of memory is reported as such (``CheckpointError``), never mistaken
    for damage; only damage is a ``CorruptCheckpointError`` (the one error
    resume and evaluation step over, ``load_latest_good``). Whatever goes wrong
    inside ``torch.load`` on damaged bytes is reported as corrupt, never as a
    traceback.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    raw = _read(path)
    if raw[: len(ZIP_MAGIC)] != ZIP_MAGIC:
        what = "empty" if not raw else "not a torch checkpoint (no zip header)"
        raise CorruptCheckpointError(f"checkpoint {path} is {what}", fix=_EARLIER_CHECKPOINT_FIX)
    _check_size(path, raw)
    try:
        data = torch.load(io.BytesIO(raw), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            f"checkpoint {path} carries a pickled Python object that weights_only loading refuses "
            f"(it could run code); it was not loaded: {str(exc).splitlines()[0]}",
            fix="only load checkpoints written by primebot; never lower the safety of torch.load; "
                "move the file "
                "out of the run directory",
        ) from None
    # torch raises anything (IndexError, KeyError…) on foreign bytes
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, MemoryError) or _out_of_memory(exc):
            raise _memory_error(path, exc) from None
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise CorruptCheckpointError(
            f"checkpoint {path} is truncated or corrupt: {type(exc).__name__}: {first}",
            fix=_EARLIER_CHECKPOINT_FIX,
        ) from None
    del raw
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a primebot checkpoint (no '{FORMAT}' marker)",
                              fix="move the file out of the run directory; only primebot's own "
                                  "checkpoints load")
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise CheckpointError(
            f"checkpoint {path} was written by a newer primebot (checkpoint format {version}; this "
            "primebot "
            f"reads format {VERSION}); it was not loaded, and nothing falls back to an older "
            "checkpoint",
            fix="upgrade primebot (pip install -U primebot) to continue or evaluate this run",
        )
    if version != VERSION:
        raise CheckpointError(f"checkpoint {path} has version {version!r}; this primebot reads "
                              f"{VERSION}")
    if data.get("digest") != content_digest(data):
        raise CorruptCheckpointError(
            f"checkpoint {path} is corrupt: its content does not match its digest",
            fix=_EARLIER_CHECKPOINT_FIX,
        )
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise CorruptCheckpointError(f"checkpoint {path} lacks {', '.join(missing)}",
                                     fix=_EARLIER_CHECKPOINT_FIX)
    return data


_OUT_OF_MEMORY = ("can't allocate memory", "out of memory", "defaultcpuallocator", "bad_alloc",
                  "cannot allocate memory")
"""How torch and the C++ allocator word a failed allocation (a ``RuntimeError``, not a
``MemoryError``)."""


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(words in text for words in _OUT_OF_MEMORY) or (
        isinstance(exc, OSError) and exc.errno == errno.ENOMEM)


def _memory_error(path: Path, exc: BaseException) -> CheckpointError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return CheckpointError(
        f"checkpoint {path} could not be loaded: out of memory ({first}); the file was not judged, "
        "and "
        "nothing falls back to an older checkpoint",
        fix="free memory (close other programs, fewer parallel jobs) and run the command again",
    )


def _read(path: Path) -> bytes:
    """The whole file, after checking its size; an I/O error or a lack of memory is named as
    such."""
    try:
        size = path.stat().st_size
        problem = over_budget(f"checkpoint {path}", size, MAX_CHECKPOINT_BYTES)
        if problem:
            raise CheckpointError(problem, fix="only load checkpoints written by primebot")
        with open(path, "rb") as fh:
            return fh.read()
    except MemoryError as exc:
        raise _memory_error(path, exc) from None
    except OSError as exc:
        if _out_of_memory(exc):
            raise _memory_error(path, exc) from None
        raise CheckpointError(
            f"checkpoint {path} cannot be read: {exc.strerror or exc} (errno {exc.errno}); the "
            "file was not "
            "judged, and nothing falls back to an older checkpoint",
            fix="check the disk and the file's permissions (dmesg, ls -l), then run the command "
                "again",
        ) from None


def _check_size(path: Path, raw: bytes) -> None:
    """Refuse, from the zip directory alone, a checkpoint that would decode past
    ``MAX_CHECKPOINT_BYTES`` or holds compressed entries (``torch.save`` never compresses; a
    deflated entry is a zip bomb's tool)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint {path} is truncated or corrupt: "
                                     f"{type(exc).__name__}: {exc}",
                                     fix=_EARLIER_CHECKPOINT_FIX) from None
    if any(info.compress_type != zipfile.ZIP_STORED for info in entries):
        raise CheckpointError(f"checkpoint {path} holds compressed entries: torch.save did not "
                              "write it",
                              fix="only load checkpoints written by primebot")
    problem = over_budget(f"checkpoint {path}", sum(info.file_size for info in entries),
                          MAX_CHECKPOINT_BYTES)
    if problem:
        raise CheckpointError(problem, fix="only load checkpoints written by primebot")


def link_checkpoint(source: str | Path, target: str | Path) -> Path:
    """Make ``target`` the same file as ``source`` atomically: a hard link (no second copy on disk),
    or a copy where the file system has no links. A reader sees the old ``target`` or the new
    one."""
    source, target = Path(source), Path(target)
    with atomic_path(target) as tmp:
        tmp.unlink()
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
    return target


def require_same_run(payload: dict[str, Any], run_id: str | None, source: str | Path) -> None:
    """Refuse a checkpoint written by another run (its ``run_id`` differs from args.yaml's
    ``run.id``), one without a run identity (an older primebot wrote it), and one in a directory
    without args.yaml."""
    if run_id is None:
        raise CheckpointError(
            f"{source} is in a directory without args.yaml: nothing says which run it belongs to",
            fix="evaluate or export the run directory it came from",
        )
    theirs = payload.get("run_id")
    if not theirs:
        raise CheckpointError(
            f"{source} carries no run identity: an older primebot wrote it, and this one cannot "
            "tell whether it belongs to the run",
            fix=OLDER_RUN_FIX,
        )
    if theirs != run_id:
        raise CheckpointError(
            f"{source} belongs to another run (run id {str(theirs)[:12]}…; this run is "
            f"{run_id[:12]}…): it was "
            "copied in from elsewhere, and is neither resumed, evaluated nor exported as this "
            "run's policy",
            fix="move it out of the run directory; evaluate or export the run it came from instead",
        )


def numbered_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(iteration, path) of every ``model_<it>.pt`` in ``run_dir``, newest first."""
    found = []
    for path in Path(run_dir).iterdir():
        match = CHECKPOINT_PATTERN.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found, reverse=True)


def load_latest_good(run_dir: str | Path,
                     map_location: str | torch.device = "cpu") -> tuple[Path, dict[str, Any]]:
    """The newest checkpoint in ``run_dir`` that loads: damaged ones (``CorruptCheckpointError``)
    are skipped with a warning; any other failure (an I/O error, out of memory, a newer format, a
    foreign file) is raised, so a good checkpoint is never passed over for an older one and later
    overwritten."""
    candidates = numbered_checkpoints(run_dir)
    if not candidates:
        partial = interrupted_writes(run_dir)
        if partial:
            raise CheckpointError(
                f"no checkpoint was completed in {run_dir}: the run stopped while writing its "
                "first one "
                f"({partial[0].name} is the unfinished write); there is nothing to resume",
                fix="start the run again (without --resume)",
            )
        raise CheckpointError(f"no model_<it>.pt checkpoint in {run_dir}",
                              fix="check the run directory path")
    errors = []
    for _, path in candidates:
        try:
            return path, load_checkpoint(path, map_location)
        # any other reason stops here (docs/architecture.md §3)
        except CorruptCheckpointError as exc:
            log.warning("warning: %s; falling back to the previous checkpoint",
                        str(exc).splitlines()[0])
            errors.append(str(exc).splitlines()[0])
    raise CheckpointError(
        f"no loadable checkpoint in {run_dir}: " + "; ".join(errors),
        fix="start the run again (without --resume); the files above are not checkpoints primebot "
            "can read",
    )


def interrupted_writes(run_dir: str | Path) -> list[Path]:
    """Temporary files of atomic checkpoint writes that never finished (the process was killed
    mid-write)."""
    return sorted(Path(run_dir).glob(".model_*.pt.*.pt.tmp"))
