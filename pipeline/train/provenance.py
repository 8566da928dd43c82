"""Which policy a result was made from, and whether it is still the run's policy
(docs/architecture.md §6).

Evaluation, export and sim2sim record the identity of the checkpoint they used
(``PolicyIdentity``: file name, iteration, content digest, run id) in the file
they write: eval.json and ``export/export.json`` under ``policy``, and the ONNX
metadata as ``checkpoint_digest`` and ``run_id``, which sim2sim.json and
stress.json copy into their ``policy``. ``stale_results(run_dir)`` compares each record with the
policy the run selects now (``trained_policy.run_policy_checkpoint``: ``model_best.pt``
of the best verdict check, else the newest good ``model_<it>.pt``): a result
made from another policy, or from another run's, is stale, and so is every file
of a stale bundle and the video a stale record names. report.html and the
pipeline runner use it, so neither shows such a result as current. A record
is judged stale only on evidence: without a loadable checkpoint nothing is
marked (but another run's result); beside one, a record that names no policy
(an older primebot wrote it) is stale.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, ConfigError
from ..rundir import (
    EVAL_FILE,
    EXPORT_DIR,
    EXPORT_REPORT,
    SIM2SIM_FILE,
    STRESS_FILE,
    VIDEO_DIR,
    read_result,
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
    digest: str
    """The checkpoint's content digest (``checkpoints.content_digest``)."""
    run_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.checkpoint} (iteration {self.iteration})"

    def same_policy(self, other: PolicyIdentity) -> bool:
        """Whether both name the same checkpoint content (by its digest)."""
        return self.digest == other.digest


def identity_of(policy: Any) -> PolicyIdentity:
    """The identity of a ``trained_policy.TrainedPolicy`` (what eval.json and export record)."""
    return PolicyIdentity(
        policy.checkpoint.name, int(policy.iteration), policy.digest, policy.run_id
    )


def recorded_identity(document: dict[str, Any], source: str | Path) -> PolicyIdentity:
    """The policy the result file ``source`` says it was made from: its ``policy`` entry (eval.json
    and export.json write ``PolicyIdentity.to_dict()``; sim2sim.json the ONNX metadata's
    ``checkpoint``, ``iteration``, ``checkpoint_digest`` and ``run_id``). A file without one is
    ``ConfigError``."""
    entry = document.get("policy")
    entry = entry if isinstance(entry, dict) else {}
    checkpoint, iteration = entry.get("checkpoint"), entry.get("iteration")
    digest, run_id = entry.get("digest") or entry.get("checkpoint_digest"), entry.get("run_id")
    try:
        iteration = int(iteration)
    except (TypeError, ValueError):
        iteration = None
    if not (checkpoint and digest and run_id) or iteration is None:
        raise ConfigError(
            f"{source} does not record the policy it was made from (checkpoint, iteration, digest "
            "and run id): an older primebot wrote it",
            fix="make it again with this primebot (the pipeline reruns the stage that wrote it)",
        )
    return PolicyIdentity(Path(str(checkpoint)).name, iteration, str(digest), str(run_id))


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
        from .checkpoints import require_same_run
        from .trained_policy import (
            run_policy_checkpoint,  # torch: only when the run has checkpoints
        )

        path, payload = run_policy_checkpoint(run_dir)
        _SELECTED.clear()  # one run at a time is judged; keep the cache small
        require_same_run(payload, read_run_id(run_dir), path)
        _SELECTED[key] = PolicyIdentity(path.name, int(payload["iteration"]),
                                        str(payload["digest"]), str(payload["run_id"]))
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


def covered(record: str, document: dict[str, Any]) -> list[str]:
    """The paths a result record stands for: itself, all of ``export/`` for the bundle's record, and
    the videos it names."""
    paths = [record, *([f"{EXPORT_DIR}/"] if record.startswith(f"{EXPORT_DIR}/") else [])]
    videos = [document.get("video"), *(document.get("videos") or {}).values()]
    return paths + [f"{VIDEO_DIR}/{Path(str(video)).name}" for video in videos if video]


def results(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """The result records present in ``run_dir`` (relative path → its content)."""
    found = {record: read_result(Path(run_dir) / record) for record in RECORDS}
    return {record: document for record, document in found.items() if document is not None}


def stale_results(run_dir: str | Path) -> Staleness:
    """Every result in ``run_dir`` that was made from another policy than the one the run selects
    now."""
    run_dir = Path(run_dir)
    try:
        selected = selected_policy(run_dir)
        run_id = read_run_id(run_dir)
    except (CheckpointError, ConfigError) as exc:
        return Staleness(None, unknown=str(exc).splitlines()[0])
    out = Staleness(selected)
    for record, document in results(run_dir).items():
        try:
            made_from = recorded_identity(document, Path(run_dir) / record)
        except ConfigError as exc:
            if selected is not None:  # beside the run's policy it cannot be shown as current
                why = str(exc).splitlines()[0]
                out.stale.update(dict.fromkeys(covered(record, document), why))
            continue
        if run_id is not None and made_from.run_id != run_id:
            why = (
                f"{record} was made from another run's policy ({made_from.describe()}, "
                f"run id {made_from.run_id[:12]}…)"
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
