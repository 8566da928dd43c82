"""``primebot plugins``: what is installed and what each plugin registered."""

from __future__ import annotations

import json

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl


def plugin_table(host: PluginHost) -> list[dict]:
    """One row per plugin: name, source, hooks, registered names by kind, and the error of a failed
    hook."""
    rows = []
    for info in host.plugins.values():
        registered: dict[str, list[str]] = {}
        for reg in host.registry.by_plugin(info.name):
            registered.setdefault(reg.kind, []).append(reg.name)
        failure = host.failures.get(info.name)
        rows.append(
            {"name": info.name, "source": info.source, "module": info.module, "hooks": info.hooks,
             "registered": registered,
             "error": None if failure is None else str(failure)}
        )
    return rows


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@pass_host
def plugins_command(host: PluginHost, as_json: bool) -> None:
    """List every plugin, where it came from and what it registered.

    Built-ins come first, then plugins from installed distributions (entry-point
    group 'primebot'). Skip plugins with PRIMEBOT_DISABLE_PLUGINS=a,b.
    """
    rows = plugin_table(host)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows) if rows else 4
    for row in rows:
        click.echo(f"{row['name']:<{width}}  {row['source']}  ({row['module']})")
        for kind, names in row["registered"].items():
            click.echo(f"{'':<{width}}    {kind}: {', '.join(names)}")
        if row["error"]:
            first, *rest = row["error"].splitlines()
            click.secho(f"{'':<{width}}    FAILED: {first}", fg="red")
            for line in rest:
                click.secho(f"{'':<{width}}    {line}", fg="red")
    failed = [row["name"] for row in rows if row["error"]]
    if failed:
        click.echo(f"\n{len(failed)} plugin(s) failed to register: {', '.join(failed)}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(plugins_command)
