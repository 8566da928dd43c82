"""Whether a done stage's result still holds (docs/architecture.md, "The run directory never lies").

A stage's result is out of date when a stage it comes after ran again since (``outdated_by``) or
when what it was made from changed without any such rerun (``stale_reason``: a pipeline setting it
depends on, or a file it wrote made from another policy than the run holds now). The pipeline
runner asks before each stage; ``settle`` marks every out-of-date stage pending, which the runner
does at the end of every attempt and a single-stage command after recording what it did.
"""

from __future__ import annotations

from ..train.provenance import stale_results
from .contract import Stage
from .record import PipelineRecord


def upstream_stages(stages: list[Stage]) -> dict[str, set[str]]:
    """For each stage, every stage that must come before it (its ``after``/``before`` constraints,
    transitively)."""
    direct: dict[str, set[str]] = {stage.name: set(stage.after) for stage in stages}
    for stage in stages:
        for later in stage.before:
            direct.setdefault(later, set()).add(stage.name)
    closed: dict[str, set[str]] = {}

    def walk(name: str) -> set[str]:
        if name not in closed:
            closed[name] = set()  # order_stages has refused cycles; this only guards the recursion
            for parent in direct.get(name, ()):
                closed[name] |= {parent, *walk(parent)}
        return closed[name]

    return {stage.name: walk(stage.name) for stage in stages}


class Staleness:
    """Which of a run's done stages no longer hold, and why."""

    def __init__(self, record: PipelineRecord, stages: list[Stage]) -> None:
        self.record = record
        self.stages = stages
        self.upstream = upstream_stages(stages)

    def outdated_by(self, name: str) -> str:
        """The upstream stage that finished after ``name`` did (so ``name`` must run again), or ''.

        The one invalidation rule: a stage's result is kept only while every
        stage it comes after (``after``/``before``, transitively) finished
        before it. A rerun train therefore reruns evaluate, export and
        sim2sim, also when the pipeline was killed in between and resumed.
        """
        record = self.record.stage(name)
        if record.status != "done":
            return ""
        newer = [r for r in self.record.stages
                 if r.name in self.upstream[name] and r.sequence > record.sequence]
        return max(newer, key=lambda r: r.sequence).name if newer else ""

    def stale_reason(self, stage: Stage) -> str:
        """Why ``stage``'s done result no longer holds although no stage it comes after ran since,
        or '': a pipeline setting it depends on changed (``Stage.settings``, e.g. train's
        ``--iterations`` on --resume), or a file it wrote was made from another policy than the one
        the run holds now (train/provenance.py: after ``primebot train --resume`` outside the
        pipeline, or an interrupted rerun)."""
        record = self.record.stage(stage.name)
        if record.status != "done":
            return ""
        for key in stage.settings:
            now = getattr(self.record.settings, key, None)
            option = f"--{key.replace('_', '-')}"
            if key not in record.settings:  # its plugin added the setting since the stage ran
                return f"{option} was not recorded when it ran"
            if record.settings[key] != now:
                return f"{option} changed from {record.settings[key]} to {now}"
        if record.outputs:
            staleness = stale_results(self.record.run_dir)
            for path in record.outputs.values():
                why = staleness.reason(path)
                if why:
                    return why
        return ""

    def settle(self) -> None:
        """Mark as pending every done stage whose result no longer holds (``outdated_by``,
        ``stale_reason``), saying why: pipeline.json never shows an out-of-date result as done, also
        when the run stopped before reaching the stage."""
        for stage in self.stages:
            record = self.record.stage(stage.name)
            if record.status != "done":
                continue
            upstream = self.outdated_by(stage.name)
            why = f"it predates {upstream}'s rerun" if upstream else self.stale_reason(stage)
            if why:
                record.status = "pending"
                record.reason = (
                    f"its earlier result no longer holds ({why}); it runs again on --resume"
                )
