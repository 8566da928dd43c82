"""``primebot train``: PPO on a registered task, one run directory per run."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..registry import DEFAULT_TASK

SIGNAL_EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}
"""A run stopped by a signal exits 128 + signal number, after writing its checkpoint."""

PER_TASK = ("num_envs", "iterations")
"""Options whose default each task may set (``TaskSpec.trainer_defaults``); --help lists them per
task."""


class TrainCommand(click.Command):
    """``primebot train``, whose --help gives each registered task's own defaults."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        host = ctx.find_object(PluginHost)
        if host is not None:
            from ..train.settings_layers import task_default

            tasks = host.registry.items("tasks")
            for param in self.params:
                if param.name in PER_TASK:
                    values = ", ".join(f"{name} {task_default(spec, param.name)}"
                                       for name, spec in tasks.items())
                    param.help = (
                        f"{param.help.split(' [default')[0]} [default: the task's: {values}]"
                    )
        super().format_options(ctx, formatter)


@click.command("train", cls=TrainCommand)
@click.argument("motion", required=False)
@click.option("--task", default=None, help=f"Registered task. [default: {DEFAULT_TASK}]")
@click.option("--robot", default=None, help="Registered robot. [default: the task's robot]")
@click.option("--device", default=None,
              help="cpu, cuda, cuda:1, npu, npu:0 … [default: resolved per docs/devices.md]")
@click.option("--num-envs", type=int, default=None, help="Environments per rank. [default: 1024]")
@click.option("--iterations", type=int, default=None,
              help="Total PPO iterations of the run. [default: 3000]")
@click.option("--seed", type=int, default=None, help="Seed of every RNG. [default: 1]")
@click.option("--run-name", default=None,
              help="logs/<run-name>/<timestamp>/. [default: motion file stem or task]")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a setting: ppo.learning_rate=3e-4, policy.actor_hidden=[256,256,128], "
                   "task.xxx=… (repeatable).")
@click.option("--resume", "resume", default=None, type=click.Path(exists=True, file_okay=False),
              help="Continue RUN_DIR from its newest good checkpoint.")
@click.option("--tensorboard", is_flag=True,
              help="Also write TensorBoard event files (needs tensorboard).")
@click.option("--log-dir", default="logs", show_default=True, help="Root of run directories.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@pass_host
def train_command(host: PluginHost, motion: str | None, task, robot, device, num_envs, iterations,
                  seed,
                  run_name, sets, resume, tensorboard, log_dir, no_progress) -> None:
    """Train a PPO policy that tracks MOTION (or solves --task).

    Writes logs/<run-name>/<timestamp>/ with args.yaml, train.csv (one
    flushed row per iteration), train.png, model_<it>.pt every
    runner.save_interval iterations, model_best.pt and the final model.
    SIGINT/SIGTERM finish the iteration, checkpoint and exit (resume with
    --resume). Under torchrun every rank trains its own environments.
    """
    import contextlib

    from ..errors import PrimebotError
    from ..run_lock import run_dir_lock
    from ..train.distributed import context_from_env, shutdown_distributed
    from ..train.session import TrainRequest, run_training
    from .run_record import note_in_pipeline

    request = TrainRequest(
        motion=motion, task=task, robot=robot, device=device, num_envs=num_envs,
        iterations=iterations,
        seed=seed, run_name=run_name, sets=list(sets), resume=resume, tensorboard=tensorboard,
        log_dir=log_dir, progress=not no_progress,
    )
    records = bool(resume) and context_from_env().is_main  # a resumed pipeline run keeps its record
    with run_dir_lock(resume) if records else contextlib.nullcontext():
        before = _checkpoint_state(resume) if records else None
        try:
            outcome = run_training(host.registry, request)
        except PrimebotError as exc:
            # training moved on before the error
            if records and _checkpoint_state(resume) != before:
                note_in_pipeline(host, resume, "train", status="failed", error=exc)
            raise
        finally:
            shutdown_distributed()
        result, run_dir = outcome.result, outcome.run_dir
        if records and run_dir is not None:
            outputs, summary, message, warnings = outcome.describe()
            note_in_pipeline(host, run_dir, "train",
                             status="done" if result.status == "finished" else "interrupted",
                             outputs=outputs, summary=summary, message=message, warnings=warnings,
                             settings={"iterations": outcome.runner.cfg.iterations})
    if run_dir is None:
        return
    if result.status == "interrupted":
        click.echo(f"[STOPPED] {result.signal_name} at iteration {result.iteration}; checkpoint "
                   f"{result.checkpoint}")
        click.echo(f"resume with: primebot train --resume {run_dir}")
        raise click.exceptions.Exit(SIGNAL_EXIT_CODES.get(result.signal_name, 1))
    click.echo(f"[DONE] {result.iteration} iterations; run directory {run_dir}")


def _checkpoint_state(run_dir: str) -> list[tuple[str, int]]:
    """The run's checkpoints and when each was written (whether training changed anything)."""
    from pathlib import Path

    return sorted((p.name, p.stat().st_mtime_ns) for p in Path(run_dir).glob("model_*.pt"))


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(train_command)
