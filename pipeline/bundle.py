"""``python -m primebot.pipeline.bundle BUNDLE``: the deploy bundle's runner, at the path that
generated READMEs and ``deploy.yaml`` name (docs/deploy.md). The code is ``deploy/bundle.py``."""

from __future__ import annotations

import sys

from .deploy.bundle import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
