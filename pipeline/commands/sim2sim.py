"""``primebot sim2sim RUN_DIR``: the exported ONNX in the torch-free deploy loop (sim2sim.json)."""

from __future__ import annotations

from pathlib import Path

import click

from ..cli import pass_host
from ..errors import ExportError
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl


@click.command("sim2sim")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--mjcf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Robot model to run on. [default: the run's robot as registered (Q1_XML "
                   "applies)]")
@click.option("--video", is_flag=True,
              help="Render the from-start episode with the reference ghost (videos/sim2sim.mp4).")
@click.option("--strict", is_flag=True,
              help="Exit non-zero when a metric's gap to eval is beyond its threshold.")
@click.option("--physics-hz", type=click.FloatRange(min=50.0), default=1000.0, show_default=True,
              help="Physics and PD-loop rate (the joint HAL runs at 500-1000 Hz).")
@click.option("--align-heading", is_flag=True,
              help="Turn and move the reference to the robot's heading and position at each "
                   "episode start.")
@click.option("--start-yaw", type=float, default=0.0, show_default=True, metavar="DEG",
              help="Start the robot turned by DEG degrees about the vertical (a robot not facing "
                   "the reference's way).")
@pass_host
def sim2sim_command(host: PluginHost, run_dir: str, mjcf: str | None, video: bool, strict: bool,
                    physics_hz: float, align_heading: bool, start_yaw: float) -> None:
    """Replay RUN_DIR/export/policy.onnx with numpy + mujoco + onnxruntime only.

    Physics at 1 kHz with PD torques from the ONNX metadata, policy at 50 Hz,
    no randomisation or noise, observations from sensed quantities. Starts
    from eval.json's start frames; writes sim2sim.json with the metrics, their
    difference from eval and a flag when a gap exceeds its threshold. A walk
    export (no motion, planar base) starts from the default pose and is
    compared with eval.json's walk metrics (speed, distance, falls, length).
    --align-heading aligns the reference's heading and horizontal position to
    the robot's at each episode start (docs/deploy.md, "Heading alignment").
    """
    from ..deploy.sim2sim import SIM2SIM_FILE, require_checks_passed, sim2sim_run_dir
    from ..report.page import headline_metrics
    from ..report.tables import metrics_headline, metrics_summary, metrics_table, scalar_table
    from ..run_lock import run_dir_lock
    from ..rundir import VIDEO_DIR, read_args
    from .run_record import note_in_pipeline

    with run_dir_lock(run_dir):
        name = read_args(run_dir).get("config", {}).get("robot")
        robot = host.registry.get("robots", name) if name or mjcf is None else None
        mjcf = mjcf or str(robot.mjcf)
        report = sim2sim_run_dir(run_dir, mjcf, video=video, physics_hz=physics_hz,
                                 robot_spec=robot,
                                 align_heading=align_heading, start_yaw_deg=start_yaw)
        try:
            require_checks_passed(report, f"{run_dir}/{SIM2SIM_FILE}")
            failed = None
        except ExportError as exc:
            failed = exc
        overall = headline_metrics(report)
        video_out = (
            {"video": f"{VIDEO_DIR}/{Path(report['video']).name}"} if report.get("video") else {}
        )
        note_in_pipeline(host, run_dir, "sim2sim", status="failed" if failed else "done",
                         error=failed,
                         outputs={"sim2sim.json": SIM2SIM_FILE, **video_out},
                         summary=metrics_summary(overall),
                         message=metrics_headline(overall),
                         warnings=[f"sim2sim gap: {line}" for line in report.get("gap_flags", [])])
    click.echo(f"loop: physics {report['loop']['physics_hz']:.0f} Hz, policy "
               f"{report['loop']['policy_hz']:.0f} Hz, "
               f"torque PD from ONNX metadata; model {mjcf}"
               + (f"; robot started turned {start_yaw:g} deg" if start_yaw else "")
               + ("; reference heading aligned to the robot at each start" if align_heading
                  else ""))
    if "episodes" in report:  # a policy without a motion on a planar base (walk)
        click.echo(scalar_table(report["episodes"]))
    else:
        click.echo(metrics_table({g: report.get(g, {}) for g in ("from_start", "sampled")}))
    for check in report["checks"]:
        click.echo(
            f"check {check['name']}: {'ok' if check['ok'] else 'FAILED'} - {check['detail']}"
        )
    for line in report["gap_flags"]:
        click.secho(f"GAP: {line}", fg="yellow")
    if "video" in report:
        click.echo(f"video: {report['video']}")
    require_checks_passed(report, f"{run_dir}/{SIM2SIM_FILE}")
    if strict and report["gap_flagged"]:
        raise ExportError("sim2sim differs from eval beyond the thresholds: "
                          f"{'; '.join(report['gap_flags'])}")
    click.echo(f"[DONE] sim2sim: {run_dir}/{SIM2SIM_FILE}"
               + (" (gap flagged)" if report["gap_flagged"] else ""))


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(sim2sim_command)
