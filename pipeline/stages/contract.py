"""The stage contract: one step of ``primebot pipeline run``, its order and what it receives.

A plugin registers ``Stage(name, run, after=..., before=...)`` through
``register_stages``; the built-in stages (validate → replay → smoke → train →
evaluate → sim2sim → export) use the same hook. ``order_stages`` turns the
``after``/``before`` constraints into one order. ``run(ctx)`` receives a
``StageContext`` and returns a ``StageResult`` (or a plain dict of outputs,
or None); it raises ``StageSkipped`` when it cannot apply here (e.g. no
OpenGL for a video) and any exception to fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PluginError

if TYPE_CHECKING:
    from ..devices.backend import ResolvedDevice
    from ..registry import Registry
    from .presets import PipelineSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    """A pipeline stage registered through ``register_stages``, placed by ``after``/``before``."""

    name: str
    run: Callable[..., Any]
    """``run(ctx: StageContext) -> StageResult | dict[str, str] | None``."""
    after: tuple[str, ...] = ()
    """Stages that must come before this one."""
    before: tuple[str, ...] = ()
    """Stages that must come after this one."""
    description: str = ""
    """One line shown by ``primebot pipeline stages`` and in the report."""
    settings: tuple[str, ...] = ()
    """``PipelineSettings`` fields this stage's result depends on beyond its inputs: a ``--resume``
    that changes one runs the stage again (the train stage names ``iterations``, so ``--resume RUN
    --iterations 600`` trains on to 600)."""


@dataclass
class StageResult:
    """What a stage hands back: files it wrote, a few numbers, a line for the log."""

    outputs: dict[str, str] = field(default_factory=dict)
    """Label → path relative to the run directory (``{"policy": "export/policy.onnx"}``)."""
    summary: dict[str, Any] = field(default_factory=dict)
    """Small JSON-able facts shown in the stage table (``{"device": "cpu", "iterations": 300}``)."""
    message: str = ""
    """One line printed after the stage finishes."""
    warnings: list[str] = field(default_factory=list)
    """Things the user should know that did not fail the stage."""


class StageSkipped(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a stage that does not apply here; the pipeline records why and goes on."""

    def __init__(self, reason: str, *, fix: str | None = None) -> None:
        self.reason = reason
        self.fix = fix
        super().__init__(reason if fix is None else f"{reason} (fix: {fix})")


