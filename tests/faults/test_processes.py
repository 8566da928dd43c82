"""Processes that misbehave: two writers on one run, a killed pipeline resumed, plugins that exit or
hang.

Every case drives ``primebot`` in fresh processes (harness.py); the pipeline cases with stand-in
stages (the built-in ones disabled) test the runner's rules whatever the stages do.
"""

from __future__ import annotations

import math
import signal
import subprocess

import pytest
from harness import (
    EXIT,
    VERDICT_EXITS,
    WAVE,
    copy_run,
    environ,
    pipeline_doc,
    plugin_site,
    primebot,
    stage_status,
    start,
    stop,
    wait_for,
)

STAND_INS = '''
import os, time
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import Stage, StageResult

NAMES = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim"]

def _make(name):
    def run(ctx):
        with open(ctx.path("calls.txt"), "a") as fh:
            fh.write(name + "\\n")
        if name == "train":
            ctx.path("policy_version.txt").write_text(str(ctx.settings.iterations))
        if name == "export":
            ctx.path("exported.txt").write_text(ctx.path("policy_version.txt").read_text())
            time.sleep(float(os.environ.get("FAULT_EXPORT_SLEEP", "0")))
        if name == "sim2sim":
            ctx.path("sim2sim_checked.txt").write_text(ctx.path("exported.txt").read_text())
        return StageResult()
    return run

@hookimpl
def register_stages(register):
    previous = ()
    for name in NAMES:
        register(Stage(name, _make(name), after=previous,
                       description=f"{name} (fault-injection stand-in)",
                       settings=("iterations",) if name == "train" else ()))
        previous = (name,)
'''
"""Stand-ins for the built-in stages: they record which policy version export wrote and sim2sim
checked."""


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    return plugin_site(tmp_path_factory.mktemp("sites"), "fault_stages", STAND_INS)


def _stand_in_pipeline(site, *args: object, sleep: str = "0") -> subprocess.Popen:
    env = environ(site, PRIMEBOT_DISABLE_PLUGINS="stages.builtin", FAULT_EXPORT_SLEEP=sleep)
    return start("pipeline", "run", *args, env=env)


def test_a_pipeline_killed_in_export_after_a_rerun_of_train_never_keeps_the_old_sim2sim(
    stand_ins, tmp_path
):
    """a pipeline killed during export after a --from train rerun never keeps the old sim2sim"""
    logs = tmp_path / "logs"
    first = _stand_in_pipeline(stand_ins, "m.npz", "--log-dir", logs, "--iterations", "30")
    assert first.wait(timeout=300) == 0, first.communicate()[0][-2000:]
    run = next(logs.rglob("pipeline.json")).parent
    second = _stand_in_pipeline(stand_ins, "--resume", run, "--from", "train", "--iterations", "40",
                                sleep="60")
    started = wait_for(lambda: (run / "calls.txt").read_text().split()[-1:] == ["export"], second,
                       timeout=300)
    second.kill()
    second.communicate()
    assert started, "export never started"
    # killed: the record says the run never finished
    assert pipeline_doc(run)["status"] == "running"
    third = _stand_in_pipeline(stand_ins, "--resume", run)
    output = third.communicate(timeout=300)[0]
    assert third.returncode == 0, output[-2000:]
    assert (run / "sim2sim_checked.txt").read_text() == (run / "exported.txt").read_text() == "40"


def test_a_second_resume_of_a_running_resume_is_refused(tiny_run, tmp_path):
    """a second train --resume of a running resume is refused"""
    run = copy_run(tiny_run, tmp_path / "run")
    rows_before = (run / "train.csv").read_text().count("\n")
    first = start("train", "--resume", run, "--iterations", "100000", "--no-progress")
    try:  # wait until the first resume really trains: rows beyond the copied run's
        assert wait_for(lambda: (run / "train.csv").read_text().count("\n") > rows_before, first,
                        timeout=300), \
            stop(first)[-2000:]
        second = primebot("train", "--resume", run, "--iterations", "100000", "--no-progress",
                          timeout=300)
    finally:
        stop(first)
    second.assert_typed(EXIT["config"], "in use by another primebot process", "pid")


def test_train_resume_during_a_pipeline_on_the_same_run_is_refused(stand_ins, tmp_path):
    """train --resume during a pipeline on the same run is refused"""
    logs = tmp_path / "logs"
    pipeline = _stand_in_pipeline(stand_ins, "m.npz", "--log-dir", logs, sleep="60")
    try:
        assert wait_for(lambda: any(logs.rglob("exported.txt")), pipeline, timeout=300)
        run = next(logs.rglob("pipeline.json")).parent
        result = primebot("train", "--resume", run, "--no-progress", timeout=300)
    finally:
        pipeline.kill()
        pipeline.communicate()
    result.assert_typed(EXIT["config"], "in use by another primebot process")


