"""The fault cases' one line each at the end of the session (tests/faults/conftest.py marks them).

Collected from the test reports, not the test items: under ``pytest -n`` (the README's test
command) the cases run in worker processes and only their reports reach the controller, which
prints the summary. The hooks are registered by tests/conftest.py, the conftest the controller
loads (it never collects tests/faults/ itself).
"""

from __future__ import annotations

CASE = "faults case"
"""The ``user_properties`` key a case's report carries its description under."""
_RESULTS: dict[str, tuple[str, str]] = {}
"""nodeid → (case, holds | falls short | not run (why)), in the order the cases reported."""


def pytest_runtest_logreport(report):
    case = dict(report.user_properties).get(CASE)
    if case is None or report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        verdict = "not run (" + reason.removeprefix("Skipped: ").splitlines()[0][:80] + ")"
    else:
        verdict = "holds" if report.passed else "falls short"
    _RESULTS[report.nodeid] = (case, verdict)


def pytest_terminal_summary(terminalreporter):
    if not _RESULTS:
        return
    terminalreporter.section("faults: one line per case")
    for case, verdict in _RESULTS.values():
        terminalreporter.write_line(f"{case:<104} {verdict}")
    held = sum(verdict == "holds" for _, verdict in _RESULTS.values())
    terminalreporter.write_line(f"{held} of {len(_RESULTS)} cases hold")
