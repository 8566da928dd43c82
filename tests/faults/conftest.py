"""Fault injection: every case through real ``primebot`` processes, one line per case.

Each test in this folder is one case: what a careful user or an attacker would do (a full disk, a
kill -9 in every stage, a damaged motion, a zip bomb, two processes on one run, a plugin that calls
``os._exit`` or hangs …). They carry the ``faults`` marker, run under the README's test command, and
end the session with one line per case, ``holds`` or ``falls short`` (tests/fault_cases.py):
``pytest -m faults`` runs them alone (``-k disk`` for some). "holds" means: a typed error (the
right exit code, the file or key named, no traceback), nothing lost or corrupted, no hang, bounded
memory, and a resume that finishes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fault_cases import CASE

HERE = Path(__file__).resolve().parent
CHAINS = ("test_kills.py", "test_disk_full.py")
"""Cases that take minutes (a pipeline killed in every stage, a disk filled in three): run by
``pytest -m faults`` or with ``PRIMEBOT_FAULTS=all``, not by the plain test command, which stays
well under its 15 minutes on 2 cores."""


def pytest_collection_modifyitems(config, items):
    chosen = (
        "faults" in (config.option.markexpr or "") or os.environ.get("PRIMEBOT_FAULTS") == "all"
    )
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.parent != HERE:
            continue
        item.add_marker(pytest.mark.faults)
        item.user_properties.append((CASE, _case(item)))
        if path.name in CHAINS and not chosen:
            item.add_marker(pytest.mark.skip(reason="minutes long: pytest -m faults"))


def _case(item) -> str:
    doc = (getattr(item.function, "__doc__", None) or item.name).strip()
    doc = " ".join(doc.split("\n\n")[0].split())  # the first paragraph, which may wrap
    param = getattr(getattr(item, "callspec", None), "id", "")
    return f"{doc} [{param}]" if param else doc


@pytest.fixture(scope="session")
def base_pipeline(tmp_path_factory) -> Path:
    """A finished real pipeline run (tiny: 8 envs, 2 iterations, 16-unit networks; no smoke test, no
    video, no stress test), made once per session; cases work on copies (harness.copy_run)."""
    from harness import TINY_PIPELINE, VERDICT_EXITS, WAVE, primebot

    logs = tmp_path_factory.mktemp("faults-base")
    result = primebot("pipeline", "run", WAVE, *TINY_PIPELINE, "--skip", "stress", "--log-dir",
                      logs)
    assert result.rc in VERDICT_EXITS, result.text[-3000:]
    return next(logs.rglob("pipeline.json")).parent


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A real training run of one iteration (``primebot train``), made once per session."""
    from harness import TINY, WAVE, primebot

    logs = tmp_path_factory.mktemp("faults-train")
    result = primebot("train", WAVE, "--iterations", "1", "--run-name", "tiny", "--log-dir", logs,
                      *TINY)
    assert result.rc == 0, result.text[-3000:]
    return next((logs / "tiny").iterdir())
