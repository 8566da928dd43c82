"""``python -m primebot.pipeline.bundle BUNDLE``: the deploy bundle's runner.

This is the path that generated READMEs and ``deploy.yaml`` name (docs/deploy.md); the code is
``deploy/deploy_bundle.py``."""

from __future__ import annotations

import sys

from .deploy.deploy_bundle import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
