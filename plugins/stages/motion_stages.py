"""The ``validate`` and ``replay`` stages: the motion file before any training.

``validate`` stops the pipeline on an invalid motion with the validator's
report (every problem with its key, frame and column). ``replay`` renders
the reference motion kinematically to ``videos/replay.mp4``; without
OpenGL it is skipped with the reason and the fix, and the pipeline goes on
(a missing video must not block training).
"""

from __future__ import annotations

from primebot.pipeline.errors import PluginError
from primebot.pipeline.stages import StageContext, StageResult, StageSkipped

REPLAY_VIDEO = "videos/replay.mp4"


def validate(ctx: StageContext) -> StageResult:
    """Check the motion against the robot; raise ``MotionError`` with the report when invalid."""
    raise PluginError(
        "the validate stage is not wired yet (primebot.pipeline.motion_validate has not landed)",
        fix="skip it for now: --skip validate",
    )


def replay(ctx: StageContext) -> StageResult:
    """Render the reference motion to videos/replay.mp4 (skipped without OpenGL or with video off)."""
    if not ctx.settings.video:
        raise StageSkipped("video is off (--no-video or the preset)")
    raise PluginError(
        "the replay stage is not wired yet (primebot.pipeline.motion_replay has not landed)",
        fix="skip it for now: --skip replay",
    )
