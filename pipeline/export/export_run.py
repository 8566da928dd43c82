"""``primebot export``: a run's policy → the deploy bundle ``RUN_DIR/export/`` (docs/deploy.md).

The bundle: ``policy.onnx``; the robot model it was trained on, copied byte
for byte with its assets (``robot/``); the motion; ``deploy.yaml`` (every
metadata key, plus bodies and their roles, thresholds, rates, IMU frame and
the observation layout); ``README.md``; optionally ``policy_fp16.onnx``.
``python -m primebot.pipeline.bundle RUN_DIR/export`` runs it without torch.

The ONNX file is accepted only when onnxruntime (CPU) reproduces PyTorch
within ``PARITY_ATOL`` at batch 1 and batch 64 (batch 1 only for a static
batch) on observations recorded from rollouts of the policy in the run's own
task environment; otherwise nothing replaces ``policy.onnx``, the rejected
graph is kept as ``policy.rejected.onnx`` and an ``ExportError`` says by how
much they differ. The bundle is built in a staging directory and replaces
``export/`` as a whole only at the end (``atomic.atomic_directory``), so any
failure, a full disk or a kill included, leaves the previous bundle intact. The fp16 variant
(``fp16=True``) is accepted only when its actions are within ``FP16_ACTIONS_ATOL`` of the fp32
PyTorch policy, its reference outputs within ``PARITY_ATOL``, and a closed-loop sim2sim on the
bundled MJCF ends no more episodes in a fall than the fp32 file and tracks
as well (``closed_loop_gate``).

What is exported follows the task's ``TaskSpec.export_kind``: the tracking
policy with its reference motion inside (the motion file beside it), or, for
a task that tracks no motion (walk), the policy alone (input ``obs``, output
``actions``) with the same robot metadata and no motion. The task's
metadata keys and the motion in the graph come from its
``TaskSpec.export_metadata`` hook (``export.metadata``); the documents of
the bundle from ``export.document``. ``export_format``
``mjlab`` writes the reference's body axis for the tracked bodies only, with
a static batch of 1 and opset 18, as mjlab's tracking exporter does, and
actions relative to the default pose (``metadata.bake_action_offset``); the
mjlab metadata keys are written in both formats.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from ..atomic import atomic_directory, atomic_path, atomic_write_text, recover_directory
from ..deploy.deploy_bundle import DEPLOY_FILE, README_FILE, BundledModel, bundle_mjcf
from ..errors import ExportError
from ..motion.format import file_sha256
from ..registry import Registry
from ..rundir import EVAL_FILE, EXPORT_DIR, EXPORT_REPORT, motion_copy_name
from ..sim.task import EXPORT_MOTION_TRACKING, not_a_tracking_task
from ..train.provenance import identity_of
from ..train.trained_policy import TrainedPolicy, load_trained_policy, make_run_env
from .document import bundle_readme, deploy_document
from .graph import (
    OPSET,
    PARITY_ATOL,
    ActionPolicy,
    HalfActor,
    motion_at_control_rate,
    onnx_latency,
    parity,
    parity_failures,
    tracking_module,
    write_onnx,
)
from .metadata import bake_action_offset, policy_metadata, task_metadata

log = logging.getLogger(__name__)

ONNX_FILE = "policy.onnx"
FP16_ONNX_FILE = "policy_fp16.onnx"
REPORT_FILE = EXPORT_REPORT
PARITY_BATCHES = (1, 64)
EXPORT_FORMATS = ("primebot", "mjlab")
MJLAB_OPSET = 18
"""mjlab's tracking exporter: opset 18, a static batch of 1, the tracked bodies only."""
FP16_ACTIONS_ATOL = 0.05
"""fp16 actions may differ from the fp32 PyTorch policy's by this much (action units; × action_scale
in rad)."""
FP16_MPKPE_TOLERANCE_M = 0.01
"""Closed loop: the fp16 file's MPKPE may exceed the fp32 file's by this much (tracking)."""
FP16_SPEED_TOLERANCE_M_S = 0.05
"""Closed loop: the fp16 file's forward speed may differ from the fp32 file's by this much
(walk)."""
FP16_CLOSED_LOOP_STARTS = 8
"""At most this many start steps (eval.json's first ones) for the fp16 closed-loop check."""


