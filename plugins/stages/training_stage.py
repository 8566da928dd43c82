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
    from primebot.pipeline.api import TrainRequest, longer_budget

    s = ctx.settings
    # what a run that ended short is told to do: this pipeline's commands, not primebot train's
    advice = {"train_on": "primebot pipeline run --resume {run_dir} --from train",
              "longer_budget": longer_budget()}
    if _has_checkpoint(ctx.run_dir) and (ctx.run_dir / ARGS_FILE).is_file():
        # Only the iteration budget and the device may change on a resume (the trainer checks the
        # rest).
        return TrainRequest(resume=str(ctx.run_dir), iterations=s.iterations, device=s.device,
                            progress=True,
                            sets=list(s.resume_sets), **advice)
    return TrainRequest(
        motion=ctx.motion_path(), task=s.task, robot=s.robot, device=s.device, num_envs=s.num_envs,
        iterations=s.iterations, seed=s.seed,
        sets=[f"ppo.num_steps_per_env={s.steps_per_env}", *s.train_sets],
        progress=True, run_dir=str(ctx.run_dir), **advice,
    )


def train(ctx: StageContext) -> StageResult:
    """Train (or continue training) the policy; raise ``StageInterrupted`` when a signal stopped
    it."""
    from primebot.pipeline.api import run_training, shutdown_distributed

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
        raise StageInterrupted(f"{result.signal_name or 'signal'} at iteration {result.iteration}; "
                               f"saved {checkpoint}")
    outputs, summary, message, warnings = outcome.describe()
    return StageResult(outputs=outputs, summary=summary, warnings=warnings, message=message)
