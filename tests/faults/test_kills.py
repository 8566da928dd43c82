"""kill -9 during each real stage, then ``--resume``: nothing lost, nothing shown that is not so,
and it finishes.

One copy of a finished tiny pipeline run is resumed with more iterations and killed with SIGKILL in
train, then resumed and killed in evaluate, then in export (while the bundle is being built), then
in sim2sim; the last resume must finish. Each kill must leave a run directory that is intact
(``harness.intact``), a pipeline.json showing the stage as running and a report.html that claims no
verdict; each resume must continue (the next kill finds the next stage running). The stress stage,
the slowest, is killed on its own copy.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from harness import (
    VERDICT_EXITS,
    copy_run,
    intact,
    pipeline_doc,
    primebot,
    stage_status,
    start,
    wait_for,
)

CHAIN = ("train", "evaluate", "export", "sim2sim")
"""The stages killed in turn on one run (stress: ``test_kill_9_in_stress_then_resume``)."""
SKIP = ("--skip", "smoke", "--skip", "stress")
"""As the base run: no smoke test (it trains in a scratch directory), the stress test on its own
copy."""


def _train_rows(run_dir: Path) -> int:
    return (run_dir / "train.csv").read_text(encoding="utf-8").count("\n") - 1


def _mid_stage(run_dir: Path, stage: str, rows_before: int) -> bool:
    """Whether ``stage`` is running and well into its work (train: logged new iterations; export:
    building its staging bundle)."""
    if stage_status(run_dir, stage) != "running":
        return False
    if stage == "train":
        return _train_rows(run_dir) >= rows_before + 2
    if stage == "export":
        return any(run_dir.glob(".export.*.tmp"))
    return True


def _kill_in(run_dir: Path, stage: str, *args: str) -> dict:
    rows = _train_rows(run_dir)
    proc = start("pipeline", "run", "--resume", run_dir, *args)
    reached = wait_for(lambda: _mid_stage(run_dir, stage, rows), proc, step=0.02)
    if reached and stage != "export":
        time.sleep(0.3)  # into the stage's work, not at its first line
    proc.send_signal(signal.SIGKILL)
    output = proc.communicate()[0]
    report = (
        (run_dir / "report.html").read_text(encoding="utf-8")
        if (run_dir / "report.html").is_file()
        else ""
    )
    return {"reached": reached, "rc": proc.returncode, "status": stage_status(run_dir, stage),
            "problems": intact(run_dir, killed=True),
            "report_claims_no_verdict": "no verdict until it finishes" in report,
            "output": output[-2000:]}


@pytest.fixture(scope="module")
def chain(base_pipeline, tmp_path_factory):
    run_dir = copy_run(base_pipeline, tmp_path_factory.mktemp("kill") / "run")
    seen = {}
    args = ("--iterations", "12", *SKIP)  # the first resume trains on (from 2 to 12)
    for stage in CHAIN:
        seen[stage] = _kill_in(run_dir, stage, *args)
        args = SKIP
    final = primebot("pipeline", "run", "--resume", run_dir, *SKIP)
    seen["final"] = {"result": final, "doc": pipeline_doc(run_dir), "problems": intact(run_dir)}
    return run_dir, seen


@pytest.mark.parametrize("stage", CHAIN)
def test_kill_9_in_a_stage_then_resume(chain, stage):
    """kill -9 during a real stage, then --resume"""
    run_dir, seen = chain
    case = seen[stage]
    assert case["reached"], f"{stage} was never caught running: " + case["output"]
    assert case["rc"] == -signal.SIGKILL
    assert case["status"] == "running", case["status"]
    assert case["problems"] == [], case["problems"]
    assert case["report_claims_no_verdict"], "report.html shows a verdict for a run that was killed"
    following = CHAIN[CHAIN.index(stage) + 1] if stage != CHAIN[-1] else "final"
    if following != "final":  # the resume after this kill went on to the next stage
        assert seen[following]["reached"]
    final = seen["final"]
    assert final["result"].rc in VERDICT_EXITS, final["result"].text[-2000:]
    assert final["doc"]["status"] == "done" and final["problems"] == []
    statuses = {s["name"]: s["status"] for s in final["doc"]["stages"]}
    assert statuses[stage] == "done" and statuses["train"] == "done"
    if stage == "train":  # training continued from its checkpoint to the new budget
        from primebot.pipeline.rundir import read_args

        assert final["doc"]["stages"][3]["summary"]["iterations"] == 12
        assert len(read_args(run_dir).get("resumes") or []) >= 2


def test_kill_9_in_stress_then_resume(base_pipeline, tmp_path):
    """kill -9 during a real stage, then --resume [stress]"""
    run_dir = copy_run(base_pipeline, tmp_path / "run")
    case = _kill_in(run_dir, "stress", "--skip", "smoke")
    assert case["reached"] and case["rc"] == -signal.SIGKILL, case["output"]
    assert (
        case["status"] == "running" and case["problems"] == [] and case["report_claims_no_verdict"]
    )
    final = primebot("pipeline", "run", "--resume", run_dir, "--skip", "smoke")
    assert final.rc in VERDICT_EXITS, final.text[-2000:]
    doc = pipeline_doc(run_dir)
    assert doc["status"] == "done" and doc["stages"][-1]["name"] == "stress"
    assert doc["stages"][-1]["status"] == "done" and (run_dir / "stress.json").is_file()
    assert intact(run_dir) == []