@dataclass
class ExportResult:
    """What ``export_run`` wrote and measured."""

    onnx_path: Path
    deploy_path: Path
    motion_path: Path | None
    """The motion copied beside the ONNX; ``None`` for a policy that tracks no motion."""
    parity: dict[int, dict[str, float]]
    latency: dict[str, float]
    metadata: dict[str, Any] = field(default_factory=dict)
    mjcf: BundledModel | None = None
    fp16: dict[str, Any] | None = None
    """The fp16 variant's path, parity, closed-loop figures and latency (``None`` when not asked
    for)."""

    def max_difference(self) -> float:
        return max(max(d.values()) for d in self.parity.values())

    def _median_ms(self) -> float | None:
        median = self.latency.get("median_ms", self.latency.get("p50_ms"))
        return None if median is None else float(median)

    def summary(self) -> dict[str, Any]:
        """pipeline.json's summary of the export (the stage's, and ``primebot export`` on a pipeline
        run)."""
        summary: dict[str, Any] = {"parity_max_abs_diff": float(f"{self.max_difference():.3g}")}
        if self._median_ms() is not None:
            summary["onnx_latency_ms"] = round(self._median_ms(), 4)
        return summary

    def headline(self) -> str:
        median = self._median_ms()
        return (f"onnxruntime matches PyTorch (max |diff| {self.max_difference():.2e})"
                + (f", batch-1 latency {median:.3f} ms" if median is not None else ""))


