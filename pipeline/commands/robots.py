"""``primebot robots``: the registered robots, and one robot's joints, bodies, mass and height."""

from __future__ import annotations

import json

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..robot.checks import check_robot, findings_json, require_passing
from ..robot.describe import describe_robot
from ..robot.scaffold import scaffold_robot
from ..robot.spec import get_robot


@click.group("robots", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_context
def robots_command(ctx: click.Context, as_json: bool) -> None:
    """List the registered robots (primebot robots show NAME for details)."""
    if ctx.invoked_subcommand is not None:
        return
    host: PluginHost = ctx.find_object(PluginHost)
    rows = [
        {
            "name": name,
            "joints": spec.num_joints,
            "mjcf": str(spec.mjcf),
            "plugin": host.registry.registration("robots", name).plugin,
            "description": spec.description,
        }
        for name, spec in host.registry.items("robots").items()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no robots registered (see docs/robots.md to add one)")
    for row in rows:
        click.echo(
            f"{row['name']:<10} {row['joints']:>3} joints  [{row['plugin']}]  {row['description']}"
        )
        click.echo(f"{'':<10} {row['mjcf']}")


@robots_command.command("show")
@click.argument("name")
@click.option(
    "--robot-xml",
    type=click.Path(dir_okay=False),
    default=None,
    help="Use this MJCF instead of the registered one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@pass_host
def show_command(host: PluginHost, name: str, robot_xml: str | None, as_json: bool) -> None:
    """Print a robot's joints (limits, kp, kd, effort), bodies, mass and height.

    The model is compiled and checked against the spec, so a swapped-in MJCF
    (Q1_XML or --robot-xml) with missing or renamed joints fails here with
    every mismatch listed.
    """
    info = describe_robot(get_robot(host.registry, name, robot_xml))
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    click.echo(f"{info['name']}: {info['description']}")
    click.echo(f"  model   {info['mjcf']}")
    click.echo(
        f"  mass    {info['mass']:.2f} kg   height {info['height']:.3f} m   "
        f"{info['num_joints']} joints   {info['num_bodies']} bodies   timestep {info['timestep']} s"
    )
    click.echo(f"  anchor  {info['anchor_body']}   root {info['root_body']}")
    click.echo(f"  feet    {', '.join(info['feet'])}")
    click.echo(f"  end effectors  {', '.join(info['end_effector_bodies'])}")
    click.echo(f"  tracked ({len(info['tracked_bodies'])})  {', '.join(info['tracked_bodies'])}")
    if info["training_overrides"]:
        click.echo(f"  trains with  {' '.join(info['training_overrides'])}   (any --set wins)")
    click.echo(
        "\n  joint                         lower   upper  default      kp     kd  effort  scale"
    )
    for j in info["joints"]:
        click.echo(
            f"  {j['name']:<28} {j['lower']:6.2f}  {j['upper']:6.2f}  {j['default']:6.2f}  "
            f"{j['kp']:6.1f}  {j['kd']:5.2f}  {j['effort']:6.1f}  {j['action_scale']:.3f}"
        )
    click.echo("\n  body                          mass kg")
    for b in info["bodies"]:
        click.echo(f"  {b['name']:<28} {b['mass']:7.3f}")


@robots_command.command("check")
@click.argument("name")
@click.option(
    "--robot-xml",
    type=click.Path(dir_okay=False),
    default=None,
    help="Check this MJCF instead of the registered one.",
)
@click.option("--no-simulate", is_flag=True,
              help="Skip the simulations: standing under PD, and the kicks that compare the "
                   "training step with the model's.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@pass_host
def check_command(host: PluginHost, name: str, robot_xml: str | None, no_simulate: bool,
                  as_json: bool) -> None:
    """Every model check of a robot up front, each with its fix.

    The timestep, names (with did-you-mean), actuators and the gains contract,
    armature, keyframe, floor, the standing pose on the floor, self-collision
    in it, the keyframe against the default pose, standing under the spec's PD
    servos (information), whether the robot moves at the physics step it trains
    at (or could: twice the model's) as at its model's, and the video camera's
    framing. Exits 5 when any check fails.
    """
    spec = get_robot(host.registry, name, robot_xml)
    findings = check_robot(spec, simulate=not no_simulate)
    if as_json:
        click.echo(json.dumps(findings_json(findings), indent=2, ensure_ascii=False))
    else:
        click.echo(f"robot {spec.name}  ({spec.mjcf})")
        colours = {"ok": "green", "error": "red", "info": None}
        for f in findings:
            click.echo(f"  {click.style(f'{f.status:<5}', fg=colours[f.status])}  {f.check:<16} "
                       f"{f.detail}")
            if f.fix and f.status == "error":
                click.echo(f"  {'':<5}  {'':<16} fix: {f.fix}")
    require_passing(spec, findings)


@robots_command.command("new")
@click.argument("name")
@click.option("--mjcf", "mjcf", type=click.Path(dir_okay=False), required=True,
              help="The robot's MJCF file.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Folder for the package (default: ./primebot-NAME).")
def new_command(name: str, mjcf: str, output: str | None) -> None:
    """Scaffold a pip-installable robot plugin package from an MJCF.

    Joints, bodies, feet, end effectors and anchor are guessed from the model
    and marked REVIEW; gains follow mjlab's rule from armature and effort.
    The package's copy of the model gains what it lacks (floor, actuators
    with the spec's gains, armature, a stand keyframe on the floor). The spec
    trains at twice the model's physics step (10 ms, faster) where the robot,
    kicked gently under its servos, moves there as at its own.
    """
    made = scaffold_robot(name, mjcf, output)
    g = made.guess
    click.echo(f"wrote {made.folder}/ ({made.package}): {len(g.joint_names)} joints, "
               f"{g.height:.2f} m, {g.mass:.1f} kg")
    click.echo(f"  feet {', '.join(g.feet)}   hands {', '.join(g.hands) or 'none'}   anchor "
               f"{g.anchor_body}")
    click.echo(f"  model copy adds: {', '.join(made.model_changes) or 'nothing'}")
    for topic, note in g.notes.items():
        click.echo(f"  {topic}: {note}")
    maps = guessed_retarget_maps(name, made.folder / made.package / "model", g)
    click.echo(f"  joint maps for `motion retarget` (REVIEW): {', '.join(p.name for p in maps)} in "
               "model/retarget/")
    click.echo(f"next: review the REVIEW lines in {made.folder}/{made.package}/spec.py, then\n"
               f"  pip install -e {made.folder}\n  primebot robots check {name}")


def guessed_retarget_maps(name: str, model_dir, guess) -> list:
    """The scaffold's joint maps (motion/retarget/maps.write_guessed_maps), beside its model copy
    where `motion retarget` looks for them; written here because robot/ sits below motion/
    (docs/architecture.md §1)."""
    from ..motion.retarget.maps import write_guessed_maps
    from ..robot.model import compile_mjcf

    model = compile_mjcf(model_dir / f"{name}.xml", name)
    return write_guessed_maps(model, model_dir / "retarget", root=guess.root_body,
                              anchor=guess.anchor_body,
                              feet=guess.feet, hands=guess.hands)


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(robots_command)
