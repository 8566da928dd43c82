"""What the robot really does: the pipeline on every shipped motion, a table and a contact sheet.

    python tools/bench_motions.py                          # every motions/*.npz, default preset
    python tools/bench_motions.py squat march --preset quick
    python tools/bench_motions.py wave --iterations 2 --num-envs 8 --eval-episodes 1   # a smoke run

Each motion runs ``primebot pipeline run`` in its own process (so one
motion's crash or exit status does not stop the others) under
``--log-dir``. The table has, per motion, sim2sim's statue MPKPE (a robot
frozen at each episode's start frame), the policy's MPKPE, the fraction of
the statue's error it removes, the success rate, the verdict (docs/tasks.md,
"What tracked means"), the stress test's verdict (ROBUST or not; the standard
levels the policy and replaying the reference survive; both success rates
under the standard push; docs/deploy.md, "Before you deploy"), and the
training and total wall-clock. The contact
sheet (``--sheet``, default ``<log-dir>/bench_motions.png``) shows five
stills of each sim2sim video, the robot with its reference as a ghost, so a
person can see what each policy does. ``--json`` keeps the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from primebot.pipeline.report.compare import strength_by_iteration
from primebot.pipeline.rundir import read_result
from primebot.pipeline.train.log import complete_rows

REPO = Path(__file__).resolve().parents[1]
MOTIONS = REPO / "motions"


def _run_dir(log_dir: Path, name: str) -> Path | None:
    runs = sorted((log_dir / name).glob("*/pipeline.json"))
    return runs[-1].parent if runs else None


def _read(path: Path) -> dict:
    return read_result(path) or {}


def bench_one(motion: Path, args: argparse.Namespace) -> dict:
    """Run the pipeline on ``motion``; return its row (figures from pipeline.json and
    sim2sim.json)."""
    command = [sys.executable, "-m", "primebot.pipeline", "pipeline", "run", str(motion),
               "--preset", args.preset, "--log-dir", str(args.log_dir), "--run-name", motion.stem]
    for flag in ("iterations", "num_envs", "eval_episodes"):
        value = getattr(args, flag)
        if value is not None:
            command += [f"--{flag.replace('_', '-')}", str(value)]
    for item in args.set or []:
        command += ["--set", item]
    if args.no_video:
        command.append("--no-video")
    start = time.perf_counter()
    log_path = args.log_dir / f"{motion.stem}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                               env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
    wall = time.perf_counter() - start
    row = {"motion": motion.stem, "exit_code": code, "total_s": wall, "log": str(log_path)}
    run_dir = _run_dir(args.log_dir, motion.stem)
    return row if run_dir is None else {**row, **run_figures(run_dir)}


def run_figures(run_dir: Path) -> dict:
    """A pipeline run's row figures: training minutes, sim2sim's verdict and errors, the policy
    evaluated (its iteration and the randomisation strength it trained under), the sim2sim video."""
    row: dict = {"run_dir": str(run_dir)}
    stages = {s["name"]: s for s in _read(run_dir / "pipeline.json").get("stages", [])}
    row["train_s"] = (stages.get("train") or {}).get("total_s")
    sim = _read(run_dir / "sim2sim.json").get("overall") or {}
    verdict = sim.get("verdict") or {}
    row.update({key: sim.get(key)
                for key in ("statue_mpkpe_m", "mpkpe_m", "fraction_removed", "success_rate",
                                              "joint_pos_error_rad", "worst_body")})
    row["tracked"] = verdict.get("tracked")
    row["reason"] = verdict.get("reason", "")
    row["policy_iteration"] = _read(run_dir / "eval.json").get("iteration")
    row["strength"] = _strength_at(run_dir / "train.csv", row["policy_iteration"])
    video = run_dir / "videos" / "sim2sim.mp4"
    row["video"] = str(video) if video.is_file() else None
    stress = _read(run_dir / "stress.json")
    robustness = stress.get("verdict") or {}
    row["robust"] = robustness.get("robust")
    row["replay_does_as_well"] = robustness.get("replay_does_as_well")
    row["robust_reason"] = robustness.get("reason", "")
    push = next((c for c in stress.get("cells", []) if c["standard"] and c["family"] == "push"),
                None)
    if push is not None:
        row["push"] = push["label"]
        row["push_policy"], row["push_replay"] = (
            push["policy"]["success_rate"],
            push["replay"]["success_rate"],
        )
    standard = [c for c in stress.get("cells", []) if c["standard"]]
    if standard:
        row["standard_survived"] = (sum(c["policy"]["success_rate"] >= 0.9 for c in standard),
                                    sum(c["replay"]["success_rate"] >= 0.9 for c in standard),
                                    len(standard))
    return row


def _strength_at(csv_path: Path, iteration) -> float | None:
    """The randomisation strength the policy of ``iteration`` trained under (train.csv), if
    logged."""
    if not csv_path.is_file() or not isinstance(iteration, int):
        return None
    return strength_by_iteration(complete_rows(csv_path)[1]).get(iteration)


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _minutes(seconds) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f} min"


def print_table(rows: list[dict]) -> None:
    header = (f"{'motion':<8} {'statue':>8} {'MPKPE':>8} {'removed':>8} {'success':>8} "
              f"{'verdict':<12} "
              f"{'robust':<10} {'std. levels':>11} {'push':>9} {'policy/replay':>13} "
              f"{'train':>9} {'total':>9} {'policy':>6} {'rand.':>5}  worst body")
    print(header)
    print("-" * len(header))
    for r in rows:
        verdict = {True: "TRACKED", False: "not tracked"}.get(r.get("tracked"),
                                                              f"exit {r['exit_code']}")
        robust = {True: "ROBUST", False: "not robust"}.get(r.get("robust"), "-")
        levels = "{}/{} ({})".format(*r["standard_survived"][::2], r["standard_survived"][1]) \
            if r.get("standard_survived") else "-"
        push = (f"{_fmt(r.get('push_policy'), '.2f')}/{_fmt(r.get('push_replay'), '.2f')}"
                if r.get("push") else "-")
        print(f"{r['motion']:<8} {_fmt(r.get('statue_mpkpe_m'), '.3f'):>8} "
              f"{_fmt(r.get('mpkpe_m'), '.3f'):>8} "
              f"{_fmt(r.get('fraction_removed'), '.0%'):>8} "
              f"{_fmt(r.get('success_rate'), '.2f'):>8} {verdict:<12} "
              f"{robust:<10} {levels:>11} {r.get('push') or '-':>9} {push:>13} "
              f"{_minutes(r.get('train_s')):>9} {_minutes(r.get('total_s')):>9} "
              f"{_fmt(r.get('policy_iteration'), 'd'):>6} {_fmt(r.get('strength'), '.2f'):>5}  "
              f"{r.get('worst_body') or '-'}")
    tracked = sum(r.get("tracked") is True for r in rows)
    both = sum(r.get("tracked") is True and r.get("robust") is True for r in rows)
    print(f"\n{tracked}/{len(rows)} motions tracked, {both} tracked and robust (MPKPE in m, over "
          "the tracked bodies; "
          "statue = a robot frozen at each episode's start frame; verdict: docs/tasks.md; std. "
          "levels: the stress "
          "test's standard levels the policy survives of all (replaying the reference survives); "
          "push: the standard "
          "push, success of the policy/replaying the reference; policy: the iteration evaluated, "
          "rand.: the "
          "randomisation strength it trained under)")
    needless = [r["motion"] for r in rows if r.get("replay_does_as_well")]
    if needless:
        print(f"replaying the reference with no policy does as well on: {', '.join(needless)}")


def write_sheet(rows: list[dict], path: Path, title: str) -> Path:
    from primebot.pipeline.render.contact_sheet import video_stills, write_contact_sheet

    sheet_rows = []
    for r in rows:
        verdict = {True: "TRACKED", False: "NOT TRACKED"}.get(r.get("tracked"),
                                                              f"no verdict (exit {r['exit_code']})")
        label = (f"{r['motion']}: {verdict} · MPKPE {_fmt(r.get('mpkpe_m'), '.3f')} m vs statue "
                 f"{_fmt(r.get('statue_mpkpe_m'), '.3f')} m · success "
                 f"{_fmt(r.get('success_rate'), '.2f')}")
        sheet_rows.append((label, video_stills(r["video"]) if r.get("video") else []))
    return write_contact_sheet(sheet_rows, path, title=title)


def report(rows: list[dict], sheet: Path | None, json_path: Path | None, title: str) -> None:
    """The table, the contact sheet (unless ``sheet`` is None) and the rows as JSON (when
    ``json_path``)."""
    print()
    print_table(rows)
    if sheet is not None:
        print(f"contact sheet: {write_sheet(rows, sheet, title=title)}")
    if json_path:
        json_path.write_text(json.dumps(rows, indent=2), encoding="utf-8")


def motion_paths(names: list[str]) -> list[Path]:
    """``names`` as motion files: a name is motions/<name>.npz, a path ending in .npz itself; none:
    every shipped motion."""
    names = names or sorted(p.stem for p in MOTIONS.glob("*.npz"))
    return [Path(n) if n.endswith(".npz") else MOTIONS / f"{n}.npz" for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("motions", nargs="*",
                        help="motion names (motions/<name>.npz) or paths; default: all")
    parser.add_argument("--preset", default="default", help="pipeline preset (default: default)")
    parser.add_argument("--iterations", type=int, help="override the preset's PPO iterations")
    parser.add_argument("--num-envs", type=int, help="override the preset's training environments")
    parser.add_argument("--eval-episodes", type=int,
                        help="override the preset's evaluation episodes")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="training override (repeatable)")
    parser.add_argument("--log-dir", type=Path, default=REPO / "logs" / "bench_motions")
    parser.add_argument("--sheet", type=Path,
                        help="contact sheet PNG (default: <log-dir>/bench_motions.png)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--no-video", action="store_true",
                        help="no videos in the runs (minutes faster) and so no contact sheet: the "
                             "table only")
    args = parser.parse_args(argv)

    motions = motion_paths(args.motions)
    missing = [str(m) for m in motions if not m.is_file()]
    if missing:
        parser.error(f"no such motion: {', '.join(missing)}")
    rows = []
    for i, motion in enumerate(motions, start=1):
        print(f"[{i}/{len(motions)}] {motion.stem}: primebot pipeline run (log: "
              f"{args.log_dir / motion.stem}.log)",
              flush=True)
        row = bench_one(motion, args)
        rows.append(row)
        tracked = ("tracked" if row.get("tracked")
                   else "not tracked" if row.get("tracked") is False else "no verdict")
        print(f"      {_minutes(row['total_s'])}, exit {row['exit_code']}, {tracked}"
              f" {row.get('reason', '')}", flush=True)
    report(rows, None if args.no_video else args.sheet or args.log_dir / "bench_motions.png",
           args.json,
           title=f"sim2sim, preset {args.preset}: robot (solid) and reference (ghost)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
