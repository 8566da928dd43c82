"""``primebot eval RUN_DIR``: score the trained policy on its motion (eval.json)."""

from __future__ import annotations

from pathlib import Path

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..report.tables import metrics_table, scalar_table


@click.command("eval")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--checkpoint", default=None,
              help="model_<it>.pt name or path, an iteration number, or 'best'. [default: "
                   "model_best.pt when training "
                   "chose it by its verdict checks, else the newest model_<it>.pt]")
@click.option("--episodes", type=int, default=16, show_default=True,
              help="Episodes from uniformly sampled start frames (plus one from the motion's "
                   "start); "
                   "for a task with its own metrics (walk), the episodes played.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the sampled start frames.")
@click.option("--video", is_flag=True,
              help="Render the from-start episode with the reference as a ghost "
              "(walk: the first episode's gait) to RUN_DIR/videos/eval.mp4.")
@pass_host
def eval_command(host: PluginHost, run_dir: str, checkpoint: str | None, episodes: int, seed: int,
                 video: bool) -> None:
    """Run the deterministic policy of RUN_DIR (mean action, no noise, no randomisation).

    Tracking: one episode starts at the motion's first frame, --episodes more
    at sampled frames; success rate, fall rate, MPKPE (world and root-relative),
    joint, end-effector and anchor errors go to RUN_DIR/eval.json. A task with
    its own metrics (walk: return, forward speed, distance, fall rate, episode
    length, walking threshold reached) plays --episodes episodes, and --video
    renders the first one through the robot's video camera.
    """
    from ..evaluate.evaluate_run import EVAL_FILE, evaluate_run
    from ..report.page import headline_metrics
    from ..report.tables import metrics_headline, metrics_summary
    from ..run_lock import run_dir_lock
    from ..rundir import VIDEO_DIR
    from .run_record import note_in_pipeline

    with run_dir_lock(run_dir):
        report = evaluate_run(host.registry, run_dir, checkpoint, episodes=episodes, seed=seed,
                              video=video)
        overall = headline_metrics(report)
        video_out = (
            {"video": f"{VIDEO_DIR}/{Path(report['video']).name}"} if report.get("video") else {}
        )
        note_in_pipeline(host, run_dir, "evaluate", outputs={"eval.json": EVAL_FILE, **video_out},
                         summary=metrics_summary(overall), message=metrics_headline(overall))
    click.echo(f"checkpoint {report['checkpoint']} (iteration {report['iteration']})")
    if "episodes" in report:  # a task that scores its own episodes
        click.echo(scalar_table(report["episodes"]))
    else:
        click.echo(metrics_table({g: report.get(g, {})
                                  for g in ("from_start", "sampled", "overall")}))
    if "video" in report:
        click.echo(f"video: {report['video']}")
    click.echo(f"[DONE] eval: {run_dir}/{EVAL_FILE}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(eval_command)
