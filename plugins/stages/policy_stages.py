"""The ``evaluate``, ``export``, ``sim2sim`` and ``stress`` stages: adapters over the deploy-side
modules.

Each calls the function its single-stage command calls (``primebot eval``,
``primebot export``, ``primebot sim2sim``, ``primebot stress``) on the
pipeline's run directory, so a pipeline run and a by-hand run produce the
same files.
"""

from __future__ import annotations

from typing import Any

from primebot.pipeline.api import (
    PluginError,
    StageContext,
    StageResult,
    headline_metrics,
    metrics_headline,
    metrics_summary,
)


def _require(name: str, stage: str) -> Any:
    """The core function a stage adapts; one this primebot installation lacks is a clear error, not
    a traceback."""
    from primebot.pipeline import api

    try:
        return getattr(api, name)
    except AttributeError:
        raise PluginError(
            f"the {stage} stage needs primebot.pipeline.api.{name}, which this primebot "
            "installation lacks",
            fix=f"update primebot, or skip the stage: --skip {stage}",
        ) from None


def _relative(ctx: StageContext, path: Any) -> str:
    from pathlib import Path

    path = Path(path)
    try:
        return path.resolve().relative_to(ctx.run_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def export(ctx: StageContext) -> StageResult:
    """Write export/policy.onnx and deploy.yaml; accepted only on onnxruntime parity."""
    from primebot.pipeline.api import EXPORT_DIR, EXPORT_REPORT_FILE

    export_run = _require("export_run", "export")
    result = export_run(ctx.registry, ctx.run_dir)
    outputs = {
        "policy.onnx": _relative(ctx, result.onnx_path),
        "deploy.yaml": _relative(ctx, result.deploy_path),
        "motion": _relative(ctx, result.motion_path),
    }
    if (ctx.run_dir / EXPORT_DIR / EXPORT_REPORT_FILE).is_file():
        outputs["export.json"] = f"{EXPORT_DIR}/{EXPORT_REPORT_FILE}"
    return StageResult(outputs=outputs, summary=result.summary(), message=result.headline())


def _with_video(ctx: StageContext, run, what: str):
    """Run ``run(video)`` with the preset's video; without OpenGL, warn and run again without it."""
    from primebot.pipeline.api import RenderError

    try:
        return run(ctx.settings.video), []
    except RenderError as exc:
        warning = f"no {what} video: {str(exc).splitlines()[0]}"
        ctx.echo(f"      warning: {warning}; running again without the video")
        return run(False), [warning]


def _metrics_result(ctx: StageContext, outputs: dict[str, str], report: dict[str, Any],
                    warnings: list[str]) -> StageResult:
    """The result of a stage that wrote a metrics report (eval.json, sim2sim.json), with its video
    if any."""
    if report.get("video"):
        outputs["video"] = _relative(ctx, report["video"])
    overall = headline_metrics(report)
    return StageResult(outputs=outputs, summary=metrics_summary(overall),
                       message=metrics_headline(overall),
                       warnings=warnings)


def evaluate(ctx: StageContext) -> StageResult:
    """Run the deterministic policy in the training simulator and write eval.json."""
    from primebot.pipeline.api import EVAL_FILE

    evaluate_run = _require("evaluate_run", "evaluate")
    s = ctx.settings
    report, warnings = _with_video(
        ctx, lambda video: evaluate_run(ctx.registry, ctx.run_dir, episodes=s.eval_episodes,
                                                   seed=s.seed, video=video), "evaluation")
    return _metrics_result(ctx, {"eval.json": EVAL_FILE}, report, warnings)


def sim2sim(ctx: StageContext) -> StageResult:
    """Replay the exported ONNX in the deploy-style loop and write sim2sim.json."""
    from primebot.pipeline.api import SIM2SIM_FILE, read_args, require_checks_passed

    sim2sim_run_dir = _require("sim2sim_run_dir", "sim2sim")
    robot = read_args(ctx.run_dir).get("config", {}).get("robot") or ctx.robot_name()
    spec = ctx.registry.get("robots", robot)
    mjcf = str(spec.mjcf)
    report, warnings = _with_video(
        ctx, lambda video: sim2sim_run_dir(ctx.run_dir, mjcf, video=video, robot_spec=spec),
        "sim2sim")
    require_checks_passed(report, SIM2SIM_FILE)
    warnings += [f"sim2sim gap: {line}" for line in report.get("gap_flags", [])]
    return _metrics_result(ctx, {"sim2sim.json": SIM2SIM_FILE}, report, warnings)


def stress(ctx: StageContext) -> StageResult:
    """The deploy bundle under perturbations, beside replaying its reference with no policy:
    stress.json."""
    from primebot.pipeline.api import STRESS_FILE, StageSkipped, StressPlan, read_args

    stress_run_dir = _require("stress_run_dir", "stress")
    if not ctx.registry.get("tasks", ctx.settings.task).needs_motion:
        raise StageSkipped(f"task {ctx.settings.task!r} tracks no reference motion: nothing to "
                           "replay beside the policy")
    s = ctx.settings
    robot = read_args(ctx.run_dir).get("config", {}).get("robot") or ctx.robot_name()
    mjcf = str(ctx.registry.get("robots", robot).mjcf)
    plan = StressPlan(starts=s.stress_starts, standard_only=s.stress_standard_only, seed=s.seed,
                      confirm_starts=None if s.stress_confirm else 0)
    report, warnings = _with_video(
        ctx, lambda video: stress_run_dir(ctx.run_dir, mjcf, plan, video=video, progress=True),
        "stress")
    outputs = {"stress.json": STRESS_FILE,
               **{f"video_{k}": _relative(ctx, v) for k, v in report.get("videos", {}).items()}}
    summary, message = _require("stress_stage_summary", "stress")(report)
    return StageResult(outputs=outputs, summary=summary, warnings=warnings, message=message)
