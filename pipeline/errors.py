"""Typed errors: each names the thing that is wrong and how to fix it (docs/architecture.md §8)."""

from __future__ import annotations

NOT_TRACKED_EXIT_CODE = 10
"""``primebot pipeline run`` exits with this when every stage finished but the policy does not track
its motion (the verdict, docs/tasks.md): a finished run is not a working policy."""
NOT_ROBUST_EXIT_CODE = 12
"""``primebot pipeline run`` exits with this when the policy tracks its motion but is not shown
ROBUST: the stress test found a standard perturbation it does not survive, or did not run
(docs/deploy.md, "Before you deploy")."""


class PrimebotError(Exception):
    """Base of every error primebot raises on purpose.

    ``exit_code`` is what the CLI exits with; the message is printed without a
    traceback (``--debug`` shows it).
    """

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.fix = fix
        super().__init__(message if fix is None else f"{message}\n  fix: {fix}")


class ConfigError(PrimebotError):
    """A configuration value, option or ``--set key=value`` is invalid."""

    exit_code = 2


class PluginError(PrimebotError):
    """A plugin failed to load or registered something invalid."""

    exit_code = 3


class RegistrationError(PluginError):
    """A plugin handed a registry something it cannot accept (bad type, duplicate name)."""


class UnknownNameError(PrimebotError, KeyError):
    """A robot, task, reward term, backend or stage name that nothing registered."""

    exit_code = 2

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DeviceUnavailableError(PrimebotError):
    """A device backend was asked for explicitly but cannot be used here."""

    exit_code = 4


class MotionError(PrimebotError):
    """A motion file is missing, unreadable or invalid."""

    exit_code = 5


class RobotError(PrimebotError):
    """A robot model or spec is inconsistent (missing joint, body, actuator...)."""

    exit_code = 5


class CheckpointError(PrimebotError):
    """A checkpoint is truncated, corrupt, foreign or carries executable payload."""

    exit_code = 6


OLDER_RUN_FIX = "retrain the run with this primebot, or use the primebot that trained it"
"""The fix for a run file an older primebot wrote, without a field this one needs: no branch reads
the older formats."""


class CorruptCheckpointError(CheckpointError):
    """A checkpoint is damaged (empty, truncated, bit-flipped): the one failure that resume and
    evaluation step over to the previous good checkpoint. Any other checkpoint error (an I/O error,
    out of memory, a newer format, another run's file) stops with its reason (docs/architecture.md
    §3)."""


class NonFiniteError(PrimebotError):
    """NaN or Inf appeared in observations, rewards, losses, gradients or parameters."""

    exit_code = 7


class ExportError(PrimebotError):
    """An ONNX export failed its checks (graph, metadata, onnxruntime parity)."""

    exit_code = 8


class RenderError(PrimebotError):
    """Offscreen rendering is unavailable (no EGL/OSMesa) or a video could not be written."""

    exit_code = 9


class DiskFullError(PrimebotError):
    """A write failed because the file system is full (or the user's quota is used up)."""

    exit_code = 11
