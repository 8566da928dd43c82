"""The ``validate`` and ``replay`` stages: the motion file before any training.

``validate`` stops the pipeline on an invalid motion with the validator's
report (every problem with its key, frame and column; the full report is
kept as motion_validation.json) and copies the valid file into the run
directory, which every later stage reads. ``replay`` renders the reference motion
kinematically to ``videos/replay.mp4``; without OpenGL it is skipped with
the reason and the fix, and the pipeline goes on (a missing video must not
block training).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from primebot.pipeline.api import (
    MotionError,
    StageContext,
    StageResult,
    StageSkipped,
    atomic_path,
    atomic_write_text,
    motion_copy_name,
)

VALIDATION_FILE = "motion_validation.json"
REPLAY_VIDEO = "videos/replay.mp4"


def _robot(ctx: StageContext):
    from primebot.pipeline.api import get_robot

    return get_robot(ctx.registry, ctx.robot_name())


def _needs_motion(ctx: StageContext) -> None:
    if not ctx.registry.get("tasks", ctx.settings.task).needs_motion:
        raise StageSkipped(f"task {ctx.settings.task!r} tracks no reference motion")


def validate(ctx: StageContext) -> StageResult:
    """Check the motion against the robot; raise ``MotionError`` with the report when invalid."""
    from primebot.pipeline.api import validate_motion_file

    _needs_motion(ctx)
    path = ctx.settings.motion
    # never a run file's name (a motion called pipeline.json, model_9.pt …)
    snapshot = motion_copy_name(path)
    _refuse_a_changed_motion(ctx, path, snapshot)
    report = validate_motion_file(path, _robot(ctx))
    atomic_write_text(ctx.path(VALIDATION_FILE),
                      json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    if not report.ok:
        for problem in report.warnings:  # the errors are the MotionError's message
            ctx.echo(f"      {problem}")
        raise MotionError(
            report.summary() + "\n    " + "\n    ".join(str(p) for p in report.errors),
            fix=f"fix the motion (details: primebot motion validate {path}; {VALIDATION_FILE} in "
                "the run directory)",
        )
    duration = (report.num_frames - 1) / report.fps if report.fps else 0.0
    with atomic_path(ctx.path(snapshot)) as tmp:
        shutil.copyfile(path, tmp)
    carried = report.training_overrides  # applied by the train stage before its --set
    return StageResult(
        outputs={"report": VALIDATION_FILE, "motion": snapshot},
        summary={"frames": report.num_frames, "fps": report.fps, "warnings": len(report.warnings),
                 **({"training_overrides": list(carried)} if carried else {})},
        message=f"valid for robot {report.robot}: {report.num_frames} frames, {duration:.2f} s"
                + (f", {len(report.warnings)} warning(s)" if report.warnings else "")
                + (f"; it carries training overrides: {' '.join(carried)}" if carried else ""),
        # the pipeline prints each as "warning: …", its fix on the next line
        warnings=[p.described() for p in report.warnings],
    )


def _refuse_a_changed_motion(ctx: StageContext, path: str, snapshot: str) -> None:
    """A run trains one motion: once training started on the run's copy, a changed source is refused
    here, before anything is overwritten, instead of failing later on the motion's hash."""
    from primebot.pipeline.api import file_sha256, numbered_checkpoints

    copy = ctx.path(snapshot)
    if not copy.is_file() or not Path(path).is_file() or not numbered_checkpoints(ctx.run_dir):
        return
    old, new = file_sha256(copy), file_sha256(path)
    if old != new:
        raise MotionError(
            f"{path} changed since this run trained on it (sha256 {old[:12]}… then, {new[:12]}… "
            "now): the run's "
            "checkpoints, evaluation and export belong to the motion it validated, kept as "
            f"{snapshot}",
            fix=f"start a new run on the changed motion: primebot pipeline run {path} (this run "
                "stays as it was; "
                "to go on with it, resume without --from validate)",
        )


def replay(ctx: StageContext) -> StageResult:
    """Render the reference motion to videos/replay.mp4 (skipped without OpenGL or with video
    off)."""
    from primebot.pipeline.api import RenderError, load_motion, replay_video

    _needs_motion(ctx)
    if not ctx.settings.video:
        raise StageSkipped("video is off (--no-video or the preset)")
    try:
        replay_video(load_motion(ctx.motion_path()), _robot(ctx), ctx.path(REPLAY_VIDEO))
    except RenderError as exc:
        # No OpenGL (or no encoder) must not block training: skipped, with the fix.
        raise StageSkipped(str(exc).split("\n  fix: ")[0], fix=exc.fix) from None
    return StageResult(outputs={"video": REPLAY_VIDEO}, message=f"wrote {REPLAY_VIDEO}")
