"""The run directory's checkpoint files while training: numbered, best, and the final choice
(docs/architecture.md §3).

``model_<it>.pt`` every ``runner.save_interval`` iterations and at every verdict check whose
policy may be judged; ``model_best.pt`` the policy of the best check (a hard link to its numbered
file), or, when training ends without a confirmed stop, the one of the top checks that fresh pushed
episodes confirm best (``VerdictChecks.final_choice``): a copy of its numbered file that records
the choice.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from ..errors import CorruptCheckpointError
from ..rundir import BEST_CHECKPOINT
from .checkpoints import link_checkpoint, load_checkpoint, save_checkpoint
from .trained_policy import load_trained_policy

log = logging.getLogger(__name__)


class CheckpointKeeping:
    """``OnPolicyRunner``'s checkpoint files (a mixin: the runner holds ``cfg``, ``run_dir``,
    ``dist``, ``checks``, ``iteration``, ``best_return``, ``_train_log`` and ``_saved_iteration``,
    and writes its state with ``checkpoint_payload``)."""

    def _maybe_save(self, row: dict[str, Any]) -> None:
        """Numbered and best checkpoints; every rank takes part (their state is gathered).

        The best verdict check's policy is first written as ``model_<it>.pt``, then
        ``model_best.pt`` is made a hard link to it (a copy where links are not supported):
        ``model_best.pt`` is always one of the numbered checkpoints (or, after the final
        choice, a copy of one that records it), so a stop between the two writes is repaired on
        resume (``reconcile_best``). A final-choice candidate's policy is written as
        ``model_<it>.pt`` too.
        """
        if self.run_dir is None and not self.dist.enabled:
            return
        numbered = (
            self.iteration % self.cfg.runner.save_interval == 0
            and self.iteration < self.cfg.iterations
        )
        if self.checks_verdict:
            # the policy of the best verdict check (what evaluate, export and sim2sim use:
            # train/trained_policy.py), and the top checks' policies for the final choice
            best_due, self.checks.best_due = self.checks.best_due, False
            candidate_due, self.checks.candidate_due = self.checks.candidate_due, False
            path = self.save_numbered() if numbered or best_due or candidate_due else None
            if best_due and path is not None:
                link_checkpoint(path, self.run_dir / BEST_CHECKPOINT)
            return
        if numbered:
            self.save_numbered()
        ret = row.get("episode_return")
        # Checked on a coarse grid so an improving run does not rewrite it every iteration.
        best_every = max(1, self.cfg.runner.save_interval // 10)
        if ret is not None and ret > self.best_return and self.iteration % best_every == 0:
            self.best_return = ret
            self._save_as(BEST_CHECKPOINT)

    @property
    def checks_verdict(self) -> bool:
        """Whether training checks the verdict (``runner.check_interval`` with the task's probe)."""
        return self.checks.probe is not None and self.cfg.runner.check_interval > 0

    def save_numbered(self) -> Path | None:
        """Write ``model_<iteration>.pt`` in the run directory (rank 0; others only gather), once
        per iteration."""
        if self.run_dir is None and not self.dist.enabled:
            return None
        name = f"model_{self.iteration}.pt"
        # already written at this iteration (a best check)
        if self._saved_iteration == self.iteration:
            return self.run_dir / name if self.run_dir is not None and self.dist.is_main else None
        path = self._save_as(name)
        self._saved_iteration = self.iteration
        return path

    def _save_as(self, name: str) -> Path | None:
        """Gather every rank's state (all ranks call this); rank 0 writes it as ``run_dir/name``.

        The rows of train.csv up to this iteration are written (and synced) first, so a checkpoint
        never gets ahead of the log it is resumed with.
        """
        payload = self.checkpoint_payload()
        if self.run_dir is None or not self.dist.is_main:
            return None
        if self._train_log is not None:
            self._train_log.sync()
        return save_checkpoint(self.run_dir / name, payload)

    def reconcile_best(self) -> str:
        """After ``restore``: make ``model_best.pt`` the policy of the restored best check, or say
        why not.

        A stop between writing ``model_<it>.pt`` and linking ``model_best.pt``, or a resume from an
        older checkpoint than the newest (a damaged one skipped), leaves ``model_best.pt`` naming
        another check than the one the restored state records. It is linked again from
        ``model_<best>.pt``; a ``model_best.pt`` from checks the restored state never made is kept
        aside as ``model_best.pt.abandoned``. Returns what was done (empty when nothing was needed).
        """
        if self.run_dir is None or not self.dist.is_main or not self.checks_verdict:
            return ""
        best_file = self.run_dir / BEST_CHECKPOINT
        want = self.checks.best_iteration if self.checks.best is not None else None
        have = _best_check_iteration(best_file)
        if have == want:
            return ""
        source = self.run_dir / f"model_{want}.pt" if want is not None else None
        if source is not None and source.is_file():
            link_checkpoint(source, best_file)
            message = (f"{BEST_CHECKPOINT} did not hold the best check the checkpoint records "
                       f"(iteration {want}); linked again from {source.name}")
        elif best_file.is_file() and have is not None and have > self.iteration:
            aside = best_file.with_name(BEST_CHECKPOINT + ".abandoned")
            best_file.replace(aside)
            message = (f"{BEST_CHECKPOINT} came from iteration {have}, after the checkpoint "
                       f"resumed from (iteration {self.iteration}); kept aside as {aside.name}")
        else:
            return ""
        log.warning("warning: %s", message)
        return message

    def choose_final_best(self) -> str:
        """When training ends without a confirmed stop: confirm the top checks' policies on fresh
        pushed episodes and make the best of them ``model_best.pt`` (``VerdictChecks.final_choice``;
        rank 0, which holds the files). Returns what was chosen, in words ('' when nothing was)."""
        if self.run_dir is None or not self.dist.is_main or not self.checks_verdict:
            return ""
        files = {it: self.run_dir / f"model_{it}.pt" for it in self.checks.candidate_iterations}
        if not all(path.is_file() for path in files.values()):
            return ""  # a resumed run whose candidates' files were removed: the best check stands
        with torch.no_grad():
            # each candidate as evaluate and export will load it (checked against the run's id)
            chosen = self.checks.final_choice(
                lambda it: load_trained_policy(self.run_dir, files[it]))
        if not chosen:
            return ""
        # the chosen policy's file, recording the choice, so that a resume and the later stages
        # agree on it (``reconcile_best``)
        source = self.run_dir / f"model_{self.checks.best_iteration}.pt"
        if source.is_file():  # written at its check, as the best or as a candidate
            payload = load_checkpoint(source)
            payload["best_check"] = self.checks.state()
            save_checkpoint(self.run_dir / BEST_CHECKPOINT, payload)
        log.warning("%s", chosen)
        return chosen


def _best_check_iteration(path: Path) -> int | None:
    """The iteration of the verdict check whose policy ``path`` holds (None: no such file, or no
    check)."""
    if not path.is_file():
        return None
    try:
        best_check = load_checkpoint(path).get("best_check")
    except CorruptCheckpointError:
        return None
    return int(best_check[-1]) if best_check else None
