"""A run directory that never lies: report.html, pipeline.json and the commands agree
with the policy on disk; a run's motion copy never collides with its files; a changed source motion
is refused, not trained on.

The runs are real but tiny (tracking_run.train_tiny_run: one PPO iteration, 4 environments); the
pipeline.json around them is written as ``pipeline run`` writes it, so the commands and the report
see a pipeline run.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_runs import only_run_dir, read_pipeline
from tracking_run import REPO, WAVE, train_tiny_run

from primebot.pipeline.cli import build_cli, main
from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.report.page import write_report
from primebot.pipeline.stages.presets import resolve_settings
from primebot.pipeline.stages.record import new_record
from primebot.pipeline.stages.stage_runner import ordered_stages
from primebot.pipeline.train.provenance import selected_policy


@pytest.fixture(scope="module")
def full_host():
    """Every built-in plugin, the stages included (the commands record into pipeline.json by stage
    name)."""
    return plugins.load_plugins(environ={})


@pytest.fixture
def host(full_host, monkeypatch, clean_env):
    monkeypatch.setattr(plugins, "_HOST", full_host)
    return full_host


def _pipeline_run(tmp_path: Path, host) -> Path:
    """A tiny trained run whose pipeline.json says every stage finished (as after ``pipeline
    run``)."""
    run_dir = train_tiny_run(tmp_path / "logs", host)
    record = new_record(run_dir, resolve_settings(str(WAVE), preset="quick", iterations=1),
                        ordered_stages(host.registry))
    record.status = "done"
    for sequence, r in enumerate(record.stages, start=1):
        r.status, r.sequence, r.attempts = "done", sequence, 1
    record.stage("train").settings = {"iterations": 1}
    record.save()
    return run_dir


def _policy(run_dir: Path, digest: str | None = None) -> dict:
    current = selected_policy(run_dir)
    return {"checkpoint": current.checkpoint, "iteration": current.iteration,
            "checkpoint_digest": current.digest if digest is None else digest,
            "run_id": current.run_id}


def _episode(failure, length, mpkpe):
    return {"failure": failure, "length": length, "start_step": 0, "mpkpe_m": mpkpe,
            "mpkpe_root_relative_m": mpkpe,
            "joint_pos_error_rad": 0.1, "joint_vel_error_rad_s": 1.0, "ee_pos_error_m": mpkpe,
            "anchor_pos_error_m": 0.02, "anchor_ori_error_rad": 0.05}


def _sim2sim_json(run_dir: Path, policy: dict, mpkpe: float) -> None:
    (run_dir / "sim2sim.json").write_text(json.dumps({
        "policy": policy, "loop": {"physics_hz": 1000.0, "policy_hz": 50.0},
        "from_start": {"episode_records": [_episode(None, 100, mpkpe)]},
        "sampled": {"episode_records": [_episode(None, 100, mpkpe)]},
        "video": str(run_dir / "videos" / "sim2sim.mp4"),
    }))


def _banner(page: str) -> str:
    start = page.index('<div class="verdict')
    return page[start:page.index("</div>", page.index('class="big"', start))]


def test_the_report_leaves_out_a_result_of_an_older_policy(tmp_path, host):
    """sim2sim.json made from another checkpoint than the run's model (after a rerun of train whose
    sim2sim was skipped, failed or interrupted): the report must not lead with its verdict."""
    run_dir = _pipeline_run(tmp_path, host)
    _sim2sim_json(run_dir, _policy(run_dir, digest="0" * 64), mpkpe=0.0123)
    (run_dir / "videos").mkdir(exist_ok=True)
    (run_dir / "videos" / "sim2sim.mp4").write_bytes(b"\0" * 16)
    page = html.unescape(write_report(run_dir).read_text(encoding="utf-8"))
    assert ("sim2sim.json</code>: sim2sim.json was made from model_1.pt (iteration 1); the run's "
            "policy is now") in page
    assert "0.012 m" not in page  # none of its figures is shown
    assert "No verdict yet" in _banner(page) and "TRACKED" not in _banner(page)
    assert 'src="videos/sim2sim.mp4"' not in page  # its video neither

    # the same result, made from the run's policy
    _sim2sim_json(run_dir, _policy(run_dir), mpkpe=0.0123)
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "0.012 m" in page and "Left out (" not in page


def test_a_run_that_did_not_finish_gets_no_verdict_banner(tmp_path, host):
    """The pipeline's last line gives no verdict for a failed, stopped or running run; neither does
    the report."""
    run_dir = _pipeline_run(tmp_path, host)
    _sim2sim_json(run_dir, _policy(run_dir), mpkpe=0.0123)
    doc = read_pipeline(run_dir)
    doc["status"] = "failed"
    next(s for s in doc["stages"] if s["name"] == "sim2sim")["status"] = "failed"
    (run_dir / "pipeline.json").write_text(json.dumps(doc))
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "The run failed at sim2sim: no verdict until it finishes" in page
    # the run ended: its results are what they are
    assert "No verdict yet" in _banner(page) and "0.012 m" in page
    # the page written when an attempt starts: the process may replace any result
    doc["status"] = "running"
    (run_dir / "pipeline.json").write_text(json.dumps(doc))
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "or its process was killed" in page and "0.012 m" not in page
    assert (
        "<li><code>sim2sim.json</code>: sim2sim.json written while the run was in progress" in page
    )


def test_standalone_commands_record_what_they_did_so_a_resume_reruns_what_is_outdated(
    tmp_path, host, capsys
):
    """``primebot eval`` / ``train --resume`` on a pipeline run update its pipeline.json, so that a
    following ``pipeline run --resume`` does not keep every stage and exit with the old verdict."""
    run_dir = _pipeline_run(tmp_path, host)
    write_report(run_dir)
    assert main(["eval", str(run_dir), "--episodes", "1"]) == 0
    assert "recorded as the evaluate stage" in capsys.readouterr().out
    doc = read_pipeline(run_dir)
    stages = {s["name"]: s for s in doc["stages"]}
    assert stages["evaluate"]["status"] == "done" and stages["evaluate"]["attempts"] == 2
    assert stages["evaluate"]["sequence"] == max(s["sequence"] for s in doc["stages"])
    assert (
        "primebot eval" in stages["evaluate"]["message"]
        and "tracked" in stages["evaluate"]["summary"]
    )
    for later in ("export", "sim2sim", "stress"):  # their results predate the new evaluation
        assert (
            stages[later]["status"] == "pending"
            and "predates evaluate's rerun" in stages[later]["reason"]
        )
    assert doc["status"] == "pending" and doc["history"][-1]["stage"] == "evaluate"
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "Stages to run for the policy on disk: export, sim2sim, stress" in page

    assert main(["train", "--resume", str(run_dir), "--iterations", "2", "--no-progress"]) == 0
    doc = read_pipeline(run_dir)
    stages = {s["name"]: s for s in doc["stages"]}
    assert stages["train"]["status"] == "done" and stages["train"]["summary"]["iterations"] == 2
    assert stages["train"]["settings"] == {"iterations": 2} and doc["settings"]["iterations"] == 2
    assert (
        stages["evaluate"]["status"] == "pending"
        and "predates train's rerun" in stages["evaluate"]["reason"]
    )


@pytest.mark.parametrize("name", ["pipeline.json", "args.yaml", "model_9.pt"])
def test_a_motion_named_like_a_run_file_never_overwrites_it(tmp_path, host, name):
    motion = tmp_path / name
    shutil.copy(WAVE, motion)
    logs = tmp_path / "logs"
    result = CliRunner().invoke(build_cli(host),
                                ["pipeline", "run", str(motion), "--only", "validate",
                                                  "--no-video", "--log-dir", str(logs)],
                                                  catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(logs)
    assert read_pipeline(run_dir)["stages"][0]["outputs"]["motion"] == f"{name}.npz"
    assert (run_dir / f"{name}.npz").read_bytes() == WAVE.read_bytes()
    assert not (run_dir / "model_9.pt").exists() and not (run_dir / "args.yaml").exists()


def test_validate_refuses_a_source_motion_that_changed_after_training_started(tmp_path, host):
    """``--from validate`` after the source motion was regenerated: validate stops first and the
    run's copy stays (not: the copy overwritten, and a later stage failing on the hash)."""
    motion = tmp_path / "wave.npz"
    shutil.copy(WAVE, motion)
    logs, cli = tmp_path / "logs", build_cli(host)
    args = ["--no-video", "--log-dir", str(logs)]
    assert (
        CliRunner()
        .invoke(cli, ["pipeline", "run", str(motion), "--only", "validate", *args])
        .exit_code
        == 0
    )
    run_dir = only_run_dir(logs)
    # training has begun (any numbered checkpoint)
    shutil.copy(run_dir / "wave.npz", run_dir / "model_1.pt")
    # the source is regenerated as another motion
    shutil.copy(REPO / "motions" / "squat.npz", motion)
    result = CliRunner().invoke(cli,
                                ["pipeline", "run", "--resume", str(run_dir), "--only", "validate"])
    assert result.exit_code == 5, result.output
    error = read_pipeline(run_dir)["stages"][0]["error"]
    assert (
        error["type"] == "MotionError"
        and "changed since this run trained on it" in error["message"]
    )
    assert "primebot pipeline run" in error["fix"]
    assert (run_dir / "wave.npz").read_bytes() == WAVE.read_bytes()


def test_a_read_only_log_directory_is_a_typed_error(tmp_path):
    from primebot.pipeline.errors import ConfigError
    from primebot.pipeline.rundir import create_run_dir

    with pytest.raises(ConfigError, match="cannot create a run directory under "
                                          "/sys/primebot-logs/wave") as info:
        create_run_dir("/sys/primebot-logs", "wave")  # sysfs refuses, root or not
    assert "--log-dir" in info.value.fix


def test_pyproject_floors_exclude_the_versions_with_known_holes(repo_root):
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    deps = {Requirement(d).name: Requirement(d).specifier for d in project["dependencies"]}
    # weights_only=True is bypassable before torch 2.6 and had unpickler memory bugs before 2.10
    assert not deps["torch"].contains("2.9.1") and deps["torch"].contains("2.13.0")
    # onnxruntime validates external-data paths from 1.24 (from 1.24.3 also for models loaded from
    # memory)
    assert not deps["onnxruntime"].contains("1.24.2") and deps["onnxruntime"].contains("1.32.0")
    constraints = (repo_root / "constraints-cpu.txt").read_text()
    assert deps["torch"].contains(constraints.split("torch==")[1].split()[0])
