"""``primebot export RUN_DIR``: export/policy.onnx, deploy.yaml and the motion, checked against onnxruntime."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..hookspecs import hookimpl
from ..plugins import PluginHost


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--checkpoint", default=None,
              help="model_<it>.pt name or path, an iteration number, or 'best'. [default: the newest model_<it>.pt]")
@pass_host
def export_command(host: PluginHost, run_dir: str, checkpoint: str | None) -> None:
    """Export the policy of RUN_DIR to ONNX for the robot (docs/deploy.md).

    Tracking: inputs obs and time_step, outputs actions and the reference
    motion. A task that tracks no motion (walk): input obs, output actions.

    The file is accepted only if onnxruntime (CPU) matches PyTorch within
    1e-5 at batch 1 and 64 on observations from rollouts of the policy;
    otherwise the command exits non-zero and says by how much they differ.
    """
    from ..export import export_run
    from ..run_lock import run_dir_lock

    with run_dir_lock(run_dir):
        result = export_run(host.registry, run_dir, checkpoint)
    meta = result.metadata
    motion = f", {meta['motion_num_steps']} motion steps" if "motion_num_steps" in meta else ", no motion"
    click.echo(f"policy: {result.onnx_path} ({result.onnx_path.stat().st_size / 1024:.0f} KiB, "
               f"{meta['num_observations']} obs -> {meta['num_actions']} actions{motion})")
    for batch, diffs in result.parity.items():
        click.echo(f"onnxruntime vs PyTorch, batch {batch}: max |diff| {max(diffs.values()):.2e} (atol 1e-05)")
    click.echo(f"batch-1 onnxruntime latency (CPU, 1 thread): median {result.latency['median_ms']:.3f} ms, "
               f"p90 {result.latency['p90_ms']:.3f} ms")
    click.echo(f"deploy: {result.deploy_path}" + (f"; motion: {result.motion_path}" if result.motion_path else ""))
    click.echo(f"[DONE] export: {result.onnx_path}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(export_command)