class StageInterrupted(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a stage that stopped on a signal after saving its state (resume continues it)."""


@dataclass
class StageContext:
    """Everything a stage receives: the run directory, the settings and earlier stages' results."""

    run_dir: Path
    settings: PipelineSettings
    registry: Registry
    stage: str
    """The name of the stage being run."""
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Outputs of the stages that finished, by stage name (including ones reused on
    ``--resume``)."""
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Summaries of the stages that finished, by stage name."""
    previous_status: str | None = None
    """This stage's status in the run being resumed (``running``/``interrupted``/``failed``…), else
    None."""
    echo: Callable[[str], None] = print
    """Prints a progress line for the user (stages should prefer it to ``print``)."""
    _device: ResolvedDevice | None = field(default=None, repr=False)

    @property
    def resuming(self) -> bool:
        """True when this stage ran before in this run directory and did not finish."""
        return self.previous_status is not None and self.previous_status != "done"

    def path(self, relative: str | Path) -> Path:
        """An absolute path inside the run directory."""
        return self.run_dir / relative

    def output(self, stage: str, label: str) -> Path | None:
        """The file an earlier stage recorded under ``label``, or None when it did not."""
        relative = self.outputs.get(stage, {}).get(label)
        return self.run_dir / relative if relative else None

    def robot_name(self) -> str | None:
        """The robot of this run: ``--robot``, else the task's default robot."""
        if self.settings.robot:
            return self.settings.robot
        return self.registry.get("tasks", self.settings.task).default_robot

    def motion_path(self) -> str:
        """The motion the stages use: validate's copy in the run directory when it made one.

        Training, evaluation and export then read a file that cannot change
        under a run being resumed (the original may be regenerated meanwhile).
        """
        copy = self.output("validate", "motion")
        return str(copy) if copy is not None else self.settings.motion

    def resolve_device(self) -> ResolvedDevice:
        """The device of this run per docs/architecture.md §4; raises ``DeviceUnavailableError``
        with the fix."""
        if self._device is None:
            from ..devices.backend import resolve_device

            self._device = resolve_device(self.registry, self.settings.device)
        return self._device


def normalize_result(value: Any, stage: str) -> StageResult:
    """Accept ``StageResult``, a dict of outputs, or None from ``Stage.run``."""
    if value is None:
        return StageResult()
    if isinstance(value, StageResult):
        return value
    if isinstance(value, Mapping):
        return StageResult(outputs={str(k): str(v) for k, v in value.items()})
    raise PluginError(
        f"stage {stage!r} returned a {type(value).__name__}",
        fix="return a StageResult, a dict of label → relative path, or None",
    )


def order_stages(stages: Iterable[Stage], owners: Mapping[str, str] | None = None) -> list[Stage]:
    """Order stages so every ``after``/``before`` constraint holds.

    Among stages free to go next, the one registered first goes first, so
    the built-in order is kept and a stage without constraints runs at the
    end. A constraint naming an unknown stage, or constraints forming a
    cycle, raise ``PluginError`` naming the stages and the plugins.
    """
    stages = list(stages)
    owners = owners or {}
    index = {stage.name: i for i, stage in enumerate(stages)}

    def who(name: str) -> str:
        return f"stage {name!r}" + (f" (plugin {owners[name]!r})" if name in owners else "")

    successors: dict[str, set[str]] = {stage.name: set() for stage in stages}
    for stage in stages:
        for word, names in (("after", stage.after), ("before", stage.before)):
            for other in names:
                if other not in index:
                    known = ", ".join(index) or "none"
                    raise PluginError(
                        f"{who(stage.name)} wants to run {word} {other!r}, which no plugin "
                        "registered; "
                        f"registered stages: {known}",
                        fix="fix the stage name in after=/before=, or install the plugin that "
                            "provides it",
                    )
                if other == stage.name:
                    raise PluginError(f"{who(stage.name)} names itself in {word}=")
                edge = (other, stage.name) if word == "after" else (stage.name, other)
                successors[edge[0]].add(edge[1])

    indegree = {name: 0 for name in successors}
    for targets in successors.values():
        for target in targets:
            indegree[target] += 1
    ready = sorted((name for name, deg in indegree.items() if deg == 0), key=index.__getitem__)
    ordered: list[str] = []
    while ready:
        name = ready.pop(0)
        ordered.append(name)
        for target in successors[name]:
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
        ready.sort(key=index.__getitem__)
    if len(ordered) < len(stages):
        cycle = _find_cycle({n: s for n, s in successors.items() if n not in ordered})
        path = " → ".join([*cycle, cycle[0]])
        plugins = sorted({owners[n] for n in cycle if n in owners})
        raise PluginError(
            f"the after/before constraints of the stages form a cycle: {path}"
            + (f" (plugins: {', '.join(plugins)})" if plugins else ""),
            fix="remove one of those constraints",
        )
    by_name = {stage.name: stage for stage in stages}
    return [by_name[name] for name in ordered]


def _find_cycle(successors: Mapping[str, set[str]]) -> list[str]:
    """One cycle among the stages Kahn's algorithm could not place.

    Each of them still has a predecessor among them, so walking predecessors
    always closes a loop (walking successors could dead-end behind a cycle).
    """
    predecessors: dict[str, list[str]] = {name: [] for name in successors}
    for name, targets in successors.items():
        for target in targets:
            if target in predecessors:
                predecessors[target].append(name)
    seen: list[str] = []
    node = min(successors)
    while node not in seen:
        seen.append(node)
        node = min(predecessors[node])
    cycle = seen[seen.index(node):]
    cycle.reverse()
    # start at the smallest name: the same cycle always reads the same
    first = cycle.index(min(cycle))
    return cycle[first:] + cycle[:first]
