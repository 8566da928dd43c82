"""primebot sets torch's OpenMP waiting before torch loads, and keeps what the user set
(docs/training.md)."""

from __future__ import annotations

import os
import subprocess
import sys

PRINT = (
    "import primebot.pipeline, os; print(os.environ['OMP_WAIT_POLICY'], "
    "os.environ['GOMP_SPINCOUNT'])"
)


def _run(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", PRINT], env={**base, **env}, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def test_idle_openmp_threads_spin_briefly_then_sleep():
    assert _run() == "PASSIVE 20000"


def test_a_users_own_settings_win():
    assert _run(OMP_WAIT_POLICY="ACTIVE", GOMP_SPINCOUNT="5") == "ACTIVE 5"
