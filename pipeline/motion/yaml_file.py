"""Reading the YAML files a user writes (keyframe sources, joint maps), each problem a typed error
naming the file."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import MotionError


def read_yaml(path: Path, what: str, error: type[MotionError] = MotionError,
              missing_fix: str = "check the path"):
    """The parsed content of ``path`` (safe_load); a missing file or bad YAML raises ``error``
    naming ``what``."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist", fix=missing_fix) from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {exc}", fix="fix the file's YAML syntax") from exc
