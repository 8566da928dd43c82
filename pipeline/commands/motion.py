"""``primebot motion``: validate, replay, author, record, convert, resample and retarget reference
motions, and replay them under PD with no policy."""

from __future__ import annotations

import click

from ..cli import pass_host
from ..hooks.host import PluginHost
from ..hooks.specs import hookimpl
from ..robot.spec import get_robot

robot_option = click.option(
    "--robot", default=None,
    help="Registered robot name (default: the default task's robot, q1 as shipped, or the source's "
         "'robot:')."
)
robot_xml_option = click.option(
    "--robot-xml",
    type=click.Path(dir_okay=False),
    default=None,
    help="Use this MJCF instead of the robot's registered one.",
)


def output_option(help_text: str):
    """The ``-o/--output`` file option; only its help (the default output name) differs per
    command."""
    return click.option(
        "-o", "--output", type=click.Path(dir_okay=False), default=None, help=help_text
    )


@click.group("motion")
def motion_group() -> None:
    """Reference motion files (.npz, mjlab/BeyondMimic layout): check, view, make."""


@motion_group.command("author")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@output_option("Output .npz (default: SOURCE with .npz).")
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

    from ..motion.author import author_file

    spec = get_robot(host.registry, robot or _source_robot(source, host), robot_xml)
    out = Path(output) if output else Path(source).with_suffix(".npz")
    motion = author_file(source, spec, out)
    click.echo(
        f"wrote {out}: {motion.num_frames} frames at {motion.fps:g} fps ({motion.duration:.2f} s), "
        f"{len(spec.joint_names)} joints, {motion.body_pos_w.shape[1]} bodies"
    )


@motion_group.command("record")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The recorded motion (.npz).")
@robot_option
@robot_xml_option
@pass_host
def record_command(
    host: PluginHost, source: str, output: str, robot: str | None, robot_xml: str | None
) -> None:
    """Play a keyframe source's servo targets in simulation and record the motion.

    SOURCE is a keyframe YAML (the format of primebot motion author)
    whose keyframes are joint targets and whose 'record:' mapping says
    how they are played: 'joints' (simulated or targets), 'max_step_rad'
    and 'balance' (docs/motions.md, "Authoring motions
    from keyframes"). The targets run
    open loop through the robot's PD servos in the default task's
    simulation, and what the body did (root, joints, bodies from forward
    kinematics) is written to OUTPUT. A motion that needs the physics, such
    as a get-up from the back (motions/getup.yaml), is made this way.

    \b
    Example:
      primebot motion record motions/getup.yaml -o motions/getup.npz
    """
    from pathlib import Path

    from ..motion.recording import record

    spec = get_robot(host.registry, robot or _source_robot(source, host), robot_xml)
    motion = record(source, spec, host.registry, Path(output))
    click.echo(
        f"wrote {output}: {motion.num_frames} frames at {motion.fps:g} fps "
        f"({motion.duration:.2f} s) recorded from {source} on {spec.name}"
    )


