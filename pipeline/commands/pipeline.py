"""``primebot pipeline``: run every stage in one run directory, list the stages, rebuild a
report."""

from __future__ import annotations

from pathlib import Path

import click

from ..cli import pass_host
from ..errors import ConfigError
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..registry import DEFAULT_TASK
from ..report.page import write_report
from ..run_lock import run_dir_lock
from ..rundir import create_run_dir
from ..stages.presets import PRESETS, resolve_settings
from ..stages.record import new_record, resumed_record
from ..stages.stage_runner import PipelineRunner, Selection, ordered_stages
from ..train.train_config import KEY_ALIASES, RESUMABLE_SETTINGS


@click.group("pipeline")
def pipeline_group() -> None:
    """Motion in, evaluated ONNX policy out: validate → replay → smoke → train → evaluate → export →
    sim2sim."""


def _preset_help() -> str:
    return "; ".join(f"{p.name}: {p.num_envs} envs x {p.iterations} it" for p in PRESETS.values())


@pipeline_group.command("run")
@click.argument("motion", required=False)
@click.option("--robot", default=None, help="Registered robot. [default: the task's robot]")
@click.option("--task", default=DEFAULT_TASK, show_default=True, help="Registered task.")
@click.option("--device", default=None,
              help="cpu, cuda, cuda:1, npu, npu:0 … [default: resolved per docs/devices.md]")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="default", show_default=True,
              help=f"How big every stage is ({_preset_help()}).")
@click.option("--iterations", type=int, default=None, help="PPO iterations (overrides the preset).")
@click.option("--num-envs", type=int, default=None,
              help="Training environments (overrides the preset).")
@click.option("--eval-episodes", type=int, default=None,
              help="Episodes of evaluate and sim2sim (overrides the preset).")
@click.option("--video/--no-video", default=None,
              help="Render the videos (default: the preset's choice).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of every RNG.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Training override, as for primebot train (repeatable).")
@click.option("--from", "from_stage", default=None, metavar="STAGE",
              help="Start at STAGE (earlier ones are skipped, or kept on --resume).")
@click.option("--only", multiple=True, metavar="STAGE", help="Run only STAGE (repeatable).")
@click.option("--skip", multiple=True, metavar="STAGE", help="Do not run STAGE (repeatable).")
@click.option("--resume", "resume", default=None, type=click.Path(exists=True, file_okay=False),
              help="Continue RUN_DIR: finished stages are kept, training continues from its newest "
                   "checkpoint.")
@click.option("--log-dir", default="logs", show_default=True, help="Root of run directories.")
@click.option("--run-name", default=None,
              help="logs/<run-name>/<timestamp>/. [default: the motion file's stem]")
@pass_host
@click.pass_context
def run_command(ctx: click.Context, host: PluginHost, motion, robot, task, device, preset,
                iterations, num_envs,
                eval_episodes, video, seed, sets, from_stage, only, skip, resume, log_dir,
                run_name) -> None:
    """Run every stage on MOTION in one run directory and write report.html there.

    Progress shows which stage runs (and, in train, the iteration bar with
    its ETA). pipeline.json records every stage's status, time, outputs and
    error as it happens. Ctrl-C stops cleanly (train checkpoints first);
    --resume RUN_DIR continues. The last line gives the verdict: TRACKED
    when the policy really does the motion (sim2sim's success and error
    against a statue baseline, docs/tasks.md), then ROBUST when it also
    holds under every standard perturbation of the stress stage
    (docs/deploy.md). Exit code: 0 tracked and robust, 12 tracked but not
    robust, 10 every stage finished but NOT TRACKED, otherwise the failing
    stage's error code (e.g. 5 for an invalid motion, 4 for an unavailable
    device), or 130 when interrupted.
    """
    stages = ordered_stages(host.registry)
    if not stages:
        raise ConfigError("no pipeline stages are registered",
                          fix="reinstall primebot; check PRIMEBOT_DISABLE_PLUGINS")
    selection = Selection(from_stage, tuple(only), tuple(skip))
    selection.check([stage.name for stage, _ in stages])  # before any directory is made
    if resume:
        run_dir = Path(resume)
        # before pipeline.json is read: another process may be writing it
        ctx.with_resource(run_dir_lock(run_dir))
        record = resumed_record(run_dir, stages)
        _apply_resume_overrides(ctx, record.settings, motion=motion, device=device,
                                iterations=iterations, sets=sets)
    else:
        if not motion:
            raise click.UsageError("MOTION is required (or --resume RUN_DIR)")
        settings = resolve_settings(
            motion, preset=preset, robot=robot, task=task, device=device, num_envs=num_envs,
            iterations=iterations, eval_episodes=eval_episodes, video=video, seed=seed,
            train_sets=list(sets),
        )
        run_dir = create_run_dir(log_dir, run_name or Path(motion).stem)
        record = new_record(run_dir, settings, stages)
        record.save()
    runner = PipelineRunner(
        host.registry, record, stages, selection=selection,
        resume=bool(resume), echo=click.echo, write_report=write_report,
    )
    outcome = runner.run()
    if outcome.exit_code:
        ctx.exit(outcome.exit_code)


def _apply_resume_overrides(ctx: click.Context, settings, *, motion, device, iterations,
                            sets=()) -> None:
    """On --resume only --iterations, --device and --set of the optimisation settings may change;
    anything else belongs to a new run."""
    fixed = ("robot", "task", "num_envs", "eval_episodes", "video", "seed", "run_name")
    changed = [name for name in fixed
               if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if ctx.get_parameter_source("preset") == click.core.ParameterSource.COMMANDLINE:
        changed.append("preset")
    if changed:
        raise ConfigError(
            "--resume continues a run with its own settings; cannot change "
            f"{', '.join('--' + c.replace('_', '-') for c in changed)}",
            fix="drop those options (only --iterations, --device and --set of optimisation "
                "settings apply on "
                "resume), or start a new run",
        )
    if motion and Path(motion) != Path(settings.motion):
        raise ConfigError(f"--resume: the run tracks {settings.motion}, not {motion}",
                          fix="omit MOTION when resuming")
    if device is not None:
        settings.device = device
    if iterations is not None:
        settings.iterations = iterations
    if sets:
        refused = [item for item in sets if _setting_key(item) not in RESUMABLE_SETTINGS]
        if refused:
            raise ConfigError(
                f"--resume cannot change {', '.join(refused)}",
                fix=f"on resume --set may change {', '.join(RESUMABLE_SETTINGS)}; anything else "
                    "needs a new run",
            )
        settings.resume_sets = [*settings.resume_sets, *sets]


def _setting_key(item: str) -> str:
    key = item.partition("=")[0].strip()
    return KEY_ALIASES.get(key, key)


@pipeline_group.command("stages")
@pass_host
def stages_command(host: PluginHost) -> None:
    """List the registered stages in run order, with their constraints and plugins."""
    stages = ordered_stages(host.registry)
    click.echo(f"{'#':>2}  {'stage':<12} {'plugin':<18} {'after':<18} description")
    for i, (stage, plugin) in enumerate(stages, start=1):
        constraints = ", ".join(stage.after) + (f" (before {', '.join(stage.before)})"
                                                if stage.before else "")
        click.echo(f"{i:>2}  {stage.name:<12} {plugin:<18} {constraints or '-':<18} "
                   f"{stage.description}")


@pipeline_group.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def report_command(run_dir: str) -> None:
    """Rebuild RUN_DIR/report.html from the files in the run directory."""
    with run_dir_lock(run_dir):
        path = write_report(run_dir)
    click.echo(f"report: {path}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(pipeline_group)
