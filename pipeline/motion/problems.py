"""Findings of motion validation: a located ``Problem``, the ``ValidationReport`` of one file, and
the ``ProblemCollector`` the checks in ``motion.validate`` write to.

Kept apart from the checks so the report's shape (its text and JSON forms) is in one place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

MAX_FRAMES_LISTED = 10


@dataclass
class Problem:
    """One located finding. ``frame`` is the first affected frame; ``frames`` lists some, ``count``
    all."""

    severity: str
    """``error`` or ``warning``."""
    check: str
    message: str
    key: str | None = None
    frame: int | None = None
    column: str | None = None
    fix: str | None = None
    frames: list[int] = field(default_factory=list)
    count: int = 0

    def __str__(self) -> str:
        return f"{self.severity:<7} {self.described()}"

    def described(self) -> str:
        """Where, what and the fix, without the severity: ``[key …, frame …] message (N frames: …)``
        and the fix on a line of its own."""
        where = ", ".join(
            f"{name} {value}"
            for name, value in (("key", self.key), ("frame", self.frame), ("column", self.column))
            if value is not None
        )
        more = (
            f" ({self.count} frames: "
            f"{', '.join(map(str, self.frames))}{', …' if self.count > len(self.frames) else ''})"
            if self.count > 1
            else ""
        )
        fix = f"\n      fix: {self.fix}" if self.fix else ""
        return f"[{where}] {self.message}{more}{fix}"


@dataclass
class ValidationReport:
    """Every problem found in one file, and whether it is valid (no errors)."""

    path: str
    robot: str
    problems: list[Problem] = field(default_factory=list)
    num_frames: int = 0
    fps: float | None = None
    training_overrides: tuple[str, ...] = ()
    """The ``KEY=VALUE`` training overrides the file carries (``Motion.training_overrides``)."""

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "robot": self.robot,
            "valid": self.ok,
            "num_frames": self.num_frames,
            "fps": self.fps,
            "training_overrides": list(self.training_overrides),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "problems": [asdict(p) for p in self.problems],
        }

    def summary(self) -> str:
        state = "valid" if self.ok else "INVALID"
        return (
            f"{self.path}: {state} for robot {self.robot} ({len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s))"
        )


class ProblemCollector:
    """What the checks write to: adds located problems, one per column and set of frames."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, severity: str, check: str, message: str, **where) -> None:
        self.problems.append(Problem(severity, check, message, **where))

    def error(self, check: str, message: str, **where) -> None:
        self.add("error", check, message, **where)

    def warning(self, check: str, message: str, **where) -> None:
        self.add("warning", check, message, **where)

    def frames(
        self, severity: str, check: str, message: str, bad_frames: np.ndarray, **where
    ) -> None:
        """One problem for a set of frames (first frame, a few listed, the count)."""
        bad_frames = (
            np.flatnonzero(bad_frames) if bad_frames.dtype == bool else np.asarray(bad_frames)
        )
        if bad_frames.size == 0:
            return
        self.add(
            severity,
            check,
            message,
            frame=int(bad_frames[0]),
            frames=[int(f) for f in bad_frames[:MAX_FRAMES_LISTED]],
            count=int(bad_frames.size),
            **where,
        )