@motion_group.command("pd-replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@robot_option
@robot_xml_option
@click.option("--feedforward", is_flag=True,
              help="Add each servo's feedforward of the motion's torques to its target (inverse "
                   "dynamics), so no servo sags: what still falls is balance, not sag.")
@click.option("--window", type=float, default=1.0, show_default=True, metavar="S",
              help="Seconds from the start over which the joints furthest from their targets are "
                   "listed (before a fall makes every joint's error large).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the per-step figures here as JSON.")
@click.option("--video", type=click.Path(dir_okay=False), default=None,
              help="Also film the robot beside its reference (a ghost) to this .mp4 (headless: "
                   "MUJOCO_GL=egl or osmesa).")
@pass_host
def pd_replay_command(
    host: PluginHost, file: str, robot: str | None, robot_xml: str | None, feedforward: bool,
    window: float, json_path: str | None, video: str | None,
) -> None:  # fmt: skip
    """Can the robot's body do a motion at all? Replay it under PD, no policy.

    Plays the motion from its first frame with every action zero: each
    joint's servo target is the reference's angle, with no randomisation,
    noise or terminations. Prints, per second, the reference's and the
    robot's root height and the tracked bodies' error, when the robot
    leaves the reference, and the joints furthest from their targets before
    then. A root that never follows the reference asks the body for what it
    cannot do, and no training will fix that; a joint that sags far while
    the robot is still up is where the policy (or a stiffer servo) has to
    help first. See docs/tasks.md, "When a motion does not track".

    \b
    Examples:
      primebot motion pd-replay motions/squat.npz
      primebot motion pd-replay clip_g1.npz --robot g1 --feedforward --json out.json
      primebot motion pd-replay motions/march.npz --video march_pd.mp4
    """
    import json
    from pathlib import Path

    from ..atomic import atomic_write_text
    from ..evaluate.pd_replay import pd_replay, report_lines

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    out = pd_replay(file, spec, host.registry, feedforward, video)
    if video and out["video"] is None:
        click.echo("no video: OpenGL is unavailable (set MUJOCO_GL=egl or osmesa)", err=True)
    for line in report_lines(out, window):
        click.echo(line)
    if json_path:
        atomic_write_text(Path(json_path), json.dumps(out))


def _source_robot(source: str, host: PluginHost) -> str:
    """The robot a keyframe source names (``robot:``), else the default task's."""
    from pathlib import Path

    import yaml

    try:
        named = (yaml.safe_load(Path(source).read_text(encoding="utf-8")) or {}).get("robot")
    except (yaml.YAMLError, AttributeError, UnicodeDecodeError):
        named = None  # the reader reports the broken source with its path
    return named or host.registry.default_robot()


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
    nothing below the floor, and balance (a warning when the zero-moment point
    leaves the planted feet: docs/motions.md, "Balance"). Each problem names
    the key, frame and column and
    how to fix it. Warnings do not fail the file.
    """
    import json

    from ..errors import MotionError
    from ..motion.validate import validate_motion_file

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    report = validate_motion_file(file, spec)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        for problem in report.problems:
            click.echo(f"  {problem}")
        click.echo(report.summary())
        if report.training_overrides:
            click.echo("carries training overrides (applied before any --set): "
                       f"{' '.join(report.training_overrides)}")
    if not report.ok:
        # a typed error, so the exit code survives click's non-standalone mode
        raise MotionError(
            f"{file} is not a valid motion for {spec.name} ({len(report.errors)} error(s) above)"
        )


@motion_group.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@output_option("Output video (default: FILE with .mp4).")
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

    from ..motion.format import load_motion
    from ..motion.replay import CameraConfig, replay_video

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    out = Path(output) if output else Path(file).with_suffix(".mp4")
    motion = load_motion(file)
    replay_video(
        motion, spec, out, width=width, height=height, camera=CameraConfig(shadows=shadows)
    )
    click.echo(
        f"wrote {out}: {motion.num_frames} frames, {width}x{height}, {motion.fps:g} fps, H.264"
    )


@motion_group.command("convert")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--input-fps", type=float, default=None, help="Frame rate of a CSV input (required for CSV)."
)
@click.option(
    "--output-fps",
    type=float,
    default=50.0,
    show_default=True,
    help="Frame rate of the .npz written.",
)
@output_option("Output file (default: FILE with .npz / .csv).")
@robot_option
@robot_xml_option
@pass_host
def convert_command(
    host: PluginHost, file: str, input_fps: float | None, output_fps: float, output: str | None,
    robot: str | None, robot_xml: str | None,
) -> None:  # fmt: skip
    """Convert a mjlab/BeyondMimic CSV to a motion .npz, or a .npz back to CSV.

    CSV rows: root x y z, root quaternion x y z w, joint angles in the robot's
    order. CSV → npz resamples to --output-fps (lerp positions, slerp the root
    rotation) and computes bodies and velocities by forward kinematics.
    npz → CSV writes the stored frames as they are.
    """
    from pathlib import Path

    from ..errors import MotionError
    from ..motion.convert import convert_csv, write_csv
    from ..motion.format import load_motion, save_motion

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    source = Path(file)
    if source.suffix.lower() == ".csv":
        if input_fps is None:
            raise MotionError(
                f"{file}: a CSV does not record its frame rate",
                fix="pass --input-fps (e.g. 30 for LAFAN1 retargets)",
            )
        out = Path(output) if output else source.with_suffix(".npz")
        motion = convert_csv(source, spec, input_fps, output_fps)
        save_motion(motion, out)
        click.echo(
            f"wrote {out}: {motion.num_frames} frames at {motion.fps:g} fps (from {input_fps:g} "
            "fps)"
        )
    elif source.suffix.lower() == ".npz":
        out = Path(output) if output else source.with_suffix(".csv")
        motion = load_motion(source)
        write_csv(motion, spec, out)
        click.echo(f"wrote {out}: {motion.num_frames} rows at {motion.fps:g} fps")
    else:
        raise MotionError(
            f"{file}: convert reads .csv or .npz, not {source.suffix or 'no extension'!r}"
        )


@motion_group.command("resample")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--fps", type=float, default=50.0, show_default=True, help="Target frame rate.")
@output_option("Output .npz (default: FILE_<fps>fps.npz).")
@robot_option
@robot_xml_option
@pass_host
def resample_command(
    host: PluginHost,
    file: str,
    fps: float,
    output: str | None,
    robot: str | None,
    robot_xml: str | None,
) -> None:
    """Resample a motion .npz to another frame rate (lerp positions, slerp the root rotation).

    Bodies and velocities are recomputed by forward kinematics of the
    resampled root and joints.
    """
    from pathlib import Path

    from ..motion.convert import resample_motion
    from ..motion.format import load_motion, save_motion

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    source = Path(file)
    out = Path(output) if output else source.with_name(f"{source.stem}_{fps:g}fps.npz")
    motion = load_motion(source)
    resampled = resample_motion(motion, spec, fps)
    save_motion(resampled, out)
    click.echo(
        f"wrote {out}: {resampled.num_frames} frames at {fps:g} fps (from {motion.num_frames} at "
        f"{motion.fps:g})"
    )


@motion_group.command("retarget")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@output_option("Output .npz (default: SOURCE_<robot>.npz).")
@robot_option
@robot_xml_option
@click.option("--format", "fmt", type=click.Choice(["bvh", "npz", "pt"]), default=None,
              help="Source format (default: from the extension, else the file's contents).")
@click.option("--map", "map_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Joint map YAML (default: the robot's built-in map for the skeleton, else a "
                   "guessed one).")
@click.option("--fps", type=float, default=None,
              help="The source's frame rate (BVH stores it; .npz and .pt files need it, e.g. 30).")
@click.option("--height", type=float, default=None,
              help="The person's stature in m (default: the file's, else estimated from the "
                   "skeleton).")
@click.option("--scale", type=click.Choice(["legs", "height"]), default="legs",
              show_default=True,
              help="legs: the pelvis and legs by robot leg length / the person's, the rest by "
                   "height (a robot whose legs are a larger share of its height than a person's, "
                   "as the G1's, walks as upright as the person); height: every joint by robot "
                   "height / the person's (docs/motions.md).")
@click.option("--units", type=click.Choice(["auto", "m", "cm", "mm", "in"]), default="auto",
              show_default=True,
              help="Units of the source's positions (auto: BVH by the skeleton's size, others "
                   "metres).")
@click.option("--start", "start_s", type=float, default=None,
              help="Retarget from this time of the source, in seconds (default: its first frame): "
                   "cut the first frames of a clip that starts mid-motion.")
@click.option("--end", "end_s", type=float, default=None,
              help="Retarget up to this time of the source, in seconds (default: its last frame).")
@click.option("--no-align", is_flag=True,
              help="Keep the source's start position and heading (default: start "
              "at the origin facing +x).")
@click.option("--no-balance", is_flag=True,
              help="Keep the person's lean: do not move the robot's centre of mass to bring the "
              "zero-moment point back over its planted feet (default: move it; docs/motions.md).")
@click.option("--video", type=click.Path(dir_okay=False), default=None,
              help="Also write a side-by-side video: the person's skeleton beside the robot.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the quality figures and validation as JSON.")
@pass_host
def retarget_command(
    host: PluginHost, source: str, output: str | None, robot: str | None, robot_xml: str | None,
    fmt: str | None,
    map_path: str | None, fps: float | None, height: float | None, scale: str, units: str,
    start_s: float | None, end_s: float | None, no_align: bool,
    no_balance: bool, video: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Retarget human motion (BVH, joint-position .npz, SMPL-H .pt) onto a robot (docs/motions.md).

    Global joint positions are scaled to the robot (the pelvis and legs by the leg length ratio,
    the rest by the height ratio; --scale height: all by height), the person's planted feet are
    held still,
    and whole-body inverse kinematics (mink) on the robot's MJCF follows the mapped joints within
    the joint limits; where the robot's zero-moment point would leave its planted feet, its centre
    of mass is moved back over them (--no-balance keeps the person's lean); the result is put on the
    floor, written at 50 fps and validated (balance included).
    Prints the quality figures: foot skate, floor penetration, joint-limit violations, IK residuals.
    """
    import json
    from pathlib import Path

    from ..errors import MotionError
    from ..motion.retarget.retarget import retarget_file
    from ..motion.validate import validate_motion

    spec = get_robot(host.registry, robot or host.registry.default_robot(), robot_xml)
    out = Path(output) if output else Path(source).with_name(f"{Path(source).stem}_{spec.name}.npz")
    done = retarget_file(source, spec, out, fmt=fmt, fps=fps,
                         units=None if units == "auto" else units,
                         map_path=map_path, height=height, align=not no_align, progress=not as_json,
                         balance=not no_balance, start_s=start_s, end_s=end_s, scale=scale)
    report = validate_motion(done.motion, spec, path=str(out))
    if video:
        from ..render.skeleton import bones, side_by_side_video

        side_by_side_video(done.motion, spec, done.targets.skeleton,
                           bones(done.human.names, done.roles), video)
    if as_json:
        click.echo(json.dumps({"output": str(out), "quality": done.quality.to_dict(),
                               "validation": report.to_dict()}, indent=2, ensure_ascii=False))
    else:
        click.echo(f"wrote {out}: {done.motion.num_frames} frames at 50 fps "
                   f"({done.motion.duration:.2f} s) for {spec.name}")
        for line in done.quality.lines():
            click.echo(line)
        for problem in report.problems:
            click.echo(f"  {problem}")
        click.echo(report.summary())
        if video:
            click.echo(f"wrote {video}: the person beside the robot")
    if not report.ok:
        raise MotionError(f"{out} was written but is not a valid motion for {spec.name} "
                          f"({len(report.errors)} error(s) above)",
                          fix="check the map and --height, or the source at the frames named")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(motion_group)