def record_observations(env: Any, policy: TrainedPolicy, steps: int,
                        clock: Callable[[], np.ndarray]
                        | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Observations and reference steps [steps·N, O], [steps·N] met by the deterministic policy
    (steps ``None`` without a reference clock: ``clock()`` gives each env's reference step)."""
    obs, _ = env.reset()
    rows, times = [], []
    for _ in range(steps):
        rows.append(obs.copy())
        if clock is not None:
            times.append(np.asarray(clock()).copy())
        obs = env.step(policy.act(obs)).obs
    return np.concatenate(rows), (np.concatenate(times) if clock else None)


def export_run(
    registry: Registry,
    run_dir: str | Path,
    checkpoint: str | Path | None = None,
    *,
    num_envs: int = 64,
    rollout_steps: int = 6,
    atol: float = PARITY_ATOL,
    latency_repeats: int = 300,
    fp16: bool = False,
    static_batch: bool = False,
    export_format: str = "primebot",
) -> ExportResult:
    """Export the run's policy as a deploy bundle; raise ``ExportError`` (nothing replaced) when
    parity fails.

    ``fp16`` adds ``policy_fp16.onnx`` when it passes its gate (else ``ExportError``, the fp32
    bundle kept); ``static_batch`` fixes the batch axis at 1 (TensorRT without an optimisation
    profile); ``export_format="mjlab"``: the tracked bodies only on the body axis, static batch 1,
    opset 18.
    """
    if export_format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {export_format!r}",
                          fix=f"use one of {', '.join(EXPORT_FORMATS)}")
    mjlab = export_format == "mjlab"
    static_batch = static_batch or mjlab
    opset = MJLAB_OPSET if mjlab else OPSET
    run_dir = Path(run_dir)
    final_dir = run_dir / EXPORT_DIR
    recover_directory(final_dir)  # an export a crash cut off in its last step
    policy = load_trained_policy(run_dir, checkpoint)
    spec = registry.get("tasks", policy.config.task)
    tracking = spec.export_kind == EXPORT_MOTION_TRACKING
    if mjlab and not tracking:
        raise ExportError("--format mjlab is for tracking policies (mjlab's tracking deploy code)",
                          fix="export this policy without --format")
    if tracking and spec.export_metadata is None:
        raise not_a_tracking_task(spec.name)
    # Starts spread out (uniform start frames, reset noise): otherwise every env starts from the
    # same state and the parity check would see num_envs copies of one observation.
    env = make_run_env(registry, policy, num_envs, seed=policy.config.seed,
                       overrides=spec.play.spread)
    try:
        motion = policy.motion() if tracking else None
        arrays = motion_at_control_rate(motion, env.step_dt) if motion is not None else None
        clock = None
        if spec.export_metadata is not None:
            task = spec.export_metadata(env, motion, arrays, tracked_bodies_only=mjlab)
            metadata, arrays, clock = (
                task_metadata(env, policy, task),
                task.motion,
                task.reference_steps,
            )
            metadata = bake_action_offset(metadata) if mjlab else metadata
        else:
            metadata = policy_metadata(env, policy)
        mjcf_source = env.robot.mjcf
        obs, steps = record_observations(env, policy, rollout_steps, clock)
    finally:
        env.close()
    if tracking:
        modules = {
            "fp32": tracking_module(policy.actor, policy.obs_normalizer, arrays, metadata).eval()
        }
        if fp16:
            modules["fp16"] = tracking_module(
                HalfActor(policy.actor), policy.obs_normalizer, arrays, metadata
            ).eval()
    else:
        modules = {"fp32": ActionPolicy(policy.actor, policy.obs_normalizer).eval()}
        if fp16:
            modules["fp16"] = ActionPolicy(HalfActor(policy.actor), policy.obs_normalizer).eval()

    # The bundle is built in a staging directory and replaces export/ as a whole at the end: a
    # failure (a parity check, a full disk, a kill) leaves the previous bundle exactly as it was.
    with atomic_directory(final_dir) as out_dir:
        model = bundle_mjcf(mjcf_source, out_dir)
        metadata.update(robot_mjcf=model.file, robot_mjcf_sha256=model.sha256,
                        export_format=export_format,
                        precision="fp32")
        batches = (1,) if static_batch else PARITY_BATCHES
        onnx_path, report = _write_checked(modules["fp32"], out_dir, ONNX_FILE, policy.num_obs,
                                           metadata, obs,
                                           steps,
                                           {name: atol for name in modules["fp32"].output_names},
                                           batches,
                                           static_batch, opset, final_dir=final_dir)
        latency = onnx_latency(onnx_path, policy.num_obs, repeats=latency_repeats)
        files: dict[str, Any] = {"policy": {"file": ONNX_FILE, "sha256": file_sha256(onnx_path)},
                                 "mjcf": {"file": model.file, "sha256": model.sha256,
                                          "assets": model.assets,
                                          "assets_sha256": model.assets_sha256,
                                          "trained_from": model.source}}
        motion_copy = None
        if motion is not None:
            motion_copy = out_dir / motion_copy_name(Path(str(motion.source)).name)
            with atomic_path(motion_copy) as tmp:
                shutil.copyfile(motion.source, tmp)
            files["motion"] = {"file": motion_copy.name, "sha256": metadata["motion_sha256"],
                               "steps": int(metadata["motion_num_steps"]),
                               "duration_s": round((int(metadata["motion_num_steps"]) - 1)
                                                   * float(metadata["control_dt"]), 9)}
        start_steps = _eval_start_steps(run_dir)
        fp16_result, fp16_error = None, None
        if fp16:
            try:
                fp16_result = _export_fp16(modules["fp16"], modules["fp32"], out_dir, onnx_path,
                                           model,
                                           policy.num_obs, {**metadata, "precision": "fp16"}, obs,
                                           steps, batches,
                                           static_batch, opset,
                                           start_steps[:FP16_CLOSED_LOOP_STARTS],
                                           latency_repeats, final_dir)
                files["policy_fp16"] = {"file": FP16_ONNX_FILE,
                                        "sha256": file_sha256(fp16_result["path"]),
                                        "actions_atol": FP16_ACTIONS_ATOL}
            except ExportError as exc:  # the fp32 bundle is still written, then the error raised
                fp16_error = exc
        document = deploy_document(metadata, files, static_batch=static_batch, opset=opset,
                                   export_format=export_format, start_steps=start_steps)
        atomic_write_text(out_dir / DEPLOY_FILE,
                          yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
        atomic_write_text(out_dir / README_FILE, bundle_readme(document))
        final_fp16 = None if fp16_result is None else {**fp16_result,
                                                       "path": final_dir / FP16_ONNX_FILE}
        atomic_write_text(out_dir / REPORT_FILE, json.dumps({
            "onnx": str(final_dir / ONNX_FILE), "checkpoint": str(policy.checkpoint),
            "iteration": policy.iteration,
            # what the bundle was made from (train/provenance.py)
            "policy": identity_of(policy).to_dict(),
            "export_format": export_format, "static_batch": static_batch, "opset": opset,
            "parity_atol": atol, "parity_max_abs_diff": {str(b): d for b, d in report.items()},
            "parity_observations": int(len(obs)), "latency_batch1_onnxruntime_cpu": latency,
            "size_bytes": onnx_path.stat().st_size,
            "fp16": None if final_fp16 is None
            else {k: v for k, v in final_fp16.items() if k != "path"}
            | {"onnx": str(final_fp16["path"])},
            "bundle_bytes_without_this_file": sum(p.stat().st_size for p in out_dir.rglob("*")
                                                  if p.is_file() and p.name != REPORT_FILE
                                                  and ".rejected." not in p.name),
        }, indent=2, default=float))
    if fp16_error is not None:
        raise fp16_error
    return ExportResult(final_dir / ONNX_FILE, final_dir / DEPLOY_FILE,
                        None if motion_copy is None else final_dir / motion_copy.name, report,
                        latency, metadata,
                        model, final_fp16)


def _eval_start_steps(run_dir: Path) -> list[int]:
    """eval.json's start steps (the ones ``primebot sim2sim`` replays), ``[0]`` without an
    evaluation."""
    from ..deploy.sim2sim import eval_start_steps

    path = run_dir / EVAL_FILE
    return eval_start_steps(json.loads(path.read_text(encoding="utf-8")) if path.is_file()
                            else None)


def _write_checked(module: torch.nn.Module, out_dir: Path, name: str, num_obs: int,
                   metadata: dict[str, Any],
                   obs: np.ndarray, steps: np.ndarray | None, atol: dict[str, float],
                   batches: tuple[int, ...],
                   static_batch: bool, opset: int, reference: torch.nn.Module | None = None,
                   final_dir: Path | None = None) -> tuple[Path, dict[int, dict[str, float]]]:
    """Write ``out_dir/name`` only if onnxruntime reproduces ``reference`` (default ``module``) on
    ``obs`` at ``batches`` within ``atol`` per output; otherwise keep it as ``<stem>.rejected.onnx``
    in ``final_dir`` (the bundle ``out_dir`` is being built for; default ``out_dir``) and raise."""
    stem = Path(name).stem
    final_dir = final_dir or out_dir
    candidate = write_onnx(module, out_dir / f".{stem}.candidate.onnx", num_obs, metadata,
                           static_batch=static_batch, opset=opset)
    report = parity(reference or module, candidate, obs, steps, batches)
    failures = [line for output, limit in atol.items()
                for line in parity_failures({b: {output: d[output]} for b, d in report.items()},
                                            limit)]
    if failures:
        rejected = final_dir / f"{stem}.rejected.onnx"
        final_dir.mkdir(parents=True, exist_ok=True)
        shutil.move(candidate, rejected)
        raise ExportError(
            "onnxruntime does not reproduce PyTorch on recorded observations:\n    "
            + "\n    ".join(failures)
            + f"\n  the rejected graph is {rejected}; {final_dir / name} was not replaced",
            fix="check for ops that differ between torch and onnxruntime (report it with the file)",
        )
    onnx_path = out_dir / name
    candidate.replace(onnx_path)
    return onnx_path, report


def closed_loop_gate(fp32: dict, fp16: dict) -> tuple[dict[str, Any], list[str]]:
    """Compare two sim2sim reports of the same starts: figures, and one line per way fp16 is worse.

    Tracking (groups ``from_start``/``sampled``): no higher fall rate, MPKPE at most
    ``FP16_MPKPE_TOLERANCE_M`` above fp32's. Walk (``episodes``): no higher fall rate, forward
    speed within ``FP16_SPEED_TOLERANCE_M_S``.
    """
    figures: dict[str, Any] = {}
    problems: list[str] = []
    keys = {"from_start": ("mpkpe_m", FP16_MPKPE_TOLERANCE_M),
            "sampled": ("mpkpe_m", FP16_MPKPE_TOLERANCE_M),
            "episodes": ("mean_forward_speed_m_s", FP16_SPEED_TOLERANCE_M_S)}
    for group, (metric, tolerance) in keys.items():
        if group not in fp32 or group not in fp16:
            continue
        a, b = fp32[group], fp16[group]
        figures[group] = {"fp32": {k: a.get(k) for k in ("fall_rate", "success_rate", metric)},
                          "fp16": {k: b.get(k) for k in ("fall_rate", "success_rate", metric)}}
        if not b["fall_rate"] <= a["fall_rate"]:
            problems.append(f"{group}: fp16 fall rate {b['fall_rate']:.3g} > fp32 "
                            f"{a['fall_rate']:.3g}")
        worse = b[metric] - a[metric] if metric == "mpkpe_m" else abs(b[metric] - a[metric])
        if not worse <= tolerance:
            problems.append(f"{group}: fp16 {metric} {b[metric]:.4g} vs fp32 {a[metric]:.4g} "
                            f"(tolerance {tolerance:g})")
    if not fp16.get("checks_passed", False):
        problems.append("the sim2sim checks fail on the fp16 file")
    return figures, problems


def _export_fp16(module: torch.nn.Module, reference: torch.nn.Module, out_dir: Path,
                 fp32_path: Path,
                 model: BundledModel, num_obs: int,
                 metadata: dict[str, Any], obs: np.ndarray, steps: np.ndarray | None,
                 batches: tuple[int, ...],
                 static_batch: bool, opset: int, start_steps: list[int], latency_repeats: int,
                 final_dir: Path) -> dict[str, Any]:
    """policy_fp16.onnx, accepted on parity with ``reference`` (the fp32 PyTorch policy) and on a
    closed-loop sim2sim against ``fp32_path`` on the bundled MJCF (``closed_loop_gate``)."""
    from ..deploy.sim2sim import run_policy_file

    atol = {name: (FP16_ACTIONS_ATOL if name == "actions" else PARITY_ATOL)
            for name in module.output_names}
    # a graph that fails parity is kept in the staging bundle: the fp32 bundle (with it) is still
    # swapped in
    path, report = _write_checked(module, out_dir, FP16_ONNX_FILE, num_obs, metadata, obs, steps,
                                  atol, batches,
                                  static_batch, opset, reference=reference)
    fp32_report, fp16_report = (run_policy_file(p, out_dir / model.file, start_steps)
                                for p in (fp32_path, path))
    figures, problems = closed_loop_gate(fp32_report, fp16_report)
    if problems:
        rejected = out_dir / "policy_fp16.rejected.onnx"
        path.replace(rejected)  # the fp32 bundle is swapped in with it
        raise ExportError("the fp16 policy fails its closed-loop check against the fp32 one:\n    "
                          + "\n    ".join(problems)
                          + f"\n  the rejected file is {final_dir / rejected.name}; "
                          "the fp32 bundle is kept",
                          fix="deploy policy.onnx (fp32), or export without --fp16")
    return {"path": path, "actions_atol": FP16_ACTIONS_ATOL,
            "parity_max_abs_diff": {str(b): d for b, d in report.items()},
            "closed_loop": {"start_steps": start_steps, **figures},
            "latency_batch1_onnxruntime_cpu": onnx_latency(path, num_obs, repeats=latency_repeats),
            "size_bytes": path.stat().st_size}
