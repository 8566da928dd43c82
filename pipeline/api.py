"""The one module plugins import: all a plugin of primebot may rely on (docs/plugin_hooks.md).

The names below are the stable surface for third-party plugins; the modules
they come from may move between releases, this module keeps them. The
built-in plugins (``primebot.plugins``) import nothing else of the core, and
``tests/test_api.py`` keeps it so; ``GROUPS`` sorts the names by concern.

Importing this module does not import torch: the names that need the
training stack (``run_training``, ``evaluate_run``, ``export_run`` …) are
loaded the first time they are used, so registering plugins stays cheap and
``primebot --help`` stays fast (docs/architecture.md §1, "Heavy imports are late").
"""

# ruff: noqa: F401 - every import is a re-export: __all__ comes from GROUPS, which tests/test_api.py
# holds equal to what this module imports
from __future__ import annotations

import importlib
from typing import Any

from .atomic import atomic_path, atomic_write_text
from .cli import pass_host
from .deploy.perturbations import ServoCommand
from .devices.backend import Availability, Backend, ResolvedDevice
from .errors import (
    NOT_ROBUST_EXIT_CODE,
    NOT_TRACKED_EXIT_CODE,
    CheckpointError,
    ConfigError,
    DeviceUnavailableError,
    DiskFullError,
    ExportError,
    MotionError,
    NonFiniteError,
    PluginError,
    PrimebotError,
    RegistrationError,
    RenderError,
    RobotError,
    UnknownNameError,
)
from .evaluate.metrics import TrackingSnapshot
from .evaluate.push_direction import PUSH_DIRECTIONS, push_sector
from .evaluate.view import TrackingView
from .hooks.specs import hookimpl
from .motion.format import Motion, file_sha256, load_motion, save_motion
from .motion.inverse_dynamics import motion_torques, servo_feedforward
from .registry import Register, Registry
from .report.page import headline_metrics
from .report.tables import metrics_headline, metrics_summary
from .robot.mirror import JointMirror, joint_mirror
from .robot.model import (
    RobotIndices,
    apply_spec_actuators,
    compile_mjcf,
    load_robot_model,
    robot_indices,
)
from .robot.model_checks import check_robot_model
from .robot.spec import RobotSpec, get_robot, pd_gains
from .robot.statics import push_rate_unit, push_speed_unit
from .rotations import (
    cross,
    matrix_first_two_columns,
    quat_apply,
    quat_apply_inverse,
    quat_conjugate,
    quat_error_magnitude,
    quat_from_axis_angle,
    quat_from_euler_xyz,
    quat_mul,
    quat_mul_about_z,
    quat_normalize,
    quat_slerp,
    quat_to_matrix,
    quat_to_rotvec,
    rotate_about_z,
    subtract_frame_transforms,
    yaw_angle,
    yaw_quat,
)
from .rundir import (
    ARGS_FILE,
    BEST_CHECKPOINT,
    CSV_FILE,
    CURVE_FILE,
    EVAL_FILE,
    EXPORT_DIR,
    SIM2SIM_FILE,
    STRESS_FILE,
    motion_copy_name,
    read_args,
)
from .sim.env import StepResult, VecEnv
from .sim.observation_terms import (
    MIRROR_KINDS,
    ObservationGroup,
    ObservationLayout,
    ObservationSlot,
    ObservationTerm,
    appended_noise,
    appended_slots,
    with_history,
)
from .sim.physics import STAGE_NONE, STAGE_VEL, BatchSim, available_cores
from .sim.rewards import RewardManager, RewardTerm
from .sim.task import (
    ACTION_OFFSET_DEFAULT,
    ACTION_OFFSET_REFERENCE,
    ACTION_OFFSET_SERVO_TARGET,
    ACTION_TARGET_FORMULA,
    EXPORT_MOTION_TRACKING,
    EXPORT_POLICY,
    EpisodeRecord,
    PlaySettings,
    TaskExport,
    TaskSpec,
    merge_settings,
    metadata_threshold,
)
from .sim.termination_terms import TerminationManager, TerminationTerm
from .stages.contract import Stage, StageContext, StageInterrupted, StageResult, StageSkipped
from .stages.presets import longer_budget

LAZY: dict[str, tuple[str, str]] = {
    # training (torch)
    "TrainRequest": ("train.session", "TrainRequest"),
    "run_training": ("train.session", "run_training"),
    "shutdown_distributed": ("train.distributed", "shutdown_distributed"),
    "numbered_checkpoints": ("train.checkpoints", "numbered_checkpoints"),
    "probe_device": ("devices.probe", "probe"),
    # the motion's checks and its video
    "validate_motion_file": ("motion.validate", "validate_motion_file"),
    "replay_video": ("motion.replay", "replay_video"),
    # the trained policy: evaluation, export, sim2sim
    "evaluate_run": ("evaluate.evaluate_run", "evaluate_run"),
    "VerdictProbe": ("evaluate.evaluate_run", "VerdictProbe"),
    "export_run": ("export.export_run", "export_run"),
    "EXPORT_REPORT_FILE": ("export.export_run", "REPORT_FILE"),
    "sim2sim_run_dir": ("deploy.sim2sim", "sim2sim_run_dir"),
    "require_checks_passed": ("deploy.sim2sim", "require_checks_passed"),
    "stress_run_dir": ("deploy.stress", "stress_run_dir"),
    "stress_stage_summary": ("deploy.stress", "stage_summary"),
    "StressPlan": ("deploy.stress", "StressPlan"),
    # videos (mujoco's renderer)
    "reference_ghosts": ("render.ghost", "reference_ghosts"),
    "render_ghost_video": ("render.ghost", "render_ghost_video"),
}
"""Names loaded on first use: ``api.NAME`` → (module under ``primebot.pipeline``, attribute)."""


