"""The stress test of an exported policy: what it survives, beside replaying its reference with no
policy.

Torch-free like sim2sim (numpy, mujoco, onnxruntime): it reads the ONNX
file and the robot's MJCF only. From the same start frames it runs three
*controllers* under every perturbation cell (``deploy.perturbations``: a
family at one level, and ``nominal``):

- ``policy``: the exported policy (observations from sensed quantities,
  ``observation.DeployObservation``; targets by ``onnx_policy.joint_targets``);
- ``replay``: no policy, the reference's joint positions as the PD targets
  (for an export whose ``action_offset`` is the reference, a zero action);
- ``statue``: no policy, the start frame's joint positions held.

Every episode is a window of ``window_s`` seconds from its start frame (the
starts are spread evenly over the motion so that every window fits in it),
scored with the shared metrics (``evaluate.metrics``: the same failure
checks and errors as evaluation and sim2sim). Start *i* carries the same
push time and direction and encoder bias signs in every cell and for every
controller, so policy and replay are compared on identical disturbances. The
cells the verdict reads (``verdict_reads``) run ``standard_starts`` starts,
twice the graded levels' by default, and a standard cell whose policy success
is too near ``ROBUST_SUCCESS`` to tell (``undecided``) runs ``confirm_starts``
more (docs/deploy.md, "How many starts").

All episodes run side by side in one batch per physics rate
(``sim.physics.BatchSim``): the actuators are PD servos computing
τ = kp·(q* − q) − kd·q̇ clipped to the effort limit inside MuJoCo
(``joint_hal.setup_servo_loop``) at ``physics_hz`` (500 Hz by default: a joint
HAL's rate; sim2sim's 1 kHz torque loop runs one episode at a time).

The report (``stress.json``) gives, per cell and controller, the success
rate, MPKPE and failure causes, and the robustness verdict
(``robustness_verdict``): ROBUST when the policy's success is at least
``ROBUST_SUCCESS`` at every family's standard level, with a plain sentence
saying what the network adds over replaying the reference.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..evaluate.metrics import (
    summarise,
)
from ..evaluate.push_direction import by_push_direction, push_directions_line
from ..robot.statics import push_speed_unit
from ..rundir import EXPORT_DIR, STRESS_FILE, VIDEO_DIR
from ..success_rates import undecided
from .onnx_policy import (
    POLICY_KEYS,
    Sim2SimError,
    require_own_export,
)
from .perturbations import (
    FAMILIES,
    NOMINAL,
    Cell,
    cells,
    physics_hz_of,
)
from .robust_verdict import robustness_verdict
from .sim2sim import prepare
from .stress_episodes import CONTROLLERS, Episodes, draw_starts, run_group


@dataclass(frozen=True)
class StressPlan:
    """How big the stress test is."""

    starts: int = 16
    """Start frames per cell of a graded level; every controller runs each."""
    standard_starts: int | None = None
    """Start frames of each cell the verdict reads (every family's standard level, and nominal);
    None: twice ``starts``. The verdict's cells decide ROBUST at success 0.9, where one episode in
    16 is 0.06 (docs/deploy.md, "How many starts")."""
    confirm_starts: int | None = None
    """More start frames for a standard cell whose policy success cannot yet be told from 0.9
    (``undecided``); pooled with the first. None: three times ``standard_starts``; 0: none."""
    window_s: float = 4.0
    """Seconds per episode (less when the motion is shorter)."""
    physics_hz: float = 500.0
    """Physics and PD rate of every cell but the integrator family's."""
    families: tuple[str, ...] | None = None
    """Perturbation families (all when None)."""
    standard_only: bool = False
    """Only each family's standard levels (the verdict's; the quick preset's)."""
    seed: int = 1
    """Seed of the push times and directions, encoder biases and noise."""


def run_stress(onnx_path: str | Path, mjcf_path: str | Path, plan: StressPlan = StressPlan(),
               progress: bool = False, record_video_of: Cell | None = None) -> dict:
    """Run every cell × controller × start of ``plan`` and return the stress report.

    ``record_video_of``: a cell whose first start's policy and replay episodes keep their frames
    (``_frames`` in the returned dict, with ``_setup``), for a video; when the policy's first start
    succeeds and another fails, the first failing one is played again for its frames
    (``_frames["failure"]``; its start step in ``failure_video_start_step``).
    """
    t0 = time.perf_counter()
    setup = prepare(onnx_path, mjcf_path, plan.physics_hz, servo=True)
    failed = [c for c in setup.robot.checks if not c["ok"]]
    if failed:
        raise Sim2SimError("the policy and the robot model disagree: "
                           + "; ".join(f"{c['name']}: {c.get('detail', '')}" for c in failed),
                           fix="run primebot sim2sim on the run first; re-export the policy")
    meta, ref = setup.meta, setup.reference
    num_steps = ref["joint_pos"].shape[0]
    window = max(1, min(int(round(plan.window_s / setup.control_dt)), num_steps - 1))
    root = int(setup.index["root"][0])
    height = float(ref["body_pos_w"][:, root, 2].max())
    unit = push_speed_unit(height)
    rng = np.random.default_rng(plan.seed)
    # two sets of starts: the verdict's cells' and the graded levels' (the first indices of the
    # concatenated arrays are the verdict's)
    verdict_count = plan.standard_starts or 2 * plan.starts
    sets = [draw_starts(verdict_count, num_steps, window, len(meta["joint_names"]), rng),
            draw_starts(plan.starts, num_steps, window, len(meta["joint_names"]), rng)]
    starts = np.concatenate([steps for steps, _ in sets])
    per_start = {key: np.concatenate([draws[key] for _, draws in sets]) for key in sets[0][1]}
    plan_cells = cells(plan.families, plan.standard_only)
    timestep = 1.0 / plan.physics_hz
    # the integrator family's training rate: the physics step training ran (an override of the
    # MJCF's, task.physics_dt, travels in the metadata)
    model_timestep = float(meta.get("training_physics_dt") or _mjcf_timestep(mjcf_path))
    records: dict[tuple[Cell, str], list[dict]] = {}
    causes: dict[tuple[Cell, str], Counter] = {}
    frames: dict[str, list] = {}

    def at_rate(hz: float) -> None:
        substeps = max(1, int(round(setup.control_dt * hz)))
        setup.robot.model.opt.timestep = setup.control_dt / substeps

    def run(groups: dict[float, Episodes], starts, per_start, video: Cell | None) -> None:
        bar = _progress(sum(len(g.cells) for g in groups.values()) * window, progress)
        for hz, group in groups.items():
            at_rate(hz)
            for cell, controller, record in run_group(setup, group, starts, window, per_start,
                                                       unit, rng, video, frames, bar):
                records.setdefault((cell, controller), []).append(record)
                causes.setdefault((cell, controller), Counter())[record["failure"] or "none"] += 1
        if bar is not None:
            bar.close()

    def episodes_of(chosen, first_count) -> dict[float, Episodes]:
        groups: dict[float, Episodes] = {}
        for cell in chosen:
            group = groups.setdefault(physics_hz_of(cell, plan.physics_hz, model_timestep),
                                      Episodes())
            first, count = first_count(cell)
            for controller in CONTROLLERS:
                group.cells += [cell] * count
                group.controllers += [controller] * count
                group.start_index += range(first, first + count)
        return groups

    def first_count(cell: Cell) -> tuple[int, int]:
        """The first start index of ``cell``'s episodes and their count."""
        return (0, verdict_count) if verdict_reads(cell) else (verdict_count, plan.starts)

    run(episodes_of(plan_cells, first_count), starts, per_start, record_video_of)
    # a standard cell too near the threshold to tell: more starts, pooled with the first
    confirm_count = 3 * verdict_count if plan.confirm_starts is None else plan.confirm_starts
    confirmed = [cell for cell in plan_cells if cell.standard and undecided(
        [r["failure"] is None for r in records[(cell, "policy")]])] if confirm_count else []
    confirm_steps = np.zeros(0, np.int64)
    if confirmed:
        confirm_steps, confirm_draws = draw_starts(confirm_count, num_steps, window,
                                                    len(meta["joint_names"]), rng)
        run(episodes_of(confirmed, lambda cell: (0, confirm_count)), confirm_steps,
            confirm_draws, None)
    failure_step = None
    if record_video_of is not None:
        first, count = first_count(record_video_of)
        failed = [r["failure"] is not None for r in records[(record_video_of, "policy")][:count]]
        if not failed[0] and any(failed):
            # the same start, push and (for a push cell, noiseless) encoders: the same episode
            again, watch = {}, first + failed.index(True)
            at_rate(physics_hz_of(record_video_of, plan.physics_hz, model_timestep))
            run_group(setup, Episodes([record_video_of], ["policy"], [watch]), starts, window,
                       per_start, unit, rng, record_video_of, again, None, watch_start=watch)
            frames["failure"], failure_step = again["policy"], int(starts[watch])
    setup.robot.model.opt.timestep = timestep
    tracked = setup.index["tracked"]
    body_names = tuple(meta["body_names"][int(i)] for i in tracked)
    table = []
    for cell in plan_cells:
        row = {"family": cell.family, "level": cell.level, "label": cell.label(unit),
               "standard": cell.standard, "confirmed": cell in confirmed}
        for controller in CONTROLLERS:
            summary = summarise(records[(cell, controller)], setup.control_dt, body_names)
            row[controller] = _cell_figures(summary, causes[(cell, controller)])
            if cell.family == "push":
                row[controller]["by_direction"] = by_push_direction(records[(cell, controller)])
        table.append(row)
    report = {
        "onnx": str(onnx_path), "mjcf": str(mjcf_path),
        "policy": {key: meta.get(key) for key in (*POLICY_KEYS, "motion_sha256")},
        "plan": {**asdict(plan), "families": list(plan.families or FAMILIES)},
        "loop": {"physics_hz": plan.physics_hz, "policy_hz": 1.0 / setup.control_dt,
                 "actuation": "PD servos in MuJoCo: kp*(target-q) - kd*qd, clipped to effort",
                 "window_steps": window, "episodes": sum(len(v) for v in records.values())},
        "start_steps": [int(s) for s in starts[:verdict_count]],
        "graded_start_steps": [int(s) for s in starts[verdict_count:]],
        "confirmation_start_steps": [int(s) for s in confirm_steps],
        "reference_root_height_m": height, "push_unit_m_s": unit,
        "families": {name: {"description": f.description, "unit": f.unit,
                            "levels": [f.label(level, unit) for level in f.levels],
                            "standard": [f.label(level, unit) for level in f.standard]}
                     for name, f in FAMILIES.items() if name in (plan.families or FAMILIES)},
        "cells": table,
    }
    report["verdict"] = robustness_verdict(report)
    report["wall_s"] = time.perf_counter() - t0
    if record_video_of is not None:
        report["_frames"], report["_setup"] = frames, setup
        report["failure_video_start_step"] = failure_step
    return report


def verdict_reads(cell: Cell) -> bool:
    """Whether the verdict reads ``cell``: a family's standard level, or nominal (where replaying
    the reference must track for "needs no policy")."""
    return cell.standard or cell.family == NOMINAL


def _mjcf_timestep(mjcf_path: str | Path) -> float:
    import mujoco

    return mujoco.MjModel.from_xml_path(str(mjcf_path)).opt.timestep


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="stress", unit="env-step", unit_scale=True, leave=False)