def test_a_lock_left_by_a_killed_holder_or_naming_a_live_unrelated_pid_never_blocks_a_resume(
    tiny_run, tmp_path
):
    """a stale .primebot.lock (its holder killed -9, or naming a live unrelated pid) does not block
    resume"""
    run = copy_run(tiny_run, tmp_path / "run")
    rows_before = (run / "train.csv").read_text().count("\n")
    holder = start("train", "--resume", run, "--iterations", "100000", "--no-progress")
    assert wait_for(lambda: (run / "train.csv").read_text().count("\n") > rows_before, holder,
                    timeout=300)
    # SIGKILL: the lock file stays, naming a dead process; the kernel released the flock
    holder.kill()
    holder.communicate()
    assert (run / ".primebot.lock").read_text().startswith(f"pid {holder.pid}:")
    from primebot.pipeline.train.checkpoints import numbered_checkpoints

    reached = numbered_checkpoints(run)[0][0]
    primebot("train", "--resume", run, "--iterations", reached + 1, "--no-progress").assert_typed(0)
    # a live process that holds nothing
    (run / ".primebot.lock").write_text("pid 1: primebot train\n")
    primebot("train", "--resume", run, "--iterations", reached + 2, "--no-progress").assert_typed(0)


def test_resume_with_a_lower_learning_rate_reaches_the_optimiser(tiny_run, tmp_path):
    """resume with --set ppo.lr=1e-4 (the NaN-stop advice) changes the optimiser and is recorded"""
    import yaml

    from primebot.pipeline.train.checkpoints import load_checkpoint

    run = copy_run(tiny_run, tmp_path / "run")
    before = load_checkpoint(run / "model_1.pt")["learner"]["optimizer"]["param_groups"][0]["lr"]
    primebot(
        "train", "--resume", run, "--iterations", "2", "--no-progress", "--set", "ppo.lr=1e-4"
    ).assert_typed(0)
    args = yaml.safe_load((run / "args.yaml").read_text())
    assert args["resumes"][-1]["set"] == ["ppo.learning_rate=0.0001"]
    lr = load_checkpoint(run / "model_2.pt")["learner"]["optimizer"]["param_groups"][0]["lr"]
    # the adaptive schedule moves lr by x or / 1.5 once per mini-batch update: one iteration of
    # TINY_SETS is 1 epoch x 2 mini-batches, so 1e-4 moves by 1.5**2 at most, far from where the run
    # was
    updates = 1 * 2
    assert abs(math.log(lr / 1e-4)) <= updates * math.log(1.5) + 1e-9, (lr, before)
    assert abs(math.log(lr / before)) > math.log(3), (lr, before)


