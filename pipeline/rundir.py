"""The run directory of docs/architecture.md §6: ``logs/<run-name>/<YYYY-mm-dd_HH-MM-SS>/`` and its
args.yaml."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from .atomic import atomic_write_text
from .errors import OLDER_RUN_FIX, ConfigError

# The names in a run directory (docs/architecture.md §6), each written here once.
PIPELINE_FILE = "pipeline.json"
LOG_FILE = "pipeline.log"
REPORT_FILE = "report.html"
ARGS_FILE = "args.yaml"
CSV_FILE = "train.csv"
CURVE_FILE = "train.png"
BEST_CHECKPOINT = "model_best.pt"
EVAL_FILE = "eval.json"
SIM2SIM_FILE = "sim2sim.json"
STRESS_FILE = "stress.json"
VIDEO_DIR = "videos"
EXPORT_DIR = "export"
EXPORT_REPORT = "export.json"
"""In ``EXPORT_DIR``: what the export measured and which policy it holds."""
MOTION_SUFFIX = ".npz"


def motion_copy_name(name: str) -> str:
    """The name under which a run (and its bundle) keeps its copy of the motion file ``name``.

    Always ending in ``.npz``, so a motion file called ``args.yaml``, ``pipeline.json`` or
    ``model_9.pt`` can never overwrite a file of the run (``model_9.pt`` is kept as
    ``model_9.pt.npz``).
    """
    base = Path(name).name
    return base if base.endswith(MOTION_SUFFIX) and base != MOTION_SUFFIX else base + MOTION_SUFFIX


def new_run_id() -> str:
    """A fresh run identity: args.yaml records it and every checkpoint of the run carries it."""
    return uuid.uuid4().hex


def read_run_id(run_dir: str | Path) -> str | None:
    """The run identity args.yaml records (``run.id``); None where there is no readable args.yaml
    (nothing trained yet). An args.yaml without one was written by an older primebot:
    ``ConfigError``."""
    try:
        run = read_args(run_dir).get("run")
    except (OSError, ConfigError):
        return None
    value = run.get("id") if isinstance(run, dict) else None
    if not value:
        raise ConfigError(
            f"{Path(run_dir) / ARGS_FILE} records no run identity (run.id): the run was trained "
            "by an older primebot",
            fix=OLDER_RUN_FIX,
        )
    return str(value)


def create_run_dir(log_root: str | Path, run_name: str, now: float | None = None) -> Path:
    """Make a fresh, timestamped run directory; a clash within the same second gets a suffix."""
    if not run_name or "/" in run_name or run_name in (".", ".."):
        raise ConfigError(f"invalid run name {run_name!r}",
                          fix="use a plain name such as wave or walk-v2")
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(now))
    base = Path(log_root) / run_name
    for k in range(1000):
        path = base / (stamp if k == 0 else f"{stamp}_{k}")
        try:
            path.mkdir(parents=True, exist_ok=False)
            return path
        except FileExistsError:
            continue
        except OSError as exc:  # read-only, no permission, full: no run can start here
            raise ConfigError(f"cannot create a run directory under {base}: {exc.strerror or exc}",
                              fix="choose a writable place with --log-dir (or make this one "
                                  "writable)") from None
    raise ConfigError(f"cannot create a run directory under {base}")


def write_args(run_dir: str | Path, args: dict[str, Any]) -> Path:
    """Write the fully resolved configuration as ``args.yaml`` (atomically)."""
    path = Path(run_dir) / ARGS_FILE
    atomic_write_text(path, yaml.safe_dump(args, sort_keys=False))
    return path


def read_result(path: str | Path) -> dict[str, Any] | None:
    """A JSON result file of a run directory (pipeline.json, sim2sim.json, …) as a mapping; None
    when it is missing, unreadable or not a JSON object (read as data only)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_args(run_dir: str | Path) -> dict[str, Any]:
    """Read ``args.yaml`` of a run; a missing or unreadable file names the run directory."""
    path = Path(run_dir) / ARGS_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: no {ARGS_FILE}",
                          fix="pass logs/<run-name>/<timestamp>")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a mapping")
    return data
