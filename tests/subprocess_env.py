"""PYTHONPATH for a test's subprocess: the test's folders first, then whatever the parent already
had, so primebot stays importable where it is installed only through PYTHONPATH (a machine that
takes its packages that way, as the GPU machine does)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def pythonpath_with(*folders: str | Path, environ: Mapping[str, str] = os.environ) -> str:
    return os.pathsep.join(filter(None, [*map(str, folders), environ.get("PYTHONPATH", "")]))
