"""``primebot config show``: every setting a training run would use, and where each came from.

The settings are resolved by the same function training uses
(``train.settings_layers.resolve_config``, docs/training.md, "Settings"), so what this
prints is what ``primebot train`` (or the train stage of ``pipeline run
--preset P``) writes to args.yaml, before anything settled per device.
"""

from __future__ import annotations

from typing import Any

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..stages.presets import PRESETS, get_preset
from ..train.train_config import flatten

TRAINER_DEFAULT = "trainer default"
SETTLED_AT_START = ("device", "motion_sha256")
"""Settings a run fills in when it starts (the device resolved, the motion's checksum)."""


def source_of(key: str, sources: dict[str, str], task: str) -> str:
    """Where ``key`` (``task.…`` for task settings) came from: the most specific layer that set it
    or a section above it, else its default."""
    parts = key.split(".")
    # "task" alone names the task
    for end in range(len(parts), 1 if key.startswith("task.") else 0, -1):
        found = sources.get(".".join(parts[:end]))
        if found:
            return found
    return f"task {task}" if key.startswith("task.") else TRAINER_DEFAULT


def resolved_settings(
    registry: Any, request: Any, preset: str | None = None
) -> list[tuple[str, Any, str]]:
    """``(key, value, source)`` for every setting of ``request`` (with ``preset``'s sizes and
    ``--set``s first, as ``pipeline run --preset`` trains), in args.yaml's order."""
    from ..train.settings_layers import resolve_config
    from ..train.train_config import parse_set

    user_sets = list(request.sets)
    preset_sets: list[str] = []
    preset_sized: list[str] = []
    if preset is not None:
        chosen = get_preset(preset)
        preset_sets = [f"ppo.num_steps_per_env={chosen.steps_per_env}", *chosen.train_sets]
        request.sets = [*preset_sets, *user_sets]
        for name in ("num_envs", "iterations"):
            if getattr(request, name) is None:
                setattr(request, name, getattr(chosen, name))
                preset_sized.append(name)
    sources: dict[str, str] = {}
    cfg = resolve_config(registry, request, request.device or "auto", sources)
    if preset is not None:
        user_keys = {key for key, _ in parse_set(user_sets)}
        for key, _ in parse_set(preset_sets):
            if key not in user_keys:
                sources[key] = f"preset {preset}"
        for name in preset_sized:
            sources[name] = f"preset {preset}"
    sources["device"] = (
        "--device" if request.device else "resolved when the run starts (docs/devices.md)"
    )
    if request.motion:
        cfg.motion = request.motion
        sources["motion"] = "MOTION"
    sources["task"] = "--task" if request.task else "default task"
    data = cfg.to_dict()
    task_settings = data.pop("task_config")
    rows = [(key, value, source_of(key, sources, cfg.task)) for key, value in flatten(data).items()
            if key not in SETTLED_AT_START or key == "device"]
    return rows + [(key, value, source_of(key, sources, cfg.task))
                   for key, value in flatten(task_settings, "task.").items()]


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@click.group("config")
def config_group() -> None:
    """The settings a training run resolves (docs/training.md, "Settings")."""


@config_group.command("show")
@click.argument("motion", required=False)
@click.option("--task", default=None, help="Registered task. [default: tracking]")
@click.option("--robot", default=None, help="Registered robot. [default: the task's robot]")
@click.option("--num-envs", type=int, default=None, help="As for primebot train.")
@click.option("--iterations", type=int, default=None, help="As for primebot train.")
@click.option("--seed", type=int, default=None, help="As for primebot train.")
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None,
              help="Show what the train stage of `primebot pipeline run --preset PRESET` uses.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="As for primebot train (repeatable).")
@pass_host
def show(host: PluginHost, motion: str | None, task, robot, num_envs, iterations, seed, preset,
         sets) -> None:
    """Print every setting of a training run with MOTION (or --task), one per line: key, value and
    where it came from (trainer default, the task, a flag, the motion file, a preset or --set).

    Without --preset it shows what primebot train uses; primebot pipeline run trains with its
    preset (--preset default unless given), so add --preset default to see that run's sizes.
    Nothing is trained and no device is touched; 'auto' settings are settled when the run starts.
    """
    from ..train.settings_layers import TrainRequest

    request = TrainRequest(motion=motion, task=task, robot=robot, num_envs=num_envs,
                           iterations=iterations,
                           seed=seed, sets=list(sets))
    rows = resolved_settings(host.registry, request, preset)
    width = max(len(key) for key, _, _ in rows)
    value_width = min(40, max(len(_text(value)) for _, value, _ in rows))
    for key, value, source in rows:
        click.echo(f"{key.ljust(width)}  {_text(value).ljust(value_width)}  # {source}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(config_group)