def _cell_figures(summary: dict, causes: Counter) -> dict:
    keys = ("episodes", "success_rate", "fall_rate", "mpkpe_m", "statue_mpkpe_m",
            "joint_pos_error_rad",
            "mean_episode_length_s")
    # failure_times_s: where in the motion the failed episodes ended (the verdict names it)
    figures = {key: summary[key] for key in (*keys, "failure_times_s")
               if summary.get(key) is not None}
    figures["failures"] = {cause: count for cause, count in sorted(causes.items())
                           if cause != "none"}
    return figures


# -- a run directory ------------------------------------------------------------------------------
VIDEO_CELL = Cell("push", FAMILIES["push"].standard[0])
"""The cell the stress videos show: the standard push."""
STRESS_VIDEOS = ("stress_push.mp4", "stress_push_replay.mp4", "stress_push_failure.mp4")
"""In ``VIDEO_DIR``: the policy's and the replay's episode of ``VIDEO_CELL`` from its first start,
and the policy's first failed episode there when that start did not fail."""


def stress_run_dir(run_dir: str | Path, mjcf: str | Path, plan: StressPlan = StressPlan(), *,
                   video: bool = False,
                   progress: bool = False) -> dict:
    """The stress test of a run's export/policy.onnx on ``mjcf``: writes ``stress.json`` (and, with
    ``video``, ``videos/stress_push.mp4`` and ``videos/stress_push_replay.mp4``: the first start
    under the standard push, the policy and replaying the reference, each with the reference as a
    ghost; and ``videos/stress_push_failure.mp4``, the policy's first failed episode there, when
    the first start's did not fail)."""
    from ..atomic import atomic_write_text
    from .onnx_policy import load_policy
    from .planar import is_planar_policy

    run_dir = Path(run_dir)
    onnx_path = run_dir / EXPORT_DIR / "policy.onnx"
    if not onnx_path.is_file():
        raise Sim2SimError(f"{onnx_path} does not exist; export first: primebot export {run_dir}")
    meta = load_policy(onnx_path)[1]
    require_own_export(run_dir, onnx_path, meta)
    if is_planar_policy(meta):
        raise Sim2SimError(f"{onnx_path} tracks no reference motion: the stress test compares a "
                           "motion-tracking "
                           "policy with replaying its reference",
                           fix="run it on a motion-tracking run")
    wants_video = video and (plan.families is None or "push" in plan.families)
    report = run_stress(onnx_path, mjcf, plan, progress=progress,
                        record_video_of=VIDEO_CELL if wants_video else None)
    frames, setup = report.pop("_frames", {}), report.pop("_setup", None)
    if frames:
        from .sim2sim import render_episode

        videos = {}
        push = f"stress: push {VIDEO_CELL.label(report['push_unit_m_s'])}"
        failed_from = (report["failure_video_start_step"] or 0) * setup.control_dt
        titles = {"policy": f"{push}, policy", "replay": f"{push}, replay",
                  "failure": f"{push}, policy, a failed episode (from {failed_from:.1f} s)"}
        for (controller, title), name in zip(titles.items(), STRESS_VIDEOS, strict=True):
            if controller in frames:
                path = render_episode(setup, frames[controller], run_dir / VIDEO_DIR / name,
                                      title=title)
                if path is not None:
                    videos[controller] = str(path)
        if videos:
            report["videos"] = videos
    atomic_write_text(run_dir / STRESS_FILE, json.dumps(report, indent=2))
    # an earlier stress test's videos would otherwise pass for this one's
    for name in STRESS_VIDEOS:
        if not any(Path(v).name == name for v in report.get("videos", {}).values()):
            (run_dir / VIDEO_DIR / name).unlink(missing_ok=True)
    return report


