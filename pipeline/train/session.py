"""A training session: from command-line settings to a finished (or resumable) run directory.

Used by ``primebot train`` and by anything that trains programmatically
(the pipeline stage). Resolves task, robot, motion and device from the
registry, resolves the settings (``resolve_config``: trainer and task defaults <
the task's trainer defaults < flags < the motion's own training overrides, limited
to what a motion may set < ``--set``), builds the environment and the runner, and
writes args.yaml.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import __version__
from ..devices.backend import Backend, ResolvedDevice, dtype_name, resolve_device
from ..errors import OLDER_RUN_FIX, ConfigError
from ..motion.format import load_motion
from ..motion.validate import require_valid_motion
from ..registry import Registry
from ..run_lock import run_dir_lock
from ..rundir import (
    ARGS_FILE,
    BEST_CHECKPOINT,
    CSV_FILE,
    CURVE_FILE,
    create_run_dir,
    new_run_id,
    read_args,
    read_run_id,
    write_args,
)
from ..sim.task import TaskSpec
from .checkpoints import interrupted_writes, load_latest_good, numbered_checkpoints
from .distributed import DistContext, context_from_env, init_distributed
from .on_policy_runner import OnPolicyRunner, RunResult
from .settings_layers import TrainRequest, resolve_config
from .time_budget import SHORT_TRAINING, short_training
from .train_config import (
    RESUMABLE_SETTINGS,
    TrainConfig,
    check_settings,
    parse_set,
    section_value,
    set_value,
)
from .verdict_checks import VerdictChecks

log = logging.getLogger(__name__)


def resolve_auto_settings(cfg: TrainConfig, backend: Backend) -> None:
    """Settle a new run's device-dependent ``auto`` settings (the mixed precision of the update and
    of the rollout, the learning epochs, the compiled update) in ``cfg``, which args.yaml then
    records, so that a resume reproduces them on any device."""
    resolve_mixed_precision(cfg, backend)
    device_type = torch.device(cfg.device).type
    epochs = cfg.ppo.num_learning_epochs
    cfg.ppo.num_learning_epochs = cfg.ppo.learning_epochs(device_type)
    if epochs == "auto":
        log.info("learning epochs: %d (auto on %s)", cfg.ppo.num_learning_epochs, cfg.device)
    for line in cfg.ppo.settle_auto_switches(device_type, cfg.num_envs):
        log.info(line)


def resolve_mixed_precision(cfg: TrainConfig, backend: Backend) -> str:
    """Settle ``ppo.mixed_precision=auto`` for a new run: ``on`` where the backend runs its autocast
    dtype natively (an accelerator, a CPU with bf16 instructions), else ``off``. The settled value
    is what args.yaml records, so a resume reproduces it. Returns why, for the log."""
    mode = cfg.ppo.mixed_precision
    if mode != "auto":
        return f"{mode} (set)"
    native = backend.native_autocast()
    cfg.ppo.mixed_precision = "on" if native else "off"
    dtype = dtype_name(backend.autocast_dtype())
    why = f"{dtype} in the update (auto: native on {backend.name}: {native})" if native else \
        f"off (auto: {backend.name} has no native {dtype})"
    log.info("mixed precision: %s", why)
    return why


def _device_for_rank(resolved: ResolvedDevice, ctx: DistContext) -> ResolvedDevice:
    if not ctx.enabled or resolved.backend.name == "cpu":
        return resolved
    # One accelerator per rank: torchrun's LOCAL_RANK picks it.
    device = ResolvedDevice(resolved.backend, ctx.local_rank, f"{resolved.source} + LOCAL_RANK")
    set_device = getattr(getattr(torch, resolved.backend.name, None), "set_device", None)
    if set_device is not None:
        set_device(device.torch_device)
    return device


def require_task_config_version(run_dir: Path, spec: TaskSpec) -> None:
    """Refuse to resume a run recorded under another version of its task's settings
    (``TaskSpec.config_version``): its args.yaml would be read as settings it did not train with."""
    recorded = (read_args(run_dir).get("run") or {}).get("task_config_version", 1)
    if recorded != spec.config_version:
        raise ConfigError(
            f"{run_dir}/{ARGS_FILE} records version {recorded} of task {spec.name!r}'s settings; "
            f"this primebot's {spec.name} reads version {spec.config_version}, where some recorded "
            "settings mean something else, so a resume would not continue the run it trained",
            fix=OLDER_RUN_FIX,
        )


def _resume_config(request: TrainRequest) -> tuple[TrainConfig, list[str]]:
    """The run's own configuration with the resume's changes applied, and those changes
    (``key=value``)."""
    changed = [name for name in ("task", "robot", "num_envs", "seed", "run_name")
               if getattr(request, name) is not None]
    if changed:
        raise ConfigError(
            f"--resume continues a run with its own settings; cannot change {', '.join(changed)}",
            fix="drop those options (only --iterations, --device, --tensorboard and --set of the "
                "optimisation "
                "settings apply on resume), or start a new run",
        )
    args = read_args(request.resume)
    try:
        cfg = TrainConfig.from_dict(args["config"])
    except (KeyError, TypeError) as exc:
        raise ConfigError(
            f"{request.resume}/args.yaml has no usable 'config' section: {exc}"
        ) from None
    if cfg.ppo.mixed_precision == "auto":  # a new run records the choice (resolve_auto_settings)
        raise ConfigError(
            f"{request.resume}/args.yaml records ppo.mixed_precision: auto, not the choice it "
            "trained with: an older primebot wrote it, and a resume could not reproduce the run",
            fix=OLDER_RUN_FIX,
        )
    try:
        pairs = parse_set(request.sets)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    refused = [key for key, _ in pairs if key not in RESUMABLE_SETTINGS]
    if refused:
        raise ConfigError(
            f"--resume cannot change {', '.join(refused)}: the checkpoint's networks, rollout and "
            "environment "
            "depend on it",
            fix=f"on resume --set may change {', '.join(RESUMABLE_SETTINGS)}; anything else needs "
                "a new run",
        )
    applied = []
    for key, value in pairs:
        try:
            set_value(cfg, key, value)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        applied.append(f"{key}={section_value(cfg, key)}")  # as set: a bare off is 'off', not False
    if request.iterations is not None:
        cfg.iterations = request.iterations
    check_settings(cfg)
    return cfg, applied


def _load_motion(path: str, robot: Any) -> Any:
    """The motion for training: fully validated against the robot (``require_valid_motion``), so an
    Inf, a 30 fps file or non-unit quaternions stop here, naming the file, key and frame."""
    if robot is None:
        return load_motion(path)
    return require_valid_motion(path, robot)


def _curriculum_warning(judged: str, checks: VerdictChecks, train_on: str) -> str:
    """The train stage's warning of a policy judged below the full randomisation: where no check
    tracked, the tracking is what to work on; where one did, the robustness."""
    if checks.best is not None and not checks.best_tracked:
        return (f"{judged} at {checks.best_progress:g} of the randomisation: no check tracked its "
                "motion, and the task's curriculum lowered the randomisation while none did "
                f"(train.csv: randomization/strength); {train_on} --iterations N trains on, and "
                "docs/tasks.md (\"When a motion does not track\") says what else to try")
    return (f"{judged} before the task's curriculum was complete: it has not felt the full "
            "randomisation (train.csv: randomization/strength), so expect it to be less robust to "
            f"pushes and model errors than configured; {train_on} --iterations N trains on, and "
            "docs/tasks.md (\"What to try when a motion is tracked but not robust\": calm envs) "
            "says what keeps a policy at full strength")


@dataclass
class TrainOutcome:
    """What ``run_training`` leaves behind."""

    result: RunResult
    run_dir: Path | None
    """The run directory (None on ranks > 0, which write nothing)."""
    runner: OnPolicyRunner
    """The trained runner (its learner holds the final weights; its ``train_on`` and
    ``longer_budget``, the caller's, word the advice)."""

    def describe(self) -> tuple[dict[str, str], dict[str, Any], str, list[str]]:
        """(outputs, summary, message, warnings) of a finished training, as the train stage records
        them in pipeline.json (and ``primebot train --resume`` on a pipeline run does too)."""
        result, runner, run_dir = self.result, self.runner, self.run_dir
        outputs = {"args": ARGS_FILE, "train.csv": CSV_FILE}
        for label, name in (("curves", CURVE_FILE), ("best", BEST_CHECKPOINT)):
            if run_dir is not None and (run_dir / name).is_file():
                outputs[label] = name
        if result.checkpoint is not None:
            outputs["final"] = Path(result.checkpoint).name
        returns = list(runner.episode_returns)
        summary: dict[str, Any] = {
            "device": runner.cfg.device,
            "iterations": result.iteration,
            "envs": runner.cfg.num_envs,
            "env_steps": result.iteration * runner.cfg.num_envs * runner.cfg.ppo.num_steps_per_env,
        }
        if returns:
            summary["episode_return"] = round(sum(returns) / len(returns), 3)
        if result.reason:
            summary["stopped"] = result.reason
        warnings = []
        # the policy the later stages judge: the last one, or the best checked one
        judged = "training ended"
        incomplete = not runner.env.curriculum_complete
        if runner.checks.best is not None:
            chosen = ("the top checks' best on fresh pushed episodes" if runner.checks.final_note
                      else "the best verdict check")
            summary["policy"] = (
                f"{BEST_CHECKPOINT} (iteration {runner.checks.best_iteration}, {chosen})"
            )
            if runner.checks.final_note:
                summary["final_choice"] = runner.checks.final_note
            judged = f"the policy evaluated and exported ({summary['policy']}) trained"
            incomplete = runner.checks.best_progress < 1.0
            robust_success = runner.checks.best_robust_success
            if robust_success is not None and robust_success < 1.0:
                summary["robust_success_rate"] = round(robust_success, 3)
        train_on = runner.train_on_command()
        if result.time_limited and result.iteration < SHORT_TRAINING * runner.cfg.iterations:
            warnings.append(short_training(runner.cfg, result.iteration, result.first_iteration,
                                           train_on, runner.longer_budget))
            summary["next_step"] = f"train on: {train_on}"
        if incomplete:
            summary["curriculum"] = "incomplete"
            summary.setdefault("next_step", f"train on: {train_on} --iterations N")
            warnings.append(_curriculum_warning(judged, runner.checks, train_on))
        message = (f"{result.iteration} iterations on {runner.cfg.device}"
                   + (f" (of at most {runner.cfg.iterations}: {result.reason})" if result.reason
                      else "")
                   + (f", episode return {summary['episode_return']:.2f}" if returns else "")
                   + (f"; the policy: {summary['policy']}" if "policy" in summary else ""))
        return outputs, summary, message, warnings


def run_training(registry: Registry, request: TrainRequest) -> TrainOutcome:
    """Train as ``request`` says. The process group (under torchrun) is left up for the caller."""
    # holds the run directory's lock (rank 0) until training ends
    with contextlib.ExitStack() as stack:
        if request.resume and context_from_env().is_main:  # rank 0 is the one that writes
            stack.enter_context(run_dir_lock(request.resume))  # before args.yaml is read
        return _run_training(registry, request, stack)


def _run_training(registry: Registry, request: TrainRequest,
                  stack: contextlib.ExitStack) -> TrainOutcome:
    overrides: list[str] = []
    if request.resume:
        cfg, overrides = _resume_config(request)
        motion_path = request.motion or cfg.motion
    else:
        cfg = None
        motion_path = request.motion
    resolved = resolve_device(registry, request.device or (cfg.device if cfg else None))
    ctx = init_distributed(resolved.backend.collective)
    resolved = _device_for_rank(resolved, ctx)
    if cfg is None:
        cfg = resolve_config(registry, request, resolved.torch_device)
        # a resume keeps the choices args.yaml recorded
        resolve_auto_settings(cfg, resolved.backend)
    cfg.device = resolved.torch_device

    spec = registry.get("tasks", cfg.task)
    if request.resume:
        require_task_config_version(Path(request.resume), spec)
    robot = registry.get("robots", cfg.robot) if cfg.robot else None
    motion = None
    if spec.needs_motion:
        if not motion_path:
            raise ConfigError(f"task {cfg.task!r} tracks a reference motion",
                              fix="primebot train MOTION.npz")
        motion = _load_motion(motion_path, robot)
        if request.resume and cfg.motion_sha256 and motion.sha256 != cfg.motion_sha256:
            raise ConfigError(
                f"motion {motion_path} differs from the one the run trained on (sha256 "
                f"{cfg.motion_sha256[:12]}…)",
                fix="pass the original motion file as MOTION",
            )
        cfg.motion, cfg.motion_sha256 = str(motion_path), motion.sha256

    env = spec.make_env(
        robot=robot, motion=motion, num_envs=cfg.num_envs, seed=cfg.seed + ctx.rank,
        config=cfg.task_config, registry=registry, num_threads=None,
    )
    probe = None
    try:
        if cfg.runner.check_interval > 0 and ctx.enabled:
            log.warning("runner.check_interval: no verdict checks under torchrun (evaluate after "
                        "training)")
        elif cfg.runner.check_interval > 0 and spec.verdict_probe is not None:
            probe = spec.verdict_probe(registry, cfg, motion, seed=cfg.seed + 1)
        runner = OnPolicyRunner(
            env, cfg, dist=ctx,
            autocast_dtype=resolved.backend.autocast_dtype(),
            tensorboard=request.tensorboard and ctx.is_main,
            progress=request.progress, probe=probe, train_on=request.train_on,
            longer_budget=request.longer_budget,
        )
        # The run directory appears only once the environment and the learner exist,
        # so a bad setting leaves no empty run behind.
        run_dir: Path | None = None
        if request.resume:
            run_dir = Path(request.resume)
        elif ctx.is_main and request.run_dir:
            run_dir = Path(request.run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
        elif ctx.is_main:
            default_name = Path(motion_path).stem if motion_path else cfg.task
            run_dir = create_run_dir(request.log_dir, request.run_name or default_name)
        runner.run_dir = run_dir if ctx.is_main else None
        if ctx.is_main and run_dir is not None and not request.resume:
            stack.enter_context(run_dir_lock(run_dir))
        history: list[dict[str, Any]] = []
        runner.run_id = (read_run_id(run_dir) if request.resume else None) or new_run_id()
        if request.resume:
            path, payload = load_latest_good(run_dir, map_location="cpu")
            runner.restore(payload, source=str(path))
            if runner.iteration > cfg.iterations:
                raise ConfigError(
                    f"{run_dir} is at iteration {runner.iteration} ({path.name}); --iterations "
                    f"{cfg.iterations} "
                    "would go back",
                    fix=f"resume with --iterations above {runner.iteration}, or evaluate the run "
                        "as it is",
                )
            if ctx.is_main:
                _keep_damaged_aside(run_dir, path)
                runner.reconcile_best()
            if overrides:
                _apply_overrides(runner, overrides, path.name)
            history = list(read_args(run_dir).get("resumes") or [])
            history.append({"from": path.name, "iteration": runner.iteration, "set": overrides,
                            "command": " ".join(sys.argv)})
            log.info("resuming %s from %s (iteration %d of %d)", run_dir, path.name,
                     runner.iteration, cfg.iterations)
        if ctx.is_main and run_dir is not None:
            # this process holds the run's lock: nobody is writing them
            for partial in interrupted_writes(run_dir):
                partial.unlink(missing_ok=True)
            write_args(run_dir, _args_document(cfg, resolved, ctx, history, runner.run_id,
                                               spec.config_version))
            log.info("run directory: %s", run_dir)
        result = runner.learn()
    finally:
        env.close()
        if probe is not None:
            probe.close()
    return TrainOutcome(result, run_dir if ctx.is_main else None, runner)


def _apply_overrides(runner: OnPolicyRunner, overrides: list[str], checkpoint: str) -> None:
    """Make the resume's ``--set`` changes take effect over the restored learner state."""
    cfg = runner.cfg
    if any(item.startswith("ppo.learning_rate=") for item in overrides):
        # the restored optimiser carries the learning rate it had reached; the override replaces it
        runner.ppo.learning_rate = cfg.ppo.learning_rate
        for group in runner.ppo.optimizer.param_groups:
            group["lr"] = cfg.ppo.learning_rate
    log.warning("resuming from %s with changed settings: %s (recorded in args.yaml)", checkpoint,
                ", ".join(overrides))


def _keep_damaged_aside(run_dir: Path, resumed_from: Path) -> None:
    """Rename the numbered checkpoints newer than ``resumed_from`` (``load_latest_good`` passed over
    them as damaged) to ``model_<it>.pt.corrupt``: training will write those iterations again, and
    the damaged files are kept for a look instead of being overwritten."""
    found = numbered_checkpoints(run_dir)
    resumed = next((it for it, path in found if path == resumed_from), None)
    for it, path in found:
        if resumed is None or it <= resumed:
            continue
        aside = path.with_name(path.name + ".corrupt")
        path.replace(aside)
        log.warning("warning: %s could not be resumed from; kept as %s (training writes that "
                    "iteration again)",
                    path.name, aside.name)


def _args_document(cfg: TrainConfig, device: ResolvedDevice, ctx: DistContext,
                   resumes: list[dict[str, Any]] | None = None,
                   run_id: str | None = None, task_config_version: int = 1) -> dict[str, Any]:
    document = {
        "config": cfg.to_dict(),
        "run": {
            # every checkpoint of the run carries it (evaluate and export refuse another run's)
            "id": run_id,
            "primebot_version": __version__,
            "torch_version": str(torch.__version__),
            "python": platform.python_version(),
            "device_source": device.source,
            # why ppo.mixed_precision=auto settled as config.ppo records (resolve_mixed_precision)
            "native_autocast": device.backend.native_autocast() or "none",
            "world_size": ctx.world_size,
            # what the task's settings above mean (TaskSpec.config_version): a resume checks it
            "task_config_version": task_config_version,
            "command": " ".join(sys.argv),
        },
    }
    if resumes:
        # each resume: the checkpoint it continued, its iteration, the settings it changed (--set),
        # the command
        document["resumes"] = resumes
    return document
