"""``primebot export RUN_DIR``: the deploy bundle in RUN_DIR/export, checked against onnxruntime."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--checkpoint", default=None,
              help="model_<it>.pt name or path, an iteration number, or 'best'. [default: "
                   "model_best.pt when training "
                   "chose it by its verdict checks, else the newest model_<it>.pt]")
@click.option("--fp16", is_flag=True,
              help="also write policy_fp16.onnx (float16 inside, float32 I/O), kept only if its "
                   "actions are within "
                   "0.05 of PyTorch's and a closed-loop sim2sim on it does as well as on "
                   "policy.onnx")
@click.option("--static-batch", is_flag=True,
              help="batch axis fixed at 1 (TensorRT without an optimisation profile)")
@click.option("--format", "export_format", type=click.Choice(["primebot", "mjlab"]),
              default="primebot",
              show_default=True,
              help="mjlab: the reference's body axis holds the tracked bodies only, static batch "
                   "1, opset 18")
@pass_host
def export_command(host: PluginHost, run_dir: str, checkpoint: str | None, fp16: bool,
                   static_batch: bool,
                   export_format: str) -> None:
    """Export the policy of RUN_DIR as a deploy bundle for the robot (docs/deploy.md).

    RUN_DIR/export holds policy.onnx, the robot MJCF it was trained on
    (robot/), deploy.yaml, README.md and, for tracking, the motion.
    Tracking: inputs obs and time_step, outputs actions and the reference
    motion. A task that tracks no motion (walk): input obs, output actions.

    The file is accepted only if onnxruntime (CPU) matches PyTorch within
    1e-5 at batch 1 and 64 (1 only with a static batch) on observations from
    rollouts of the policy; otherwise the command exits non-zero and says by
    how much they differ. `python -m primebot.pipeline.bundle RUN_DIR/export`
    runs the bundle without torch.
    """
    from ..export.export_run import REPORT_FILE, export_run
    from ..run_lock import run_dir_lock
    from ..rundir import EXPORT_DIR
    from .run_record import note_in_pipeline

    with run_dir_lock(run_dir):
        result = export_run(host.registry, run_dir, checkpoint, fp16=fp16,
                            static_batch=static_batch,
                            export_format=export_format)
        outputs = {"policy.onnx": f"{EXPORT_DIR}/{result.onnx_path.name}",
                   "deploy.yaml": f"{EXPORT_DIR}/{result.deploy_path.name}",
                   **({"motion": f"{EXPORT_DIR}/{result.motion_path.name}"} if result.motion_path
                      else {}),
                   "export.json": f"{EXPORT_DIR}/{REPORT_FILE}"}
        note_in_pipeline(host, run_dir, "export", outputs=outputs, summary=result.summary(),
                         message=result.headline())
    meta = result.metadata
    motion = (
        f", {meta['motion_num_steps']} motion steps"
        if "motion_num_steps" in meta
        else ", no motion"
    )
    click.echo(f"policy: {result.onnx_path} ({result.onnx_path.stat().st_size / 1024:.0f} KiB, "
               f"{meta['num_observations']} obs -> {meta['num_actions']} actions{motion})")
    for batch, diffs in result.parity.items():
        click.echo(f"onnxruntime vs PyTorch, batch {batch}: max |diff| {max(diffs.values()):.2e} "
                   "(atol 1e-05)")
    click.echo("batch-1 onnxruntime latency (CPU, 1 thread): median "
               f"{result.latency['median_ms']:.3f} ms, "
               f"p90 {result.latency['p90_ms']:.3f} ms")
    if result.fp16:
        worst = max(d["actions"] for d in result.fp16["parity_max_abs_diff"].values())
        click.echo(f"fp16: {result.fp16['path']} (actions max |diff| {worst:.2e}, atol "
                   f"{result.fp16['actions_atol']:g}; closed loop passed)")
    click.echo(f"robot model: {result.mjcf.file} (sha256 {result.mjcf.sha256[:12]}...)")
    click.echo(f"deploy: {result.deploy_path}"
               + (f"; motion: {result.motion_path}" if result.motion_path else ""))
    click.echo(f"[DONE] export: {result.onnx_path}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(export_command)
