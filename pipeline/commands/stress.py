"""``primebot stress RUN_DIR``: the exported policy under perturbations, beside replaying its
reference (stress.json)."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..deploy.perturbations import FAMILIES
from ..errors import NOT_ROBUST_EXIT_CODE
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl


@click.command("stress")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--mjcf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Robot model to run on. [default: the run's robot as registered]")
@click.option("--starts", type=click.IntRange(min=1), default=16, show_default=True,
              help="Start frames per cell of a graded level (each controller runs every one).")
@click.option("--standard-starts", type=click.IntRange(min=1), default=None,
              help="Start frames per cell the verdict reads: every family's standard level and "
                   "nominal. [default: twice --starts]")
@click.option("--confirm-starts", type=click.IntRange(min=0), default=None,
              help="More start frames for a standard level whose policy success is too near 0.9 "
                   "to call (of 32 starts, 27-31 successes), pooled with the first; 0: none. "
                   "[default: three times --standard-starts]")
@click.option("--window", type=click.FloatRange(min=0.5), default=4.0, show_default=True,
              help="Seconds per episode (less when the motion is shorter).")
@click.option("--family", "families", multiple=True, type=click.Choice(list(FAMILIES)),
              help="Only this perturbation family (repeatable). [default: all]")
@click.option("--standard-only", is_flag=True,
              help="Only each family's standard levels (what the verdict reads).")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seed of push times/directions and encoder errors.")
@click.option("--video", is_flag=True,
              help="Render the standard push: videos/stress_push.mp4 (policy), "
                   "stress_push_replay.mp4 (no policy), both from the first start, and "
                   "stress_push_failure.mp4 (the policy's first failed start, when that is "
                   "another). Without it, those of an earlier stress test are removed (they "
                   "would pass for this one's).")
@pass_host
def stress_command(host: PluginHost, run_dir: str, mjcf: str | None, starts: int,
                   standard_starts: int | None, confirm_starts: int | None, window: float,
                   families: tuple[str, ...], standard_only: bool, seed: int,
                   video: bool) -> None:
    """What RUN_DIR/export/policy.onnx survives, beside replaying its reference with no policy.

    Torch-free like sim2sim. From the same start frames it runs the policy,
    the reference's joint positions as PD targets (no policy: a zero action
    for an export that acts around the reference) and the statue (the start
    pose held) under every perturbation family at graded levels plus
    nominal: pushes (sized to the robot), floor friction, payload, motor
    strength, action latency, encoder noise and bias, and model gaps
    (armature/damping, integrator and physics rate). Each cell reports the
    success rate, MPKPE and what ended the failed episodes; stress.json holds
    it all. ROBUST: success >= 0.9 at every family's standard level (marked
    * in the table; docs/deploy.md, "Before you deploy: the stress report").
    Exit code 0 robust, 12 not robust.
    """
    from pathlib import Path

    from ..deploy.stress import StressPlan, format_table, stage_summary, stress_run_dir
    from ..run_lock import run_dir_lock
    from ..rundir import STRESS_FILE, VIDEO_DIR, read_args
    from .run_record import note_in_pipeline

    plan = StressPlan(starts=starts, standard_starts=standard_starts,
                      confirm_starts=confirm_starts, window_s=window,
                      families=families or None, standard_only=standard_only, seed=seed)
    with run_dir_lock(run_dir):
        name = read_args(run_dir).get("config", {}).get("robot")
        mjcf = mjcf or str(host.registry.get("robots", name).mjcf)
        report = stress_run_dir(run_dir, mjcf, plan, video=video, progress=True)
        summary, message = stage_summary(report)
        videos = {f"video_{k}": f"{VIDEO_DIR}/{Path(v).name}"
                  for k, v in report.get("videos", {}).items()}
        # a test of some families only is no verdict on the policy: the pipeline runs its stage
        # again
        note_in_pipeline(host, run_dir, "stress",
                         status="done" if plan.families is None else "pending",
                         outputs={"stress.json": STRESS_FILE, **videos}, summary=summary,
                         message=message,
                         reason="stress.json holds a test of some families only (--family): the "
                                "stage runs "
                                "again on --resume")
    click.echo(f"{report['loop']['episodes']} episodes of {report['loop']['window_steps']} steps "
               "at "
               f"{report['loop']['physics_hz']:.0f} Hz in {report['wall_s']:.0f} s; push unit "
               f"sqrt(g*L) = {report['push_unit_m_s']:.2f} m/s (L = "
               f"{report['reference_root_height_m']:.2f} m)")
    click.echo(format_table(report))
    for controller, path in report.get("videos", {}).items():
        click.echo(f"video ({controller}): {path}")
    click.echo(f"[DONE] stress: {run_dir}/{STRESS_FILE}")
    if not report["verdict"]["robust"]:
        click.get_current_context().exit(NOT_ROBUST_EXIT_CODE)


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(stress_command)
