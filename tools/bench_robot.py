"""Bring your own robot, measured: the Unitree G1 from mjlab's PyPI wheel, by the docs alone.

    python tools/bench_robot.py                                   # download, scaffold, check, author, train (default preset)
    python tools/bench_robot.py --iterations 2 --num-envs 8 --eval-episodes 1 --no-video   # a smoke run
    python tools/bench_robot.py --wheel mjlab-1.6.0-py3-none-any.whl   # a wheel already downloaded

Steps, each a command a new user would type (docs/robots.md):

1. ``pip download --no-deps mjlab`` into the work folder (network, at run time only: the model
   is Apache-2.0 and is never committed here), then extract the G1 MJCF and its STL meshes
   (``mjlab/asset_zoo/robots/unitree_g1/xmls``) and the wheel's licence;
2. ``primebot robots new g1 --mjcf .../g1.xml -o WORK/primebot-g1``;
3. ``pip install --no-deps`` the scaffold into this environment (a regular, non-editable
   install: the model travels as package data);
4. ``primebot robots check g1``;
5. ``primebot motion author`` a wave and a squat for the G1 (sources written below), and
   ``primebot motion validate`` them;
6. ``primebot pipeline run MOTION --robot g1`` per motion, then the table of
   tools/bench_motions.py (statue and policy MPKPE, success, verdict, minutes).

Nothing before step 6 trains; ``--stop-before-train`` ends there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_motions import _run_dir, report, run_figures  # noqa: E402

G1_PREFIX = "mjlab/asset_zoo/robots/unitree_g1/xmls/"
ROBOT = "g1"

# G1 joint signs (its MJCF): positive elbow bends the forearm up, negative right shoulder roll
# lifts the right arm sideways, negative hip pitch swings the leg forward, positive knee bends it.
G1_MOTIONS = {
    "wave": """\
# The G1 stands, raises its right arm, waves three times and lowers it.
robot: g1
fps: 50
angles: deg
description: stand, raise the right arm, wave three times, lower it
poses:
  arm_up:   {right_shoulder_roll_joint: -75, right_shoulder_yaw_joint: -85, right_elbow_joint: 90}
  wave_out: {right_shoulder_roll_joint: -75, right_shoulder_yaw_joint: -85, right_elbow_joint: 65}
  wave_in:  {right_shoulder_roll_joint: -75, right_shoulder_yaw_joint: -85, right_elbow_joint: 110}
keyframes:
  - {time: 0.0, plant_feet: true}
  - {time: 0.6, plant_feet: true}
  - {time: 1.6, pose: arm_up, plant_feet: true}
  - {time: 1.95, pose: wave_out, plant_feet: true}
  - {time: 2.3, pose: wave_in, plant_feet: true}
  - {time: 2.65, pose: wave_out, plant_feet: true}
  - {time: 3.0, pose: wave_in, plant_feet: true}
  - {time: 3.35, pose: wave_out, plant_feet: true}
  - {time: 3.7, pose: wave_in, plant_feet: true}
  - {time: 4.0, pose: arm_up, plant_feet: true}
  - {time: 5.0, plant_feet: true}
  - {time: 5.6}
""",
    "squat": """\
# The G1 does two slow squats with its arms reaching forward.
robot: g1
fps: 50
angles: deg
description: two slow squats, arms forward
poses:
  down:
    left_hip_pitch_joint: -75
    right_hip_pitch_joint: -75
    left_knee_joint: 100
    right_knee_joint: 100
    left_ankle_pitch_joint: -40
    right_ankle_pitch_joint: -40
    waist_pitch_joint: 10
    left_shoulder_pitch_joint: -80
    right_shoulder_pitch_joint: -80
    left_elbow_joint: 10
    right_elbow_joint: 10
keyframes:
  - {time: 0.0, plant_feet: true}
  - {time: 0.5, plant_feet: true}
  - {time: 2.0, pose: down, root: {rpy: [0, 15, 0]}, plant_feet: true}
  - {time: 2.5, pose: down, plant_feet: true}
  - {time: 4.0, root: {rpy: [0, 0, 0]}, plant_feet: true}
  - {time: 4.5, plant_feet: true}
  - {time: 6.0, pose: down, root: {rpy: [0, 15, 0]}, plant_feet: true}
  - {time: 6.5, pose: down, plant_feet: true}
  - {time: 8.0, root: {rpy: [0, 0, 0]}, plant_feet: true}
  - {time: 8.5}