def test_an_interrupted_first_checkpoint_says_there_is_nothing_to_resume(tiny_run, tmp_path):
    """an interrupted first checkpoint: resume says there is nothing to resume"""
    run = copy_run(tiny_run, tmp_path / "run")
    for path in run.glob("model_*.pt"):
        data = path.read_bytes()
        path.unlink()
    (run / ".model_1.pt.x7f3k2.pt.tmp").write_bytes(data[: len(data) // 2])
    primebot("train", "--resume", run, "--no-progress").assert_typed(
        EXIT["checkpoint"], "stopped while writing its first one", "without --resume")


# -- plugins that end or block the process ---------------------------------------------------------
EXIT_IN_STAGE = '''
import os, sys
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import Stage

def run(ctx):
    {call}

@hookimpl
def register_stages(register):
    register(Stage("quitter", run, after=("validate",), before=("replay",)))
'''


@pytest.mark.parametrize("call", ["os._exit(0)", "sys.exit(0)"])
def test_a_plugin_ending_the_process_in_a_stage_fails_that_stage_loudly(tmp_path, call):
    """a plugin stage that calls os._exit(0) / sys.exit(0) fails the stage (exit 3), recorded,
    resumable"""
    site = plugin_site(tmp_path, "quitter_stage", EXIT_IN_STAGE.format(call=call))
    logs = tmp_path / "logs"
    result = primebot("pipeline", "run", WAVE, "--no-video", "--only", "validate", "--only",
                      "quitter",
                      "--log-dir", logs, site=site)
    result.assert_typed(EXIT["plugin"], "quitter_stage", call)
    run = next(logs.rglob("pipeline.json")).parent
    doc = pipeline_doc(run)
    quitter = next(s for s in doc["stages"] if s["name"] == "quitter")
    assert (
        doc["status"] == "failed"
        and quitter["status"] == "failed"
        and call in quitter["error"]["message"]
    )
    assert "no verdict until it finishes" in (run / "report.html").read_text(encoding="utf-8")
    # the plugin disabled: the run goes on
    env = environ(site, PRIMEBOT_DISABLE_PLUGINS="quitter_stage")
    primebot("pipeline", "run", "--resume", run, "--only", "validate", env=env).assert_typed(0)


@pytest.mark.parametrize("where", ["import", "hook"])
@pytest.mark.parametrize("call", ["os._exit(0)", "sys.exit(0)"])
def test_a_plugin_ending_the_process_while_loading_is_named(tmp_path, where, call):
    """a plugin calling os._exit(0) / sys.exit(0) at import or in a register hook is a PluginError
    naming it"""
    source = f"import os, sys\n{call}\n" if where == "import" else f'''
import os, sys
from primebot.pipeline.hooks.specs import hookimpl

@hookimpl
def register_stages(register):
    {call}
'''
    site = plugin_site(tmp_path, "quitter_load", source)
    result = primebot("pipeline", "run", WAVE, "--preset", "quick", "--log-dir", tmp_path / "logs",
                      site=site)
    result.assert_typed(EXIT["plugin"], "quitter_load", call)
    assert not (tmp_path / "logs").exists()


HANG_IN_STAGE = '''
import time
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import Stage

def run(ctx):
    ctx.path("hanging").write_text("yes")
    time.sleep(1e9)

@hookimpl
def register_stages(register):
    register(Stage("hanger", run, after=("validate",), before=("replay",)))
'''


def test_a_plugin_stage_that_hangs_is_stopped_by_sigterm_and_the_run_resumes(tmp_path):
    """a plugin stage that hangs: SIGTERM stops it (exit 143), recorded as interrupted, the run
    resumes"""
    site = plugin_site(tmp_path, "hang_stage", HANG_IN_STAGE)
    logs = tmp_path / "logs"
    proc = start("pipeline", "run", WAVE, "--no-video", "--only", "validate", "--only", "hanger",
                 "--log-dir", logs,
                 site=site)
    assert wait_for(lambda: any(logs.rglob("hanging")), proc, timeout=300), stop(proc)[-2000:]
    output = stop(proc, signal.SIGTERM, timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in output, output[-2000:]
    run = next(logs.rglob("pipeline.json")).parent
    assert (
        stage_status(run, "hanger") == "interrupted"
        and pipeline_doc(run)["status"] == "interrupted"
    )
    env = environ(site, PRIMEBOT_DISABLE_PLUGINS="hang_stage")
    primebot("pipeline", "run", "--resume", run, "--only", "validate", env=env).assert_typed(0)


def test_a_plugin_that_hangs_while_loading_is_stopped_by_ctrl_c(tmp_path):
    """a plugin whose register hook hangs: Ctrl-C stops primebot (exit 130), nothing written"""
    site = plugin_site(tmp_path, "hang_load", '''
import pathlib, time
from primebot.pipeline.hooks.specs import hookimpl

@hookimpl
def register_stages(register):
    pathlib.Path(__file__).with_name("hanging").write_text("yes")
    time.sleep(1e9)
''')
    proc = start("pipeline", "run", WAVE, "--log-dir", tmp_path / "logs", site=site)
    assert wait_for(lambda: (site / "hanging").is_file(), proc, timeout=300), stop(proc)[-2000:]
    output = stop(proc, signal.SIGINT, timeout=120)
    assert proc.returncode == 130 and "Traceback" not in output, output[-2000:]
    assert not (tmp_path / "logs").exists()


def test_a_misspelt_hook_name_is_refused(tmp_path):
    """a misspelt hook name (register_robot) is refused"""
    site = plugin_site(tmp_path, "typo_plugin", '''
from primebot.pipeline.hooks.specs import hookimpl

@hookimpl
def register_robot(register):
    pass
''')
    primebot("plugins", site=site).assert_typed(EXIT["plugin"], "register_robot",
                                                "did you mean 'register_robots'")


def test_standalone_train_on_a_pipeline_run_makes_the_next_resume_rerun_what_it_outdated(
    base_pipeline, tmp_path
):
    """primebot train --resume on a pipeline run is recorded; pipeline run --resume reruns what it
    outdated"""
    run = copy_run(base_pipeline, tmp_path / "run")
    primebot("train", "--resume", run, "--iterations", "3", "--no-progress").assert_typed(0)
    doc = pipeline_doc(run)
    stages = {s["name"]: s for s in doc["stages"]}
    assert stages["train"]["summary"]["iterations"] == 3 and doc["settings"]["iterations"] == 3
    assert all(stages[n]["status"] == "pending" for n in ("evaluate", "export", "sim2sim"))
    result = primebot("pipeline", "run", "--resume", run, "--skip", "smoke", "--skip", "stress")
    assert result.rc in VERDICT_EXITS, result.text[-2000:]
    assert "evaluate: deterministic policy" in result.out and "train: done earlier" in result.out
    from primebot.pipeline.train.provenance import stale_results

    assert stale_results(run).stale == {}
