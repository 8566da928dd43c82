"""The ``evaluate``, ``export`` and ``sim2sim`` stages: adapters over the deploy-side modules.

Each calls the function its single-stage command calls (``primebot eval``,
``primebot export``, ``primebot sim2sim``) on the pipeline's run directory,
so a pipeline run and a by-hand run produce the same files.
"""

from __future__ import annotations

import importlib
from typing import Any

from primebot.pipeline.errors import PluginError
from primebot.pipeline.stages import StageContext, StageResult


def _require(module: str, stage: str) -> Any:
    """Import the module a stage adapts; a missing one is a clear error, not a traceback."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise PluginError(
            f"the {stage} stage needs {module}, which this primebot installation lacks",
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
    export_module = _require("primebot.pipeline.export", "export")
    result = export_module.export_run(ctx.registry, ctx.run_dir)
    latency = result.latency
    median = latency.get("median_ms", latency.get("p50_ms"))
    summary = {"parity_max_abs_diff": float(f"{result.max_difference():.3g}")}
    if median is not None:
        summary["onnx_latency_ms"] = round(float(median), 4)
    outputs = {
        "policy.onnx": _relative(ctx, result.onnx_path),
        "deploy.yaml": _relative(ctx, result.deploy_path),
        "motion": _relative(ctx, result.motion_path),
    }
    if (ctx.run_dir / export_module.EXPORT_DIR / export_module.REPORT_FILE).is_file():
        outputs["export.json"] = f"{export_module.EXPORT_DIR}/{export_module.REPORT_FILE}"
    return StageResult(
        outputs=outputs,
        summary=summary,
        message=f"onnxruntime matches PyTorch (max |diff| {result.max_difference():.2e})"
                + (f", batch-1 latency {median:.3f} ms" if median is not None else ""),
    )


def evaluate(ctx: StageContext) -> StageResult:
    """Run the deterministic policy in the training simulator and write eval.json."""
    raise PluginError(
        "the evaluate stage is not wired yet (primebot.pipeline.evaluate has not landed)",
        fix="skip it for now: --skip evaluate",
    )


def sim2sim(ctx: StageContext) -> StageResult:
    """Replay the exported ONNX in the deploy-style loop and write sim2sim.json."""
    raise PluginError(
        "the sim2sim stage is not wired yet (primebot.pipeline.sim2sim has not landed)",
        fix="skip it for now: --skip sim2sim",
    )
