"""``primebot devices``: the device backends, and a probe that really uses one."""

from __future__ import annotations

import json

import click

from ..cli import pass_host
from ..devices.backend import dtype_name, resolve_device
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl


def backend_rows(host: PluginHost) -> list[dict]:
    rows = []
    for name, backend in host.registry.items("backends").items():
        status = backend.availability()
        count = backend.device_count() if status.available else 0
        rows.append(
            {
                "backend": name,
                "available": status.available,
                "devices": count,
                "name": backend.device_name(0) if count else "",
                "torch_device": backend.torch_device(0),
                "collective": backend.collective,
                "autocast": dtype_name(backend.autocast_dtype()) if status.available else "",
                "reason": status.reason,
                "plugin": host.registry.registration("backends", name).plugin,
            }
        )
    return rows


@click.command("devices")
@click.option("--probe", is_flag=True,
              help="Really use the device: matmul, copies, MLP step; print timings.")
@click.option("--device", default=None,
              help="Device to probe (cpu, cuda, cuda:1, npu...). Default: resolved per "
                   "docs/devices.md.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@pass_host
def devices_command(host: PluginHost, probe: bool, device: str | None, as_json: bool) -> None:
    """List device backends and whether each is usable here.

    The device training uses is chosen by --device > PRIMEBOT_DEVICE >
    CUDA_VISIBLE_DEVICES > ASCEND_RT_VISIBLE_DEVICES > cpu. With --probe the
    resolved device runs a 512×512 matmul (float32 and the mixed-precision
    dtype), host↔device copies of a 1024×119 float32 batch and a 512-256-128
    MLP forward+backward, and the timings are printed. The last line says
    whether the device runs mixed precision natively (on a CPU: bf16
    instructions such as AVX512-BF16 or AMX), which is where training's
    ppo.mixed_precision=auto turns it on.
    """
    rows = backend_rows(host)
    resolved = resolve_device(host.registry, device)
    native = resolved.backend.native_autocast()
    report: dict = {"backends": rows,
                    "resolved": {"device": resolved.torch_device, "source": resolved.source,
                                                   "native_autocast": native}}
    if probe:
        from ..devices.probe import probe as run_probe

        report["probe"] = run_probe(resolved)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"{'backend':<8} {'ok':<4} {'n':>2}  {'collective':<10} {'autocast':<9} name / "
               "reason")
    for row in rows:
        detail = row["name"] if row["available"] else row["reason"]
        click.echo(
            f"{row['backend']:<8} {'yes' if row['available'] else 'no':<4} {row['devices']:>2}  "
            f"{row['collective']:<10} {row['autocast']:<9} {detail}"
        )
    click.echo(f"\nresolved device: {resolved.torch_device} (from {resolved.source})")
    dtype = dtype_name(resolved.backend.autocast_dtype())
    click.echo(f"mixed precision: {dtype} native ({native}): ppo.mixed_precision=auto turns it on"
               if native else
               f"mixed precision: no native {dtype} here: ppo.mixed_precision=auto leaves it off")
    if probe:
        click.echo(f"probe on {resolved.torch_device}:")
        for key, value in report["probe"].items():
            click.echo(f"  {key:<20} {value:10.3f}")
        click.echo(f"[DONE] probe on {resolved.torch_device}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(devices_command)
