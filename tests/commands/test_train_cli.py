"""``primebot train`` as a user runs it: options, errors, SIGTERM mid-run then resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pointmass_task
import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.train.checkpoints import numbered_checkpoints
from primebot.pipeline.train.log import read_csv_rows
from primebot.pipeline.train.session import TrainRequest, run_training

TESTS = Path(__file__).resolve().parents[1]

CLI_WITH_POINTMASS = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pointmass_task
from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.cli import main
plugins._HOST = plugins.load_plugins(extra=[("pointmass", pointmass_task)])
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def host(monkeypatch):
    loaded = plugins.load_plugins(extra=[("pointmass", pointmass_task)])
    monkeypatch.setattr(plugins, "_HOST", loaded)
    return loaded


def test_help_lists_every_option(host, capsys):
    assert main(["train", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--robot", "--task", "--device", "--num-envs", "--iterations", "--seed",
                   "--run-name",
                   "--set", "--resume", "--tensorboard"):
        assert option in text


def test_train_command_writes_a_run(host, tmp_path, capsys):
    code = main(["train", "--task", "pointmass", "--num-envs", "8", "--iterations", "2", "--seed",
                 "4",
                 "--run-name", "cli", "--log-dir", str(tmp_path), "--no-progress", "--set",
                 "ppo.lr=0.002"])
    assert code == 0
    assert "[DONE] 2 iterations" in capsys.readouterr().out
    run_dir = next((tmp_path / "cli").iterdir())
    import yaml

    args = yaml.safe_load((run_dir / "args.yaml").read_text())
    assert args["config"]["ppo"]["learning_rate"] == 0.002
    assert args["config"]["seed"] == 4 and args["config"]["task"] == "pointmass"
    assert args["config"]["policy"]["actor_hidden"] == [32, 32]  # the task's policy section


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("ppo.learning_rat=1", "did you mean ppo.learning_rate"),
        ("ppo.gamma=fast", "expects a number"),
        ("task.dimz=3", "did you mean task.dims"),
        ("nonsense", "not key=value"),
        ("ppo.num_mini_batches=5", "does not divide the rollout"),
        ("ppo.gamma=2", "outside its range"),
        ("ppo.learning_rate=-1e-3", "outside its range"),
        ("ppo.lam=.nan", "outside its range"),
        ("iterations=0", "must all be ≥ 1"),
    ],
)
def test_bad_setting_is_a_config_error_naming_the_key(host, tmp_path, capsys, setting, message):
    code = main(["train", "--task", "pointmass", "--num-envs", "8", "--iterations", "1",
                 "--log-dir", str(tmp_path), "--no-progress", "--set", setting])
    assert code == 2
    assert message in capsys.readouterr().err


def test_resume_of_a_directory_without_args_yaml_is_refused(host, tmp_path, capsys):
    code = main(["train", "--no-progress", "--resume", str(tmp_path)])
    assert code == 2
    assert "not a run directory" in capsys.readouterr().err


def test_resume_refuses_options_that_would_change_the_run(host, tmp_path, capsys):
    code = main(["train", "--task", "pointmass", "--no-progress", "--resume", str(tmp_path)])
    assert code == 2
    assert "cannot change task" in capsys.readouterr().err


def test_motion_is_required_for_tracking_tasks(host, tmp_path, capsys):
    if "tracking" not in host.registry.names("tasks"):
        pytest.skip("tracking task not installed")
    code = main(["train", "--iterations", "1", "--log-dir", str(tmp_path), "--no-progress"])
    assert code == 2
    assert "tracks a reference motion" in capsys.readouterr().err


def test_sigterm_mid_run_checkpoints_exits_cleanly_and_resumes(tmp_path):
    cmd = [sys.executable, "-c", CLI_WITH_POINTMASS, "train", "--task", "pointmass", "--num-envs",
           "8",
           "--iterations", "100000", "--run-name", "sig", "--log-dir", str(tmp_path),
           "--no-progress",
           "--set", "runner.save_interval=100000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.time() + 120
        csv_path = None
        while time.time() < deadline:
            runs = (
                list((tmp_path / "sig").glob("*/train.csv")) if (tmp_path / "sig").exists() else []
            )
            if runs and len(read_csv_rows(runs[0])[1]) >= 3:
                csv_path = runs[0]
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert csv_path is not None, "training did not start"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "[STOPPED] SIGTERM" in out
    run_dir = csv_path.parent
    (last, _), = numbered_checkpoints(run_dir)
    rows = read_csv_rows(csv_path)[1]
    assert int(rows[-1]["iteration"]) == last  # every logged iteration is in the checkpoint
    host = plugins.load_plugins(extra=[("pointmass", pointmass_task)])
    out = run_training(host.registry,
                       TrainRequest(resume=str(run_dir), iterations=last + 2, progress=False))
    assert out.result.status == "finished" and out.result.iteration == last + 2
    assert [int(r["iteration"]) for r in read_csv_rows(csv_path)[1]] == list(range(1, last + 3))


def test_tensorboard_writes_events_or_says_what_to_install(host, tmp_path, capsys):
    code = main(["train", "--task", "pointmass", "--num-envs", "8", "--iterations", "1",
                 "--run-name", "tb",
                 "--log-dir", str(tmp_path), "--no-progress", "--tensorboard"])
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        assert code == 2
        assert "pip install 'primebot[tensorboard]'" in capsys.readouterr().err
        return
    assert code == 0
    assert list((tmp_path / "tb").glob("*/tensorboard/events.out.tfevents.*"))


def test_resume_with_a_changed_learning_rate_is_applied_and_recorded(host, tmp_path, capsys):
    import yaml

    from primebot.pipeline.train.checkpoints import load_checkpoint

    common = ["--no-progress"]
    assert main(["train", "--task", "pointmass", "--num-envs", "8", "--iterations", "1",
                 "--log-dir", str(tmp_path),
                 *common]) == 0
    run_dir = next((tmp_path / "pointmass").iterdir())
    assert main(["train", "--resume", str(run_dir), "--iterations", "2", "--set", "ppo.lr=1e-4",
                 "--set", "ppo.schedule=fixed", *common]) == 0
    args = yaml.safe_load((run_dir / "args.yaml").read_text())
    assert args["config"]["ppo"]["learning_rate"] == 1e-4
    assert args["resumes"][0]["from"] == "model_1.pt" and args["resumes"][0]["set"] == [
        "ppo.learning_rate=0.0001", "ppo.schedule=fixed"]
    assert load_checkpoint(run_dir / "model_2.pt")["learner"]["learning_rate"] == 1e-4
    capsys.readouterr()
    code = main(["train", "--resume", str(run_dir), "--set", "policy.actor_hidden=[8]", *common])
    assert code == 2 and "cannot change policy.actor_hidden" in capsys.readouterr().err


def test_resume_refuses_to_go_back_in_iterations(host, tmp_path, capsys):
    assert main(["train", "--task", "pointmass", "--num-envs", "8", "--iterations", "2",
                 "--log-dir", str(tmp_path),
                 "--no-progress"]) == 0
    run_dir = next((tmp_path / "pointmass").iterdir())
    assert main(["train", "--resume", str(run_dir), "--iterations", "1", "--no-progress"]) == 2
    assert "would go back" in capsys.readouterr().err


@pytest.mark.parametrize(("damage", "message"), [
    ("inf", "body_pos_w"),
    ("fps30", "fps is 30"),
    ("quat", "quaternion norm"),
], ids=["inf", "30fps", "quaternion"])
def test_train_refuses_an_invalid_motion_before_making_a_run(host, tmp_path, capsys, damage,
                                                             message):
    import dataclasses

    from primebot.pipeline.motion.format import load_motion, save_motion

    motion = load_motion(TESTS.parent / "motions" / "wave.npz")
    if damage == "inf":
        motion.body_pos_w[7, 2, 1] = float("inf")
    elif damage == "fps30":
        motion = dataclasses.replace(motion, fps=30.0)
    else:
        motion.body_quat_w[3:6, 1] *= 1.5
    path = tmp_path / "bad.npz"
    save_motion(motion, path)
    code = main(["train", str(path), "--num-envs", "8", "--iterations", "1", "--log-dir",
                 str(tmp_path / "logs"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 5 and message in err and "bad.npz" in err
    assert not (tmp_path / "logs").exists()
