"""A function run through ``torch.compile``, or eagerly where compiling it fails.

``torch.compile`` traces and compiles on the first call (Inductor writes C++ for a CPU and needs a
compiler), so a failure shows up there, not where the function is wrapped. ``CompiledOrEager`` turns
such a failure into one warning and runs the plain function from then on: training continues, only
slower. An error the eager function raises too still reaches the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

log = logging.getLogger(__name__)


class CompiledOrEager:
    """Call ``fn`` compiled; after a failure to compile, call it eagerly (``failure`` says why)."""

    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.eager = fn
        self.what = what
        self.failure: str | None = None
        try:
            self.compiled: Callable[..., Any] | None = torch.compile(fn)
        # torch.compile unsupported here (platform, Python version)
        except Exception as error:  # noqa: BLE001
            self._fail(error)

    def _fail(self, error: Exception) -> None:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        self.failure = f"{type(error).__name__}: {first_line}".rstrip(": ")
        self.compiled = None
        log.warning("warning: torch.compile of %s failed (%s); running it eagerly (--set "
                    "ppo.compile_update=off "
                    "skips the attempt)", self.what, self.failure)

    def __call__(self, *args: Any) -> Any:
        if self.compiled is not None:
            try:
                return self.compiled(*args)
            # Dynamo/Inductor raise many types; eager decides below
            except Exception as error:  # noqa: BLE001
                self._fail(error)
        return self.eager(*args)
