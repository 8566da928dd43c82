"""``python -m primebot.pipeline`` runs the CLI (same as the ``primebot`` command)."""

import sys

from .cli import main

sys.exit(main())