""",
}


def step(title: str, command: list[str], log: Path, **kwargs) -> None:
    """Run one user command, its output to ``log``; stop the bench with that output when it fails."""
    print(f"$ {' '.join(command)}", flush=True)
    start = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    print(f"  {title}: exit {code}, {time.perf_counter() - start:.1f} s", flush=True)
    if code != 0:
        sys.stdout.write(log.read_text(encoding="utf-8")[-4000:])
        raise SystemExit(f"bench_robot: {title} failed (exit {code}); log: {log}")


def primebot(*args: str) -> list[str]:
    return [sys.executable, "-m", "primebot.pipeline", *args]


def fetch_g1(work: Path, wheel: Path | None, log: Path) -> tuple[Path, str]:
    """The G1 MJCF extracted from mjlab's wheel (downloaded unless given), and the wheel's licence line."""
    if wheel is None:
        (work / "wheel").mkdir(parents=True, exist_ok=True)
        step("pip download mjlab", [sys.executable, "-m", "pip", "download", "--no-deps", "mjlab",
                                    "-d", str(work / "wheel")], log)
        wheels = sorted((work / "wheel").glob("mjlab-*.whl"))
        if not wheels:
            raise SystemExit("bench_robot: pip download produced no mjlab wheel")
        wheel = wheels[-1]
    target = work / "mjlab_g1"
    licence = "unknown"
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith(G1_PREFIX) or "/licenses/" in name or name.endswith("/LICENSE"):
                archive.extract(name, target)
            if name.endswith(".dist-info/METADATA"):
                meta = archive.read(name).decode("utf-8", "replace").splitlines()
                licence = next((line for line in meta if line.startswith("License")), licence)
    mjcf = target / G1_PREFIX / "g1.xml"
    if not mjcf.is_file():
        raise SystemExit(f"bench_robot: {wheel.name} has no {G1_PREFIX}g1.xml")
    print(f"  {wheel.name}: {licence}; G1 model {mjcf}", flush=True)
    return mjcf, licence


def bench_one(motion: Path, args: argparse.Namespace) -> dict:
    """``primebot pipeline run MOTION --robot g1``; the row has bench_motions.py's figures."""
    command = primebot("pipeline", "run", str(motion), "--robot", ROBOT, "--preset", args.preset,
                       "--log-dir", str(args.work / "runs"), "--run-name", motion.stem)
    for flag in ("iterations", "num_envs", "eval_episodes"):
        if getattr(args, flag) is not None:
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.no_video:
        command.append("--no-video")
    for item in args.set or []:
        command += ["--set", item]
    log = args.work / f"{motion.stem}.log"
    print(f"$ {' '.join(command)}  (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    row = {"motion": motion.stem, "exit_code": code, "total_s": time.perf_counter() - start,
           "log": str(log)}
    run_dir = _run_dir(args.work / "runs", motion.stem)
    return row if run_dir is None else {**row, **run_figures(run_dir)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--work", type=Path, default=REPO / "logs" / "bench_robot", help="work folder")
    parser.add_argument("--wheel", type=Path, help="an mjlab wheel already downloaded (skips pip download)")
    parser.add_argument("--motions", nargs="*", default=list(G1_MOTIONS), choices=list(G1_MOTIONS))
    parser.add_argument("--preset", default="default", help="pipeline preset (default: default)")
    parser.add_argument("--iterations", type=int, help="override the preset's PPO iterations")
    parser.add_argument("--num-envs", type=int, help="override the preset's training environments")
    parser.add_argument("--eval-episodes", type=int, help="override the preset's evaluation episodes")
    parser.add_argument("--no-video", action="store_true", help="skip the videos")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="training override (repeatable)")
    parser.add_argument("--stop-before-train", action="store_true", help="end after authoring the motions")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MUJOCO_GL", "egl")
    log = args.work / "setup.log"
    log.write_text("", encoding="utf-8")

    mjcf, _ = fetch_g1(args.work, args.wheel, log)
    package = args.work / "primebot-g1"
    if package.exists():
        import shutil

        shutil.rmtree(package)
    step("robots new", primebot("robots", "new", ROBOT, "--mjcf", str(mjcf), "-o", str(package)), log)
    step("pip install the scaffold", [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                      "--no-build-isolation", "--force-reinstall", str(package)], log)
    step("robots check", primebot("robots", "check", ROBOT), log)
    motions = []
    for name in args.motions:
        source = args.work / "motions" / f"{ROBOT}_{name}.yaml"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(G1_MOTIONS[name], encoding="utf-8")
        motion = source.with_suffix(".npz")
        step(f"author {name}", primebot("motion", "author", str(source), "--robot", ROBOT, "-o", str(motion)), log)
        step(f"validate {name}", primebot("motion", "validate", str(motion), "--robot", ROBOT), log)
        motions.append(motion)
    if args.stop_before_train:
        print(f"stopped before training; motions: {', '.join(map(str, motions))}")
        return 0
    rows = [bench_one(motion, args) for motion in motions]
    report(rows, None if args.no_video else args.work / "bench_robot.png", args.json,
           title="G1 (mjlab wheel), sim2sim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
