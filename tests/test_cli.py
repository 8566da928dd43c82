"""The CLI: --version, and --help on every command the plugins contribute."""

from __future__ import annotations

import click
from click.testing import CliRunner

from primebot.pipeline import __version__
from primebot.pipeline.cli import build_cli
from primebot.pipeline.hooks.host import load_plugins


def all_command_paths(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        path = (*prefix, name)
        yield path
        if isinstance(command, click.Group):
            yield from all_command_paths(command, path)


def test_version():
    cli = build_cli(load_plugins(entry_points_=[]))
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_every_command_has_help_text(clean_env):
    cli = build_cli(load_plugins(entry_points_=[]))
    paths = list(all_command_paths(cli))
    assert ("plugins",) in paths and ("devices",) in paths
    for path in paths:
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        summary = result.output.split("Options:")[0]
        assert len(summary.split("\n", 2)[-1].strip()) > 10, (
            f"`primebot {' '.join(path)} --help` says nothing"
        )
        # a docstring's markup is for readers of the code, not of the terminal
        assert "``" not in result.output, f"`primebot {' '.join(path)} --help` shows ``markup``"
