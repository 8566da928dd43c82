"""The ``train`` stage: ``run_training`` in the pipeline's run directory, resumable.

A fresh run trains into the pipeline's own run directory (train.csv,
model_<it>.pt, model_best.pt and args.yaml beside pipeline.json, DESIGN §6).
When the stage ran before and left a checkpoint (Ctrl-C, SIGKILL, a crash),
it continues from the newest good one, as ``primebot train --resume`` does.
SIGINT/SIGTERM make the trainer finish its iteration and checkpoint; the
stage then reports itself interrupted so ``--resume`` picks it up.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from primebot.pipeline.stages import StageContext, StageInterrupted, StageResult


def _has_checkpoint(run_dir: Path) -> bool:
    from primebot.pipeline.checkpoint import numbered_checkpoints

    return bool(numbered_checkpoints(run_dir))


def train_request(ctx: StageContext):
    """The ``TrainRequest`` for this run: fresh into the run directory, or a resume of it."""
    from primebot.pipeline.training import TrainRequest

    s = ctx.settings
    if _has_checkpoint(ctx.run_dir) and (ctx.run_dir / "args.yaml").is_file():
        # Only the iteration budget and the device may change on a resume (the trainer checks the rest).
        return TrainRequest(resume=str(ctx.run_dir), iterations=s.iterations, device=s.device, progress=True)
    request = TrainRequest(
        motion=ctx.motion_path(), task=s.task, robot=s.robot, device=s.device, num_envs=s.num_envs,
        iterations=s.iterations, seed=s.seed, sets=[f"ppo.num_steps_per_env={s.steps_per_env}", *s.train_sets],
        progress=True,
    )
    if "run_dir" in {f.name for f in dataclasses.fields(TrainRequest)}:
        request.run_dir = str(ctx.run_dir)
    return request


def _train_in_place(ctx: StageContext, request):
    """A fresh ``run_training`` into the existing pipeline run directory.

    TODO(issue 5): ``run_training`` always creates its own run directory;
    once ``TrainRequest`` has a ``run_dir`` this function goes and the
    request is passed to ``run_training`` as is. Until then the same public
    pieces are assembled here (config, motion, env, runner, args.yaml).
    """
    from primebot.pipeline import __version__
    from primebot.pipeline.devices import resolve_device
    from primebot.pipeline.motion import load_motion
    from primebot.pipeline.rundir import write_args
    from primebot.pipeline.runner import OnPolicyRunner
    from primebot.pipeline.training import TrainOutcome, resolve_config

    resolved = resolve_device(ctx.registry, request.device)
    cfg = resolve_config(ctx.registry, request, resolved.torch_device)
    spec = ctx.registry.get("tasks", cfg.task)
    robot = ctx.registry.get("robots", cfg.robot) if cfg.robot else None
    motion = load_motion(request.motion) if spec.needs_motion else None
    if motion is not None:
        cfg.motion, cfg.motion_sha256 = str(request.motion), motion.sha256
    env = spec.make_env(robot=robot, motion=motion, num_envs=cfg.num_envs, seed=cfg.seed, config=cfg.task_config,
                        registry=ctx.registry, num_threads=None)
    try:
        runner = OnPolicyRunner(env, cfg, run_dir=ctx.run_dir, autocast_dtype=resolved.backend.autocast_dtype(),
                                progress=request.progress)
        write_args(ctx.run_dir, {"config": cfg.to_dict(), "run": {
            "primebot_version": __version__, "device_source": resolved.source, "world_size": 1,
            "command": "primebot pipeline run (train stage)"}})
        result = runner.learn()
    finally:
        env.close()
    return TrainOutcome(result, ctx.run_dir, runner)


def train(ctx: StageContext) -> StageResult:
    """Train (or continue training) the policy; raise ``StageInterrupted`` when a signal stopped it."""
    from primebot.pipeline.distributed import shutdown_distributed
    from primebot.pipeline.rundir import BEST_CHECKPOINT, CSV_FILE, CURVE_FILE
    from primebot.pipeline.training import run_training

    request = train_request(ctx)
    if request.resume:
        ctx.echo(f"      resuming training from the newest checkpoint in {ctx.run_dir}")
    in_place = not request.resume and getattr(request, "run_dir", None) is None
    try:
        outcome = _train_in_place(ctx, request) if in_place else run_training(ctx.registry, request)
    finally:
        shutdown_distributed()
    result = outcome.result
    if result.status == "interrupted":
        checkpoint = result.checkpoint.name if result.checkpoint else "the previous checkpoint"
        raise StageInterrupted(f"{result.signal_name or 'signal'} at iteration {result.iteration}; saved {checkpoint}")
    runner = outcome.runner
    outputs = {"args": "args.yaml", "train.csv": CSV_FILE}
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
    return StageResult(
        outputs=outputs,
        summary=summary,
        message=f"{result.iteration} iterations on {runner.cfg.device}"
                + (f", episode return {summary['episode_return']:.2f}" if returns else ""),
    )