def __getattr__(name: str) -> Any:
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = LAZY[name]
    # Not cached here: the attribute is looked up in its module at every use.
    return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)


def __dir__() -> list[str]:
    return sorted([*__all__, *LAZY])


GROUPS: dict[str, tuple[str, ...]] = {
    # the typed errors and exit codes (docs/architecture.md §8)
    "errors": (
        "PrimebotError", "ConfigError", "PluginError", "RegistrationError", "UnknownNameError",
        "DeviceUnavailableError", "MotionError", "RobotError", "CheckpointError", "NonFiniteError",
        "ExportError", "RenderError", "DiskFullError", "NOT_TRACKED_EXIT_CODE",
        "NOT_ROBUST_EXIT_CODE",
    ),
    # registration: the hook marker, the registry, a command's plugin host
    "hooks": (
        "hookimpl", "Register", "Registry", "pass_host",
    ),
    "robots": (
        "RobotSpec", "RobotIndices", "get_robot", "load_robot_model", "robot_indices",
        "compile_mjcf", "check_robot_model", "apply_spec_actuators", "pd_gains", "JointMirror",
        "joint_mirror",
    ),
    "motions": (
        "Motion", "load_motion", "save_motion", "file_sha256", "validate_motion_file",
        "replay_video", "motion_torques", "servo_feedforward",
    ),
    # tasks and their environments
    "tasks": (
        "TaskSpec", "PlaySettings", "merge_settings", "TaskExport", "TrackingView",
        "TrackingSnapshot", "metadata_threshold", "EpisodeRecord", "VecEnv", "StepResult",
        "BatchSim", "STAGE_NONE", "STAGE_VEL", "available_cores", "ACTION_OFFSET_DEFAULT",
        "ACTION_OFFSET_REFERENCE", "ACTION_OFFSET_SERVO_TARGET", "ACTION_TARGET_FORMULA",
        "EXPORT_MOTION_TRACKING",
        "EXPORT_POLICY",
    ),
    # observation, reward and termination terms
    "terms": (
        "ObservationTerm", "ObservationSlot", "ObservationLayout", "ObservationGroup",
        "MIRROR_KINDS", "appended_noise", "appended_slots", "with_history", "RewardTerm",
        "RewardManager", "TerminationTerm", "TerminationManager",
    ),
    "devices": (
        "Backend", "Availability", "ResolvedDevice", "probe_device",
    ),
    "training": (
        "TrainRequest", "run_training", "shutdown_distributed", "numbered_checkpoints",
    ),
    "evaluation": (
        "evaluate_run", "VerdictProbe",
    ),
    # export, sim2sim and the stress test
    "deploy": (
        "export_run", "EXPORT_REPORT_FILE", "sim2sim_run_dir", "require_checks_passed",
        "stress_run_dir", "stress_stage_summary", "StressPlan", "ServoCommand", "push_rate_unit",
        "push_speed_unit", "PUSH_DIRECTIONS", "push_sector",
    ),
    "stages": (
        "Stage", "StageContext", "StageResult", "StageSkipped", "StageInterrupted",
        "longer_budget",
    ),
    "report": (
        "headline_metrics", "metrics_headline", "metrics_summary",
    ),
    "videos": (
        "reference_ghosts", "render_ghost_video",
    ),
    # the run directory's files, atomic writes
    "run files": (
        "read_args", "motion_copy_name", "atomic_path", "atomic_write_text", "ARGS_FILE",
        "CSV_FILE", "CURVE_FILE", "BEST_CHECKPOINT", "EVAL_FILE", "SIM2SIM_FILE", "STRESS_FILE",
        "EXPORT_DIR",
    ),
    # w x y z quaternions, numpy
    "rotations": (
        "quat_mul", "quat_conjugate", "quat_normalize", "quat_apply", "quat_apply_inverse",
        "quat_to_matrix", "matrix_first_two_columns", "quat_error_magnitude",
        "quat_from_axis_angle", "quat_from_euler_xyz", "quat_slerp", "quat_to_rotvec",
        "quat_mul_about_z", "rotate_about_z", "yaw_angle", "yaw_quat", "subtract_frame_transforms",
        "cross",
    ),
}
"""Every name of the API by concern, eager and ``LAZY`` alike: each in exactly one group, and
docs/plugin_hooks.md shows the same table (tests/test_api.py)."""

# The names imported above; ``LAZY`` adds those loaded on first use (not part of ``import *``).
__all__ = [name for names in GROUPS.values() for name in names if name not in LAZY]