def stage_summary(report: dict) -> tuple[dict, str]:
    """(summary, message) of a stress report as the stress stage records them in pipeline.json (and
    ``primebot stress`` on a pipeline run does too): the ROBUST verdict, what replaying the
    reference does, the standard push."""
    verdict = report["verdict"]
    push = next((row for row in report["cells"] if row["standard"] and row["family"] == "push"),
                None)
    summary = {"robust": verdict["robust"], "robust_reason": verdict["reason"],
               "stress_sentence": verdict["sentence"],
               "replay_does_as_well": verdict["replay_does_as_well"],
               "episodes": report["loop"]["episodes"]}
    if push is not None:
        summary.update(push_m_s=round(push["level"] * report["push_unit_m_s"], 3),
                       push_success_policy=push["policy"]["success_rate"],
                       push_success_replay=push["replay"]["success_rate"],
                       push_success_by_direction={
                           name: figures["success_rate"]
                           for name, figures in push["policy"].get("by_direction", {}).items()})
    return summary, f"{verdict['label'].upper()}: {verdict['reason']}"


def format_table(report: dict) -> str:
    """The stress report as a text table: per cell, each controller's success and MPKPE."""
    lines = [f"{'family':<11} {'level':<13} {'std':<3} "
             + " ".join(f"{c:>15}" for c in CONTROLLERS)]
    for row in report["cells"]:
        figures = []
        for controller in CONTROLLERS:
            c = row[controller]
            figures.append(f"{c['success_rate']:>5.2f} "
                           f"{1000 * c.get('mpkpe_m', float('nan')):>6.1f}mm")
        mark = ("*+" if row.get("confirmed") else "*") if row["standard"] else ""
        lines.append(f"{row['family']:<11} {row['label']:<13} {mark:<3} "
                     + " ".join(f"{f:>15}" for f in figures))
    directions = push_directions_line(report)
    if directions:
        lines.append(directions)
    confirmed = [r for r in report["cells"] if r.get("confirmed")]
    if confirmed:
        lines.append(f"*+ too near {report['verdict']['min_success_rate']:.1f} to call at first: "
                     f"{confirmed[0]['policy']['episodes']} starts")
    verdict = report["verdict"]
    lines.append(f"{verdict['label'].upper()}: {verdict['reason']}")
    lines.append(verdict["sentence"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m primebot.pipeline.deploy.stress POLICY.onnx ROBOT.xml``: the torch-free stress
    test."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("onnx")
    parser.add_argument("mjcf")
    parser.add_argument("--starts", type=int, default=StressPlan.starts,
                        help="start frames per cell of a graded level")
    parser.add_argument("--standard-starts", type=int,
                        help="start frames per cell the verdict reads (default: twice --starts)")
    parser.add_argument("--confirm-starts", type=int,
                        help="more starts for a standard cell too near 0.9 to call (default: three "
                             "times --standard-starts; 0: none)")
    parser.add_argument("--window", type=float, default=StressPlan.window_s,
                        help="seconds per episode")
    parser.add_argument("--family", action="append", choices=list(FAMILIES),
                        help="only these families")
    parser.add_argument("--seed", type=int, default=StressPlan.seed)
    parser.add_argument("--output", help="write the report here as JSON")
    args = parser.parse_args(argv)
    plan = StressPlan(starts=args.starts, standard_starts=args.standard_starts,
                      confirm_starts=args.confirm_starts, window_s=args.window,
                      families=tuple(args.family) if args.family else None, seed=args.seed)
    try:
        report = run_stress(args.onnx, args.mjcf, plan, progress=True)
    except Sim2SimError as exc:
        print(f"stress: error: {exc}", file=sys.stderr)
        return 2
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(format_table(report))
    return 0 if report["verdict"]["robust"] else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
