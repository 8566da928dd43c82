"""The ``train`` stage: ``run_training`` in the pipeline's run directory, resumable.

A fresh run trains into the pipeline's own run directory (train.csv,
model_<it>.pt, model_best.pt and args.yaml beside pipeline.json, docs/architecture.md §6).
When the stage ran before and left a checkpoint (Ctrl-C, SIGKILL, a crash),
it continues from the newest good one, as ``primebot train --resume`` does.
SIGINT/SIGTERM make the trainer finish its iteration and checkpoint; the
stage then reports itself interrupted so ``--resume`` picks it up.
"""

from __future__ import annotations

from pathlib import Path

from primebot.pipeline.api import ARGS_FILE, StageContext, StageInterrupted, StageResult


def _has_checkpoint(run_dir: Path) -> bool:
    from primebot.pipeline.api import numbered_checkpoints

    return bool(numbered_checkpoints(run_dir))


def train_request(ctx: StageContext):
    """The ``TrainRequest`` for this run: fresh into the run directory, or a resume of it."""
    from primebot.pipeline.api import TrainRequest

    s = ctx.settings
    if _has_checkpoint(ctx.run_dir) and (ctx.run_dir / ARGS_FILE).is_file():
        # Only the iteration budget and the device may change on a resume (the trainer checks the rest).
        return TrainRequest(resume=str(ctx.run_dir), iterations=s.iterations, device=s.device, progress=True,
                            sets=list(s.resume_sets))
    return TrainRequest(
        motion=ctx.motion_path(), task=s.task, robot=s.robot, device=s.device, num_envs=s.num_envs,
        iterations=s.iterations, seed=s.seed, sets=[f"ppo.num_steps_per_env={s.steps_per_env}", *s.train_sets],
        progress=True, run_dir=str(ctx.run_dir),
    )


def train(ctx: StageContext) -> StageResult:
    """Train (or continue training) the policy; raise ``StageInterrupted`` when a signal stopped it."""
    from primebot.pipeline.api import (
        BEST_CHECKPOINT,
        CSV_FILE,
        CURVE_FILE,
        run_training,
        shutdown_distributed,
    )

    request = train_request(ctx)
    if request.resume:
        ctx.echo(f"      resuming training from the newest checkpoint in {ctx.run_dir}")
    try:
        outcome = run_training(ctx.registry, request)
    finally:
        shutdown_distributed()
    result = outcome.result
    if result.status == "interrupted":
        checkpoint = result.checkpoint.name if result.checkpoint else "the previous checkpoint"
        raise StageInterrupted(f"{result.signal_name or 'signal'} at iteration {result.iteration}; saved {checkpoint}")
    runner = outcome.runner
    outputs = {"args": ARGS_FILE, "train.csv": CSV_FILE}
    for label, name in (("curves", CURVE_FILE), ("best", BEST_CHECKPOINT)):
        if (ctx.run_dir / name).is_file():
            outputs[label] = name
    if result.checkpoint is not None:
        outputs["final"] = Path(result.checkpoint).name
    returns = list(runner.episode_returns)
    summary = {
        "device": runner.cfg.device,
        "iterations": result.iteration,
        "envs": runner.cfg.num_envs,
        "env_steps": result.iteration * runner.cfg.num_envs * runner.cfg.ppo.num_steps_per_env,
    }
    if returns:
        summary["episode_return"] = round(sum(returns) / len(returns), 3)
    warnings = []
    judged = "training ended"  # the policy the later stages judge: the last one, or the best checked one
    incomplete = not runner.env.curriculum_complete
    if runner.checks.best is not None:
        summary["policy"] = f"{BEST_CHECKPOINT} (iteration {runner.checks.best_iteration}, the best verdict check)"
        judged = f"the policy evaluated and exported ({summary['policy']}) trained"
        incomplete = runner.checks.best_progress < 1.0
        robust_success = runner.checks.best_robust_success
        if robust_success is not None and robust_success < 1.0:
            summary["robust_success_rate"] = round(robust_success, 3)
    if incomplete:
        summary["curriculum"] = "incomplete"
        warnings.append(f"{judged} before the task's curriculum was complete: it has not felt the full "
                        "randomisation (train.csv: randomization/strength), so expect it to be less robust to "
                        "pushes and model errors than configured; --resume RUN_DIR --from train --iterations N "
                        "trains on")
    return StageResult(
        outputs=outputs,
        summary=summary,
        warnings=warnings,
        message=f"{result.iteration} iterations on {runner.cfg.device}"
                + (f", episode return {summary['episode_return']:.2f}" if returns else "")
                + (f"; the policy: {summary['policy']}" if "policy" in summary else ""),
    )
