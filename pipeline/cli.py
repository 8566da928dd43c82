"""The ``primebot`` command line. Every subcommand arrives through ``register_commands``."""

from __future__ import annotations

import logging
import os
import sys
import traceback

import click

from . import __version__
from .errors import PrimebotError
from .hooks.host import PluginHost, get_host
from .mujoco_gl import check_mujoco_gl

pass_host = click.make_pass_decorator(PluginHost)
"""Decorator giving a command the loaded ``PluginHost`` (registry included)."""

HELP = """primebot: reference motion in, deployable humanoid policy out.

\b
  primebot pipeline run motions/wave.npz     everything, one run directory
  primebot motion validate FILE.npz          check a motion file
  primebot train MOTION.npz                  PPO motion tracking
  primebot devices --probe                   is my GPU / NPU usable?
  primebot plugins                           what is installed

Each command has --help. Set PRIMEBOT_DEVICE, or pass --device, to choose
cpu, cuda or npu. Errors exit non-zero with the thing and the fix named;
--debug shows the full traceback.
"""


LISTS_FAILED_PLUGINS = ("plugins",)
"""Commands that run although a plugin failed to register (they report it)."""


def build_cli(host: PluginHost) -> click.Group:
    """A fresh root group with every plugin's commands added."""

    @click.group(help=HELP,
                 context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
    @click.version_option(__version__, "-V", "--version", prog_name="primebot")
    @click.option("--debug", is_flag=True, help="Show full tracebacks and debug logs.")
    @click.pass_context
    def cli(ctx: click.Context, debug: bool) -> None:
        ctx.obj = host
        if ctx.invoked_subcommand not in LISTS_FAILED_PLUGINS:
            host.raise_failures()
        logging.basicConfig(
            level=logging.DEBUG if debug else logging.INFO,
            format="%(levelname)s %(name)s: %(message)s" if debug else "%(message)s",
        )

    host.add_commands(cli)
    return cli


def _wants_debug(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("PRIMEBOT_DEBUG", "") not in ("", "0")


def main(argv: list[str] | None = None) -> int:
    """Console entry point: load plugins, run the command, turn typed errors into exit codes."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = _wants_debug(argv)
    try:
        check_mujoco_gl()
        cli = build_cli(get_host())
        # Without standalone mode click returns ctx.exit(code)'s code instead of exiting.
        code = cli.main(args=argv, prog_name="primebot", standalone_mode=False)
    except PrimebotError as exc:
        if debug:
            traceback.print_exc()
        click.secho(f"primebot: error: {exc}", err=True, fg="red")
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
