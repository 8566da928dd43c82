"""The pipeline framework: pipeline.json, exit codes, selection, plugin stages, resume after a kill.

The built-in stages are disabled here and replaced, through the same
``register_stages`` hook, by a test plugin whose stages write a file, fail
or skip on request (``FAKE_FAIL=<stage>``, ``FAKE_SKIP=<stage>``) and whose
``train`` loops with a checkpoint file, so the framework is tested without
waiting for real training. The subprocess tests install the plugin as a real
entry-point distribution and kill a real ``primebot pipeline run``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_runs import only_run_dir, read_pipeline
from subprocess_env import pythonpath_with

from primebot.pipeline.cli import build_cli
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.run_lock import LOCK_FILE

STAGES = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim"]
DISABLE_BUILTINS = {"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"}

FAKE_STAGES = '''
import os, time
from primebot.pipeline.errors import (DeviceUnavailableError, ExportError, MotionError,
                                      NonFiniteError)
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import Stage, StageInterrupted, StageResult, StageSkipped

NAMES = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim"]
ERRORS = {
    "validate": lambda: MotionError("motion.npz: key 'joint_pos' frame 12 column 3 is NaN",
                                    fix="re-export the motion"),
    "smoke": lambda: DeviceUnavailableError("device 'cuda' is not available",
                                            fix="pip install torch with CUDA"),
    "train": lambda: NonFiniteError("non-finite loss at iteration 3",
                                    fix="lower the learning rate"),
    "export": lambda: ExportError("onnxruntime differs from PyTorch by 3e-3"),
}

def _train(ctx):
    ckpt = ctx.path("ckpt.txt")
    start = int(ckpt.read_text()) if ctx.resuming and ckpt.exists() else 0
    with open(ctx.path("train_starts.txt"), "a") as fh:
        fh.write(f"{start}\\n")
    total = int(os.environ.get("FAKE_TRAIN_ITERS", "3"))
    try:
        for it in range(start + 1, total + 1):
            time.sleep(float(os.environ.get("FAKE_TRAIN_SLEEP", "0")))
            # atomic, as a real checkpoint: a signal between truncate and write would leave it empty
            tmp = ckpt.with_suffix(".tmp")
            tmp.write_text(str(it))
            os.replace(tmp, ckpt)
    except KeyboardInterrupt as exc:
        raise StageInterrupted(f"{str(exc) or 'SIGINT'} at iteration {ckpt.read_text()}") from None
    return StageResult(outputs={"checkpoint": "ckpt.txt"},
                       summary={"iterations": total, "device": "cpu"})

def _make(name):
    def run(ctx):
        with open(ctx.path("calls.txt"), "a") as fh:
            fh.write(name + "\\n")
        if os.environ.get("FAKE_FAIL") == name:
            raise ERRORS.get(name, lambda: RuntimeError(f"{name} broke"))()
        if os.environ.get("FAKE_SKIP") == name:
            raise StageSkipped("no OpenGL for the video", fix="apt-get install libegl1")
        if name == "train":
            return _train(ctx)
        ctx.path(f"{name}.txt").write_text(name)
        return StageResult(outputs={name: f"{name}.txt"}, summary={"seen": sorted(ctx.outputs)},
                           message=f"{name} ok")
    return run

@hookimpl
def register_stages(register):
    previous = ()
    for name in NAMES:
        register(Stage(name, _make(name), after=previous, description=f"fake {name}",
                       settings=("iterations",) if name == "train" else ()))
        previous = (name,)
'''


@pytest.fixture
def fake_site(make_distribution):
    """The fake stages installed as the entry-point plugin ``fake-stages``."""
    return make_distribution("fake-stages", "fake_pipeline_stages", FAKE_STAGES)


@pytest.fixture
def run_cli(fake_site, clean_env, tmp_path):
    """Invoke ``primebot pipeline …`` in-process with the fake stages (built-in stages disabled)."""

    def invoke(*args: str, env: dict[str, str] | None = None, extra=()):
        for key, value in (env or {}).items():
            clean_env.setenv(key, value)
        host = load_plugins(environ=DISABLE_BUILTINS, extra=extra)
        result = CliRunner().invoke(build_cli(host), ["pipeline", *args], catch_exceptions=False)
        return result

    return invoke


def statuses(doc: dict) -> dict[str, str]:
    return {stage["name"]: stage["status"] for stage in doc["stages"]}


def calls(run_dir: Path) -> list[str]:
    path = run_dir / "calls.txt"
    return path.read_text().split() if path.exists() else []


def test_a_successful_run_records_every_stage_done_with_outputs_and_exits_zero(run_cli, tmp_path):
    result = run_cli("run", "motions/wave.npz", "--preset", "quick", "--log-dir",
                     str(tmp_path / "logs"))
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(tmp_path / "logs")
    assert run_dir.parent.name == "wave"  # logs/<motion stem>/<timestamp>/
    doc = read_pipeline(run_dir)
    assert doc["status"] == "done"
    assert statuses(doc) == dict.fromkeys(STAGES, "done")
    assert calls(run_dir) == STAGES
    export = next(s for s in doc["stages"] if s["name"] == "export")
    assert export["outputs"] == {"export": "export.txt"}
    assert export["summary"]["seen"] == sorted(set(STAGES) - {"export", "sim2sim"})
    assert (
        export["duration_s"] >= 0 and export["attempts"] == 1 and export["plugin"] == "fake-stages"
    )
    assert doc["settings"]["preset"] == "quick" and doc["settings"]["iterations"] == 20
    assert "[7/7] sim2sim: fake sim2sim" in result.output and "[DONE] pipeline" in result.output
    assert (run_dir / "report.html").is_file()
    assert "[7/7] sim2sim" in (run_dir / "pipeline.log").read_text(encoding="utf-8")
    assert not (run_dir / LOCK_FILE).exists()


EXPECTED_FAILURES = {
    "validate": ("MotionError", 5),
    "replay": ("RuntimeError", 1),
    "smoke": ("DeviceUnavailableError", 4),
    "train": ("NonFiniteError", 7),
    "evaluate": ("RuntimeError", 1),
    "export": ("ExportError", 8),
    "sim2sim": ("RuntimeError", 1),
}


@pytest.mark.parametrize("failing", STAGES)
def test_a_failing_stage_stops_the_run_with_its_error_and_exit_code(run_cli, tmp_path, failing):
    result = run_cli("run", "m.npz", "--log-dir", str(tmp_path / "logs"),
                     env={"FAKE_FAIL": failing})
    error_type, exit_code = EXPECTED_FAILURES[failing]
    assert result.exit_code == exit_code, result.output
    run_dir = only_run_dir(tmp_path / "logs")
    doc = read_pipeline(run_dir)
    k = STAGES.index(failing)
    assert doc["status"] == "failed"
    assert statuses(doc) == {**dict.fromkeys(STAGES[:k], "done"), failing: "failed",
                             **dict.fromkeys(STAGES[k + 1:], "pending")}
    error = doc["stages"][k]["error"]
    assert error["type"] == error_type and error["exit_code"] == exit_code
    assert calls(run_dir) == STAGES[: k + 1]
    assert f"[FAILED] at {failing}" in result.output
    if failing == "validate":
        assert "frame 12 column 3" in error["message"] and error["fix"] == "re-export the motion"
        assert "fix: re-export the motion" in result.output


def test_a_skipped_stage_records_its_reason_and_later_stages_still_run(run_cli, tmp_path):
    result = run_cli("run", "m.npz", "--log-dir", str(tmp_path / "logs"),
                     env={"FAKE_SKIP": "replay"})
    assert result.exit_code == 0, result.output
    doc = read_pipeline(only_run_dir(tmp_path / "logs"))
    replay = doc["stages"][1]
    assert replay["status"] == "skipped"
    assert "no OpenGL" in replay["reason"] and "libegl1" in replay["reason"]
    assert statuses(doc) == {**dict.fromkeys(STAGES, "done"), "replay": "skipped"}
    assert doc["status"] == "done"


def test_only_and_skip_and_from_select_stages(run_cli, tmp_path):
    logs = tmp_path / "a"
    assert (
        run_cli(
            "run", "m.npz", "--log-dir", str(logs), "--only", "smoke", "--only", "export"
        ).exit_code
        == 0
    )
    run_dir = only_run_dir(logs)
    assert calls(run_dir) == ["smoke", "export"]
    doc = read_pipeline(run_dir)
    assert doc["stages"][0]["status"] == "skipped" and doc["stages"][0]["reason"] == "not in --only"

    logs = tmp_path / "b"
    assert (
        run_cli(
            "run", "m.npz", "--log-dir", str(logs), "--skip", "replay", "--skip", "sim2sim"
        ).exit_code
        == 0
    )
    assert calls(only_run_dir(logs)) == ["validate", "smoke", "train", "evaluate", "export"]

    logs = tmp_path / "c"
    assert run_cli("run", "m.npz", "--log-dir", str(logs), "--from", "evaluate").exit_code == 0
    run_dir = only_run_dir(logs)
    assert calls(run_dir) == ["evaluate", "export", "sim2sim"]
    assert read_pipeline(run_dir)["stages"][3]["reason"] == "before --from evaluate"


def test_unknown_stage_names_and_contradictory_options_are_refused(run_cli, tmp_path):
    from primebot.pipeline.errors import ConfigError, UnknownNameError
    from primebot.pipeline.stages.stage_runner import Selection

    with pytest.raises(UnknownNameError,
                       match=r"--skip 'trian': no such stage; stages: validate, train"):
        Selection(skip=("trian",)).check(["validate", "train"])
    with pytest.raises(ConfigError, match="--from and --only cannot be combined"):
        Selection(from_stage="train", only=("train",)).check(["validate", "train"])
    with pytest.raises(UnknownNameError):
        run_cli("run", "m.npz", "--log-dir", str(tmp_path), "--only", "tensorrt")
    assert not list(tmp_path.rglob("pipeline.json"))  # refused before anything ran


def test_resume_after_a_failure_keeps_finished_stages_and_retries_the_failed_one(run_cli, tmp_path):
    logs = tmp_path / "logs"
    assert (
        run_cli("run", "m.npz", "--log-dir", str(logs), env={"FAKE_FAIL": "evaluate"}).exit_code
        == 1
    )
    run_dir = only_run_dir(logs)
    result = run_cli("run", "--resume", str(run_dir), env={"FAKE_FAIL": ""})
    assert result.exit_code == 0, result.output
    doc = read_pipeline(run_dir)
    assert statuses(doc) == dict.fromkeys(STAGES, "done")
    assert calls(run_dir) == [*STAGES[:5], "evaluate", "export", "sim2sim"]
    evaluate = doc["stages"][4]
    assert evaluate["attempts"] == 2 and evaluate["error"] is None
    assert [h["status"] for h in doc["history"]] == ["failed", "done"]
    assert "done earlier" in result.output


def test_resume_refuses_to_change_the_run_settings(run_cli, tmp_path):
    logs = tmp_path / "logs"
    assert run_cli("run", "m.npz", "--log-dir", str(logs), "--only", "validate").exit_code == 0
    run_dir = only_run_dir(logs)
    from primebot.pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot change --num-envs"):
        run_cli("run", "--resume", str(run_dir), "--num-envs", "8")
    result = run_cli("run", "--resume", str(run_dir), "--iterations", "50", "--only", "train")
    assert result.exit_code == 0, result.output
    assert read_pipeline(run_dir)["settings"]["iterations"] == 50


class _TensorRTPlugin:
    """A third-party stage after export, and one squeezed in before train."""

    def __init__(self):
        from primebot.pipeline.hooks.specs import hookimpl
        from primebot.pipeline.stages.contract import Stage, StageResult

        def tensorrt(ctx):
            onnx = ctx.output("export", "export")
            assert onnx is not None and onnx.read_text() == "export"
            (ctx.run_dir / "policy.engine").write_text("engine")
            return StageResult(outputs={"engine": "policy.engine"}, message="converted")

        def lint(ctx):
            assert "validate" in ctx.outputs and "train" not in ctx.outputs

        class Hooks:
            @hookimpl
            def register_stages(self, register):
                register(Stage("tensorrt", tensorrt, after=("export",),
                               description="ONNX → TensorRT"))
                register(Stage("lint", lint, after=("validate",), before=("train",)))

        self.hooks = Hooks()


def test_a_stage_added_by_a_plugin_runs_in_its_place(run_cli, tmp_path):
    result = run_cli("run", "m.npz", "--log-dir", str(tmp_path),
                     extra=[("acme-trt", _TensorRTPlugin().hooks)])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(tmp_path)
    doc = read_pipeline(run_dir)
    order = [s["name"] for s in doc["stages"]]
    assert order == ["validate", "replay", "smoke", "lint", "train", "evaluate", "export",
                     "sim2sim", "tensorrt"]
    trt = doc["stages"][-1]
    assert (
        trt["status"] == "done"
        and trt["plugin"] == "acme-trt"
        and trt["outputs"] == {"engine": "policy.engine"}
    )
    assert (run_dir / "policy.engine").read_text() == "engine"


def test_pipeline_stages_lists_the_order_and_plugins(run_cli):
    result = run_cli("stages", extra=[("acme-trt", _TensorRTPlugin().hooks)])
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.output.splitlines()[1:]]
    assert [cols[1] for cols in lines] == ["validate", "replay", "smoke", "lint", "train",
                                           "evaluate", "export",
                                          "sim2sim", "tensorrt"]
    assert lines[-1][2] == "acme-trt" and lines[0][2] == "fake-stages"


class _VerdictPlugin:
    """Stages that judge the policy: ``judge`` (after sim2sim) tracks or not and advises a next
    step, as train does when its time limit cut it short; ``stress`` (after it) is robust or
    not."""

    def __init__(self, tracked: bool, robust: bool | None) -> None:
        from primebot.pipeline.hooks.specs import hookimpl
        from primebot.pipeline.stages.contract import Stage, StageResult

        def judge(ctx):
            return StageResult(summary={"tracked": tracked,
                                        "verdict": "success 1.00 and MPKPE 0.010 m",
                                        "next_step": "train on: the stage's command"})

        def stress(ctx):
            return StageResult(summary={"robust": robust,
                                        "robust_reason": "success < 0.90 at push 0.55 m/s: 0.62",
                                        "stress_sentence": "Replaying the reference does as well."})

        class Hooks:
            @hookimpl
            def register_stages(self, register):
                register(Stage("judge", judge, after=("sim2sim",)))
                if robust is not None:
                    register(Stage("stress", stress, after=("judge",)))

        self.hooks = Hooks()


@pytest.mark.parametrize(("tracked", "robust", "code", "line"), [
    (True, True, 0,
     "[DONE] pipeline: TRACKED and ROBUST (judge: success 1.00 and MPKPE 0.010 m; stress: "),
    (True, False, 12,
     "[DONE] pipeline: TRACKED, NOT ROBUST (stress: success < 0.90 at push 0.55 m/s: 0.62); exit "
     "12"),
    (True, None, 12,
     "[DONE] pipeline: TRACKED, robustness not measured (the stress stage did not run); exit 12"),
    (False, False, 10,
     "[DONE] pipeline: NOT TRACKED (judge: success 1.00 and MPKPE 0.010 m); exit 10"),
])
def test_the_exit_code_and_last_line_tell_robust_tracked_only_and_not_tracked(run_cli, tmp_path,
                                                                              tracked, robust,
                                                                               code, line):
    result = run_cli("run", "m.npz", "--log-dir", str(tmp_path),
                     extra=[("judges", _VerdictPlugin(tracked, robust).hooks)])
    assert result.exit_code == code, result.output
    assert line in result.output
    assert ("Replaying the reference does as well." in result.output) == (tracked
                                                                          and robust is not None)
    # the advised next step only where the verdict falls short of what was judged
    assert ("\n      next: train on: the stage's command\n" in result.output) == (
        not tracked or robust is False)


# -- a real process, really killed ----------------------------------------------------
def _start(site: Path, args: list[str], cwd: Path, **env: str) -> subprocess.Popen:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PRIMEBOT_DEVICE", "FAKE_FAIL", "FAKE_SKIP")}
    environ.update(PYTHONPATH=pythonpath_with(site), **DISABLE_BUILTINS, **env)
    # Ctrl-C as at a terminal: a shell starts background jobs with SIGINT ignored, and Python then
    # keeps ignoring it, so a suite run in the background would otherwise see SIGINT do nothing
    return subprocess.Popen([sys.executable, "-m", "primebot.pipeline", "pipeline", "run", *args],
                            cwd=cwd, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_training(log_dir: Path, proc: subprocess.Popen, at_least: int = 3) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ckpts = list(log_dir.rglob("ckpt.txt"))
        if (
            ckpts
            and ckpts[0].read_text().strip().isdigit()
            and int(ckpts[0].read_text()) >= at_least
        ):
            return ckpts[0].parent
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("training never started: " + proc.communicate()[0])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["sigint", "sigterm", "sigkill"])
def test_resume_after_a_killed_run_skips_finished_stages_and_continues_training(
    fake_site, tmp_path, sig
):
    logs = tmp_path / "logs"
    proc = _start(fake_site, ["m.npz", "--log-dir", str(logs)], tmp_path, FAKE_TRAIN_ITERS="100000",
                  FAKE_TRAIN_SLEEP="0.02")
    run_dir = _wait_for_training(logs, proc)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    doc = read_pipeline(run_dir)
    done_before = STAGES[:3]
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig, output  # 130 for Ctrl-C, 143 for SIGTERM
        assert doc["status"] == "interrupted"
        assert (
            doc["stages"][3]["status"] == "interrupted" and sig.name in doc["stages"][3]["reason"]
        )
        assert "resume with: primebot pipeline run --resume" in output
        assert (run_dir / "report.html").is_file()
    else:
        assert proc.returncode == -signal.SIGKILL
        assert doc["status"] == "running" and doc["stages"][3]["status"] == "running"
        # left behind; the kernel released its flock, the resume takes it
        assert (run_dir / LOCK_FILE).exists()
        # written when the attempt began: the report of a killed run claims no verdict
        assert "no verdict until it finishes" in (run_dir / "report.html").read_text(
            encoding="utf-8"
        )
    assert statuses(doc) == {**dict.fromkeys(done_before, "done"),
                             "train": doc["stages"][3]["status"],
                             **dict.fromkeys(STAGES[4:], "pending")}
    stopped_at = int((run_dir / "ckpt.txt").read_text())

    proc = _start(fake_site, ["--resume", str(run_dir)], tmp_path,
                  FAKE_TRAIN_ITERS=str(stopped_at + 5))
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output
    doc = read_pipeline(run_dir)
    assert statuses(doc) == dict.fromkeys(STAGES, "done")
    assert calls(run_dir) == [*STAGES[:4], "train", *STAGES[4:]]  # validate, replay, smoke ran once
    starts = [int(x) for x in (run_dir / "train_starts.txt").read_text().split()]
    assert starts == [0, stopped_at]  # the second train continued from its checkpoint
    assert doc["stages"][3]["attempts"] == 2
    assert "done earlier" in output


def test_stages_after_one_that_reran_run_again_even_across_a_stop(run_cli, tmp_path):
    logs = tmp_path / "logs"
    assert run_cli("run", "m.npz", "--log-dir", str(logs)).exit_code == 0
    run_dir = only_run_dir(logs)
    # train reruns, then the run stops during export (a failure here; a kill leaves it "running":
    # the same rule)
    result = run_cli("run", "--resume", str(run_dir), "--from", "train",
                     env={"FAKE_FAIL": "export"})
    assert result.exit_code != 0
    # sim2sim's result checked the old policy: pipeline.json does not show it as done
    sim2sim = read_pipeline(run_dir)["stages"][6]
    assert sim2sim["status"] == "pending" and "predates evaluate's rerun" in sim2sim["reason"]
    result = run_cli("run", "--resume", str(run_dir), env={"FAKE_FAIL": ""})
    assert result.exit_code == 0, result.output
    # sim2sim is not kept: it checked the old policy
    assert calls(run_dir)[-2:] == ["export", "sim2sim"]
    doc = read_pipeline(run_dir)
    sequence = [s["sequence"] for s in doc["stages"]]
    assert statuses(doc) == dict.fromkeys(STAGES, "done") and sequence[3:] == sorted(sequence[3:])


def test_resume_with_more_iterations_on_a_finished_run_trains_again(run_cli, tmp_path):
    """``--resume RUN --iterations N`` on a finished run trains again (not: train kept as done,
    nothing trained): a stage whose settings changed (``Stage.settings``) runs again, and so does
    everything after it."""
    logs = tmp_path / "logs"
    assert run_cli("run", "m.npz", "--log-dir", str(logs), "--iterations", "3").exit_code == 0
    run_dir = only_run_dir(logs)
    result = run_cli("run", "--resume", str(run_dir), "--iterations", "6")
    assert result.exit_code == 0, result.output
    assert (
        "train: done earlier, but --iterations changed from 3 to 6: running it again"
        in result.output
    )
    assert calls(run_dir) == [*STAGES, *STAGES[3:]]
    train = read_pipeline(run_dir)["stages"][3]
    assert train["settings"] == {"iterations": 6} and train["attempts"] == 2
    # the same again: nothing to do
    result = run_cli("run", "--resume", str(run_dir), "--iterations", "6")
    assert result.exit_code == 0 and calls(run_dir) == [*STAGES, *STAGES[3:]]


def test_a_stage_outdated_by_a_rerun_is_not_kept_as_done_when_deselected(run_cli, tmp_path):
    logs = tmp_path / "logs"
    assert run_cli("run", "m.npz", "--log-dir", str(logs)).exit_code == 0
    run_dir = only_run_dir(logs)
    assert run_cli("run", "--resume", str(run_dir), "--only", "train").exit_code == 0
    doc = read_pipeline(run_dir)
    assert (
        statuses(doc)["sim2sim"] == "skipped"
        and "predates train's rerun" in doc["stages"][6]["reason"]
    )
    assert statuses(doc)["replay"] == "done"  # upstream of train: still valid


def test_a_stage_calling_sys_exit_fails_the_stage_instead_of_ending_the_run_with_exit_0(
    run_cli, tmp_path
):
    import sys as _sys

    from primebot.pipeline.hooks.specs import hookimpl
    from primebot.pipeline.stages.contract import Stage

    class Quitter:
        @hookimpl
        def register_stages(self, register):
            register(Stage("quit", lambda ctx: _sys.exit(0), after=("sim2sim",)))

    result = run_cli("run", "m.npz", "--log-dir", str(tmp_path / "logs"),
                     extra=[("quitter", Quitter())])
    assert result.exit_code == 3, result.output
    doc = read_pipeline(only_run_dir(tmp_path / "logs"))
    assert (
        doc["status"] == "failed" and "called sys.exit(0)" in doc["stages"][-1]["error"]["message"]
    )


def test_resume_accepts_and_records_a_changed_learning_rate_but_no_other_setting(run_cli, tmp_path):
    from primebot.pipeline.errors import ConfigError

    logs = tmp_path / "logs"
    assert run_cli("run", "m.npz", "--log-dir", str(logs), "--only", "validate").exit_code == 0
    run_dir = only_run_dir(logs)
    with pytest.raises(ConfigError, match="cannot change ppo.gamma=0.9"):
        run_cli("run", "--resume", str(run_dir), "--set", "ppo.gamma=0.9")
    result = run_cli("run", "--resume", str(run_dir), "--set", "ppo.lr=1e-4", "--only", "train")
    assert result.exit_code == 0, result.output
    assert read_pipeline(run_dir)["settings"]["resume_sets"] == ["ppo.lr=1e-4"]
