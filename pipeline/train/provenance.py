"""Which policy a result was made from, and whether it is still the run's policy
(docs/architecture.md §6).

Evaluation, export and sim2sim record the identity of the checkpoint they used
(``PolicyIdentity``: file name, iteration, content digest, run id) in the file
they write: eval.json and ``export/export.json`` under ``policy``, and the ONNX
metadata as ``checkpoint_digest`` and ``run_id``, which sim2sim.json and
stress.json copy into their ``policy``. ``stale_results(run_dir)`` compares each record with the
policy the run selects now (``policy.run_policy_checkpoint``: ``model_best.pt``
of the best verdict check, else the newest good ``model_<it>.pt``): a result
made from another policy, or from another run's, is stale, and so is every file
of a stale bundle and the video a stale record names. report.html and the
pipeline runner use it, so neither shows such a result as current. A record
is judged stale only on evidence: without a loadable checkpoint, or for a
record that names no policy, nothing is marked.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from ..rundir import (
    EVAL_FILE,
    EXPORT_DIR,
    EXPORT_REPORT,
    SIM2SIM_FILE,
    STRESS_FILE,
    VIDEO_DIR,
    read_run_id,
)

log = logging.getLogger(__name__)

RECORDS = (EVAL_FILE, f"{EXPORT_DIR}/{EXPORT_REPORT}", SIM2SIM_FILE, STRESS_FILE)
"""The files that record the policy they were made from (relative to the run directory). A stale
``export/export.json`` makes all of ``export/`` stale."""


@dataclass(frozen=True)
class PolicyIdentity:
    """One checkpoint as the results made from it record it."""

    checkpoint: str
    """The file name (``model_best.pt``, ``model_300.pt``)."""
    iteration: int
    digest: str = ""
    """The checkpoint's content digest (``checkpoints.content_digest``); empty in records from
    before it."""
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.checkpoint} (iteration {self.iteration})"

    def same_policy(self, other: PolicyIdentity) -> bool:
        """Whether both name the same checkpoint content (by digest when both carry one, else by
        name and iteration, as records from before digests allow)."""
        if self.digest and other.digest:
            return self.digest == other.digest
        return (self.checkpoint, self.iteration) == (other.checkpoint, other.iteration)


def identity_of(policy: Any) -> PolicyIdentity:
    """The identity of a ``policy.TrainedPolicy`` (what eval.json and export record)."""
    return PolicyIdentity(policy.checkpoint.name, int(policy.iteration), policy.digest,
                          policy.run_id)


def recorded_identity(document: dict[str, Any]) -> PolicyIdentity | None:
    """The policy a result file says it was made from: its ``policy`` entry (eval.json and
    export.json write ``PolicyIdentity.to_dict()``; sim2sim.json the ONNX metadata's ``checkpoint``,
    ``iteration``, ``checkpoint_digest`` and ``run_id``), else the top-level ``checkpoint`` and
    ``iteration`` of older files."""
    entry = document.get("policy")
    source = entry if isinstance(entry, dict) and entry.get("checkpoint") else document
    checkpoint, iteration = source.get("checkpoint"), source.get("iteration")
    if not checkpoint or iteration in (None, ""):
        return None
    try:
        iteration = int(iteration)
    except (TypeError, ValueError):
        return None
    digest = source.get("digest") or source.get("checkpoint_digest") or ""
    return PolicyIdentity(Path(str(checkpoint)).name, iteration, str(digest),
                          source.get("run_id") or None)


_SELECTED: dict[tuple, PolicyIdentity | None] = {}
"""``selected_policy`` per run directory and state of its checkpoint files (loading one costs a
torch load)."""


def _signature(run_dir: Path) -> tuple:
    files = []
    for path in sorted(run_dir.glob("model_*.pt")):
        try:
            st = path.stat()
        except OSError:
            continue
        files.append((path.name, st.st_ino, st.st_size, st.st_mtime_ns))
    return (str(run_dir.resolve()), *files)


def selected_policy(run_dir: str | Path) -> PolicyIdentity | None:
    """The identity of the policy evaluate and export would use now, or None when the run has no
    checkpoint.

    A checkpoint that cannot be read raises its ``CheckpointError``.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not any(run_dir.glob("model_*.pt")):
        return None
    key = _signature(run_dir)
    if key not in _SELECTED:
        from .policy import run_policy_checkpoint  # torch: only when the run has checkpoints

        path, payload = run_policy_checkpoint(run_dir)
        _SELECTED.clear()  # one run at a time is judged; keep the cache small
        _SELECTED[key] = PolicyIdentity(path.name, int(payload.get("iteration", 0)),
                                        str(payload.get("digest", "")),
                                        payload.get("run_id") or read_run_id(run_dir))
    return _SELECTED[key]


@dataclass
class Staleness:
    """What of a run directory was made from another policy than the one it selects now."""

    selected: PolicyIdentity | None
    stale: dict[str, str] = field(default_factory=dict)
    """Path relative to the run directory (a directory ends in ``/``) → why it is stale."""
    unknown: str = ""
    """Why currency could not be judged (a checkpoint that cannot be read), else empty."""

    def reason(self, relative: str | Path) -> str:
        """Why the file at ``relative`` is stale (it, or a directory holding it, is), or ''."""
        text = Path(relative).as_posix()
        for path, why in self.stale.items():
            if text == path.rstrip("/") or (path.endswith("/") and text.startswith(path)):
                return why
        return ""


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def covered(record: str, document: dict[str, Any]) -> list[str]:
    """The paths a result record stands for: itself, all of ``export/`` for the bundle's record, and
    the videos it names."""
    paths = [record, *([f"{EXPORT_DIR}/"] if record.startswith(f"{EXPORT_DIR}/") else [])]
    videos = [document.get("video"), *(document.get("videos") or {}).values()]
    return paths + [f"{VIDEO_DIR}/{Path(str(video)).name}" for video in videos if video]


def results(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """The result records present in ``run_dir`` (relative path → its content)."""
    found = {record: _read(Path(run_dir) / record) for record in RECORDS}
    return {record: document for record, document in found.items() if document is not None}


def stale_results(run_dir: str | Path) -> Staleness:
    """Every result in ``run_dir`` that was made from another policy than the one the run selects
    now."""
    run_dir = Path(run_dir)
    try:
        selected = selected_policy(run_dir)
    except CheckpointError as exc:
        return Staleness(None, unknown=str(exc).splitlines()[0])
    run_id = read_run_id(run_dir)
    out = Staleness(selected)
    for record, document in results(run_dir).items():
        made_from = recorded_identity(document)
        if made_from is None:
            continue
        if made_from.run_id and run_id and made_from.run_id != run_id:
            why = (
                f"{record} was made from another run's policy ({made_from.describe()}, run id "
                f"{made_from.run_id[:12]}…)"
            )
        elif selected is not None and not made_from.same_policy(selected):
            why = (
                f"{record} was made from {made_from.describe()}; the run's policy is now "
                f"{selected.describe()}"
            )
        else:
            continue
        out.stale.update(dict.fromkeys(covered(record, document), why))
    return out
