"""``primebot motion``: validate, replay, author, convert and resample reference motions."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..hookspecs import hookimpl
from ..plugins import PluginHost
from ..robot import get_robot

robot_option = click.option(
    "--robot", default=None, help="Registered robot name (default: q1, or the source's 'robot:')."
)
robot_xml_option = click.option(
    "--robot-xml",
    type=click.Path(dir_okay=False),
    default=None,
    help="Use this MJCF instead of the robot's registered one.",
)


@click.group("motion")
def motion_group() -> None:
    """Reference motion files (.npz, mjlab/BeyondMimic layout): check, view, make."""


@motion_group.command("author")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output .npz (default: SOURCE with .npz).",
)
@robot_option
@robot_xml_option
@pass_host
def author_command(
    host: PluginHost, source: str, output: str | None, robot: str | None, robot_xml: str | None
) -> None:
    """Build a motion from a keyframe YAML source (see docs/motions.md).

    Keyframes are interpolated with minimum-jerk profiles, the robot is put on
    the floor where the source says it stands or lies, and bodies and
    velocities come from forward kinematics. The output is reproducible byte
    for byte.
    """
    from pathlib import Path

    import yaml

    from ..motion_author import author_file

    if robot is None:
        try:
            robot = (yaml.safe_load(Path(source).read_text(encoding="utf-8")) or {}).get(
                "robot", "q1"
            )
        except (yaml.YAMLError, AttributeError):
            robot = "q1"  # author_file reports the broken source with its path
    spec = get_robot(host.registry, robot, robot_xml)
    out = Path(output) if output else Path(source).with_suffix(".npz")
    motion = author_file(source, spec, out)
    click.echo(
        f"wrote {out}: {motion.num_frames} frames at {motion.fps:g} fps ({motion.duration:.2f} s), "
        f"{len(spec.joint_names)} joints, {motion.body_pos_w.shape[1]} bodies"
    )


@motion_group.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@robot_option
@robot_xml_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_host
def validate_command(
    host: PluginHost, file: str, robot: str | None, robot_xml: str | None, as_json: bool
) -> None:
    """Check a motion file against a robot; exit 0 only when it is valid.

    Checks: keys and shapes, fps = 50, finite values, unit quaternions, joint
    limits, joint/body names and counts, velocities against finite
    differences (jump frames listed), body poses against forward kinematics,
    nothing below the floor. Each problem names the key, frame and column and
    how to fix it. Warnings do not fail the file.
    """
    import json

    from ..errors import MotionError
    from ..motion_validate import validate_motion_file

    spec = get_robot(host.registry, robot or "q1", robot_xml)
    report = validate_motion_file(file, spec)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        for problem in report.problems:
            click.echo(f"  {problem}")
        click.echo(report.summary())
    if not report.ok:
        # a typed error, so the exit code survives click's non-standalone mode
        raise MotionError(
            f"{file} is not a valid motion for {spec.name} ({len(report.errors)} error(s) above)"
        )


@motion_group.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output video (default: FILE with .mp4).",
)
@robot_option
@robot_xml_option
@click.option("--width", default=640, show_default=True, help="Video width in pixels.")
@click.option("--height", default=480, show_default=True, help="Video height in pixels.")
@click.option(
    "--shadows",
    is_flag=True,
    help="Render shadows and reflections (about 3x slower on software GL).",
)
@pass_host
def replay_command(
    host: PluginHost, file: str, output: str | None, robot: str | None, robot_xml: str | None,
    width: int, height: int, shadows: bool,
) -> None:  # fmt: skip
    """Render a kinematic replay of a motion to an H.264 video.

    The robot is posed from the file's root pose and joint angles at every
    frame and filmed by a camera that follows it, at the motion's fps.
    Headless: set MUJOCO_GL=egl or osmesa (tried in that order when unset).
    """
    from pathlib import Path

    from ..motion import load_motion
    from ..motion_replay import CameraConfig, replay_video

    spec = get_robot(host.registry, robot or "q1", robot_xml)
    out = Path(output) if output else Path(file).with_suffix(".mp4")
    motion = load_motion(file)
    replay_video(
        motion, spec, out, width=width, height=height, camera=CameraConfig(shadows=shadows)
    )
    click.echo(
        f"wrote {out}: {motion.num_frames} frames, {width}x{height}, {motion.fps:g} fps, H.264"
    )


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(motion_group)
