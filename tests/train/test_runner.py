"""The training loop on the point-mass task: learning, resume equivalence, NaN guard, logging."""

from __future__ import annotations

import logging
import sys
import time

import pointmass_task
import pytest
import torch

from primebot.pipeline.errors import NonFiniteError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.checkpoints import load_checkpoint, numbered_checkpoints
from primebot.pipeline.train.log import WALL_CLOCK_COLUMNS, TrainingLog, read_csv_rows
from primebot.pipeline.train.session import TrainRequest, run_training


@pytest.fixture(scope="module")
def registry():
    return load_plugins(extra=[("pointmass", pointmass_task)]).registry


SMALL_POLICY = ["policy.actor_hidden=[32,32]", "policy.critic_hidden=[32,32]"]
"""The point mass needs no 512-256-128 network: a small one keeps these tests' updates cheap."""


def _train(registry, tmp_path, sets=(), **kwargs):
    request = TrainRequest(task="pointmass", num_envs=16, log_dir=str(tmp_path), progress=False,
                           sets=[*SMALL_POLICY, *sets], **kwargs)
    return run_training(registry, request)


def _rows_without_wall_clock(run_dir):
    header, rows = read_csv_rows(run_dir / "train.csv")
    return [{k: v for k, v in row.items() if k not in WALL_CLOCK_COLUMNS} for row in rows], header


def test_run_directory_holds_args_csv_curve_and_checkpoints(registry, tmp_path):
    out = _train(registry, tmp_path, iterations=6, run_name="pm")
    run_dir = out.run_dir
    assert run_dir.parent.name == "pm"
    names = {p.name for p in run_dir.iterdir()}
    assert {"args.yaml", "train.csv", "train.png", "model_5.pt", "model_6.pt"} <= names
    header, rows = read_csv_rows(run_dir / "train.csv")
    assert [r["iteration"] for r in rows] == [str(i) for i in range(1, 7)]
    for column in ("env_steps", "reward_mean", "episode_return", "loss_surrogate", "loss_value",
                   "approx_kl",
                   "learning_rate", "action_std", "sps", "collect_s", "update_s"):
        assert column in header
    assert rows[-1]["env_steps"] == str(6 * 16 * 16)
    assert out.result.status == "finished"


def test_point_mass_policy_learns(registry, tmp_path):
    out = _train(registry, tmp_path, iterations=40, sets=["task.episode_length=20"])
    _, rows = read_csv_rows(out.run_dir / "train.csv")
    first = [float(r["reward_mean"]) for r in rows[:3]]
    # ten: one iteration's mean reward is noisy
    last = [float(r["reward_mean"]) for r in rows[-10:]]
    assert sum(last) / 10 > sum(first) / 3 + 0.1


def test_resume_continues_bit_for_bit(registry, tmp_path):
    straight = _train(registry, tmp_path / "a", iterations=8, seed=5)
    first = _train(registry, tmp_path / "b", iterations=4, seed=5)
    resumed = run_training(registry,
                           TrainRequest(resume=str(first.run_dir), iterations=8, progress=False))
    assert resumed.run_dir == first.run_dir and resumed.result.iteration == 8
    a = load_checkpoint(straight.run_dir / "model_8.pt")
    b = load_checkpoint(first.run_dir / "model_8.pt")
    for name, tensor in a["learner"]["actor_critic"].items():
        assert torch.equal(tensor, b["learner"]["actor_critic"][name]), name
    assert torch.equal(a["learner"]["obs_normalizer"]["mean"],
                       b["learner"]["obs_normalizer"]["mean"])
    rows_a, header_a = _rows_without_wall_clock(straight.run_dir)
    rows_b, header_b = _rows_without_wall_clock(first.run_dir)
    assert header_a == header_b
    assert rows_a == rows_b
    assert len(rows_a) == 8


def test_resume_skips_a_corrupt_checkpoint_and_redoes_the_later_csv_rows(registry, tmp_path,
                                                                         caplog):
    first = _train(registry, tmp_path, iterations=7, seed=2, sets=["runner.save_interval=5"])
    last = first.run_dir / "model_7.pt"
    last.write_bytes(last.read_bytes()[:1000])  # as if the disk filled while writing it
    with caplog.at_level("WARNING"):
        out = run_training(registry,
                           TrainRequest(resume=str(first.run_dir), iterations=7, progress=False))
    assert "model_7.pt is truncated or corrupt" in caplog.text and "falling back" in caplog.text
    assert out.result.iteration == 7
    _, rows = read_csv_rows(first.run_dir / "train.csv")
    assert [r["iteration"] for r in rows] == [str(i) for i in range(1, 8)]
    assert load_checkpoint(last)["iteration"] == 7  # rewritten, good again


def test_resume_refuses_a_checkpoint_without_its_best_check(registry, tmp_path):
    """A checkpoint without ``best_check`` (an older primebot's) is not resumed as if no check had
    won: a typed error naming the file and the fix."""
    from primebot.pipeline.errors import CheckpointError
    from primebot.pipeline.train.checkpoints import save_checkpoint

    first = _train(registry, tmp_path, iterations=2, seed=1)
    last = first.run_dir / "model_2.pt"
    older = {k: v for k, v in load_checkpoint(last).items()
             if k not in ("format", "version", "digest", "best_check")}
    save_checkpoint(last, older)
    with pytest.raises(CheckpointError, match="model_2.pt records no best_check") as info:
        run_training(registry,
                     TrainRequest(resume=str(first.run_dir), iterations=3, progress=False))
    assert "retrain" in info.value.fix


def test_resume_refuses_changed_settings(registry, tmp_path):
    from primebot.pipeline.errors import ConfigError

    first = _train(registry, tmp_path, iterations=1)
    with pytest.raises(ConfigError, match="cannot change ppo.gamma"):
        run_training(registry, TrainRequest(resume=str(first.run_dir), sets=["ppo.gamma=0.5"]))


def test_resume_refuses_a_run_of_another_version_of_the_tasks_settings(registry, tmp_path):
    """args.yaml records the version of the task's settings the run trained under; a resume under
    another refuses, naming the file, instead of reading the settings as they now mean."""
    import yaml

    from primebot.pipeline.errors import ConfigError
    from primebot.pipeline.rundir import read_args, write_args

    first = _train(registry, tmp_path, iterations=2)
    args = read_args(first.run_dir)
    assert args["run"]["task_config_version"] == 1  # the point mass's, TaskSpec's default
    args["run"]["task_config_version"] = 0
    write_args(first.run_dir, args)
    resume = TrainRequest(resume=str(first.run_dir), iterations=3, progress=False)
    with pytest.raises(ConfigError, match=r"records version 0 of task 'pointmass'") as info:
        run_training(registry, resume)
    assert "retrain" in info.value.fix
    del args["run"]["task_config_version"]  # written before versions: version 1
    (first.run_dir / "args.yaml").write_text(yaml.safe_dump(args), encoding="utf-8")
    assert run_training(registry, resume).result.iteration == 3
    assert read_args(first.run_dir)["run"]["task_config_version"] == 1


def test_nan_in_observations_stops_training_naming_it_and_writes_no_bad_checkpoint(
    registry, tmp_path
):
    # 16 steps per iteration: step 100 is in iteration 7, after model_5.pt was written.
    with pytest.raises(NonFiniteError,
                       match=r"non-finite observations at iteration 7, step 3 \(env 0, column 1\)"):
        _train(registry, tmp_path, iterations=10, run_name="nan", sets=["task.nan_at_step=100"])
    run_dir = next((tmp_path / "nan").iterdir())
    assert [it for it, _ in numbered_checkpoints(run_dir)] == [5]
    _, rows = read_csv_rows(run_dir / "train.csv")
    assert [r["iteration"] for r in rows] == [str(i) for i in range(1, 7)]


def test_non_finite_parameters_stop_the_update(registry, tmp_path, monkeypatch):
    from primebot.pipeline.ppo.algorithm import PPO

    original = PPO.update

    def poisoned(self):
        metrics = original(self)
        with torch.no_grad():
            self.actor_critic.log_std.fill_(float("inf"))
        self.nonfinite = [*self.nonfinite, "parameter log_std"]
        return metrics

    monkeypatch.setattr(PPO, "update", poisoned)
    with pytest.raises(NonFiniteError, match="parameter log_std in the PPO update of iteration 1"):
        _train(registry, tmp_path, iterations=3, run_name="inf")
    run_dir = next((tmp_path / "inf").iterdir())
    assert numbered_checkpoints(run_dir) == []


def test_logging_never_blocks_the_loop(tmp_path, monkeypatch):
    train_log = TrainingLog(tmp_path, plot_interval_s=1e9)
    original = TrainingLog._write

    def slow_write(self, row):
        time.sleep(0.05)
        original(self, row)

    monkeypatch.setattr(TrainingLog, "_write", slow_write)
    start = time.perf_counter()
    for i in range(1, 21):
        train_log.log({"iteration": i, "reward_mean": float(i)})
    queued = time.perf_counter() - start
    train_log.close()
    assert queued < 0.05  # 20 rows would take ≥ 1 s if log() waited for the writer
    _, rows = read_csv_rows(tmp_path / "train.csv")
    assert len(rows) == 20


def test_csv_is_flushed_each_row_and_grows_columns_for_new_terms(tmp_path):
    train_log = TrainingLog(tmp_path, plot_interval_s=1e9)
    train_log.log({"iteration": 1, "reward_mean": 0.5})
    deadline = time.time() + 5
    while time.time() < deadline:
        if len(read_csv_rows(tmp_path / "train.csv")[1]) == 1:
            break
        time.sleep(0.01)
    # readable while running
    assert read_csv_rows(tmp_path / "train.csv")[1][0]["reward_mean"] == "0.5"
    train_log.log({"iteration": 2, "reward_mean": 0.25, "episode/reach": 3.0})
    train_log.close()
    header, rows = read_csv_rows(tmp_path / "train.csv")
    assert header == ["iteration", "reward_mean", "episode/reach"]
    assert rows[0]["episode/reach"] == "" and rows[1]["episode/reach"] == "3.0"


def test_time_limit_finishes_the_run_early_with_a_checkpoint(registry, tmp_path):
    out = _train(registry, tmp_path, iterations=50, sets=["runner.time_limit_min=0.00001"])
    assert out.result.status == "finished" and out.result.iteration == 1
    assert (out.run_dir / "model_1.pt").is_file()


def test_a_time_limit_that_will_cut_training_short_is_said_early(registry, tmp_path, caplog,
                                                                 monkeypatch):
    """Where the time limit will end training, said once this session's first iterations (and its
    first verdict check) are paid for, not only after the limit: the squat with the long preset on
    2 AVX2 cores (stop 59) ran 1451 of its 6000 iterations, at about 2.3 s each, checks included."""
    from primebot.pipeline.train.time_budget import early_warning, projection_point
    from primebot.pipeline.train.train_config import TrainConfig

    cfg = TrainConfig(iterations=6000)
    cfg.runner.time_limit_min, cfg.runner.check_interval = 55, 25
    assert projection_point(cfg, checks=True) == 25
    cfg.runner.check_interval = 100
    assert (projection_point(cfg, checks=True), projection_point(cfg, checks=False)) == (100, 25)
    slow = early_warning(cfg, 100, 0, elapsed_s=230.0)
    assert "at 2.30 s an iteration (verdict checks included)" in slow
    assert "will end training around iteration 1434 of 6000, 24% of the training" in slow
    # a resume projects from its own pace and its own iterations
    assert "around iteration 2434 of 6000" in early_warning(cfg, 1100, 1000, elapsed_s=230.0)
    assert early_warning(cfg, 100, 0, elapsed_s=50.0) == ""  # 0.5 s each: all 6000 in time
    # the caller's longer limit is named where the run's own is shorter (a new run with the
    # pipeline's long preset instead of the default's 25 minutes)
    longer = (55.0, "--preset long")
    assert "--preset long" not in early_warning(cfg, 100, 0, elapsed_s=230.0, longer_budget=longer)
    cfg.runner.time_limit_min = 25
    assert "; --preset long trains up to 55 min; the end of training says how to train on" in (
        early_warning(cfg, 100, 0, elapsed_s=230.0, longer_budget=longer))
    cfg.runner.time_limit_min = 0
    assert early_warning(cfg, 100, 0, elapsed_s=230.0) == ""  # no limit
    # in a real run: 10000 iterations cannot fit 3 s, and it says so before the limit ends it
    # (projected after 3 iterations: a cold point-mass run may not reach 25 in the 3 s)
    monkeypatch.setattr("primebot.pipeline.train.time_budget.PROJECT_AFTER", 3)
    with caplog.at_level(logging.WARNING, logger="primebot.pipeline.train.on_policy_runner"):
        out = _train(registry, tmp_path, iterations=10000, sets=["runner.time_limit_min=0.05"])
    assert out.result.time_limited
    said = [r.getMessage() for r in caplog.records if "will end training around" in r.getMessage()]
    assert len(said) == 1 and "of 10000" in said[0]
    stopped = next(i for i, r in enumerate(caplog.records) if "training stopped" in r.getMessage())
    assert caplog.records.index(next(r for r in caplog.records
                                     if "will end training around" in r.getMessage())) < stopped


def test_a_warning_during_training_is_a_console_line_of_its_own_above_the_progress_bar(
        registry, tmp_path, capfd):
    """The console handler (``primebot``'s, on stderr) writes through the bar while it runs: the
    time limit's warning was glued after the bar's text (``… sps=3570]warning: at 2.17 s …``)."""
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger()
    root.addHandler(console)
    try:
        request = TrainRequest(task="pointmass", num_envs=16, log_dir=str(tmp_path), progress=True,
                               iterations=10000,
                               sets=[*SMALL_POLICY, "runner.time_limit_min=0.0005"])
        run_training(registry, request)
    finally:
        root.removeHandler(console)
    err = capfd.readouterr().err
    assert "train:" in err and "training stopped after iteration" in err
    # the bar's ETA counts to iteration 10000; beside it, the time the limit leaves
    assert "limit_in=00:00" in err
    line = next(part for part in err.replace("\r", "\n").split("\n") if "training stopped" in part)
    assert line.startswith("time limit of 0.0005 min reached")


def test_a_stop_by_signal_says_how_the_caller_trains_on(registry, tmp_path, caplog, monkeypatch):
    """Ctrl-C during the pipeline's training advised ``primebot train --resume``, a command that
    neither reruns the stages after train nor keeps pipeline.json current: the runner words it in
    its caller's command (``TrainRequest.train_on``)."""
    from primebot.pipeline.train import on_policy_runner

    def signal_at_once(request_stop):  # as if Ctrl-C came during the first iteration
        request_stop("SIGINT")
        return lambda: None

    monkeypatch.setattr(on_policy_runner, "install_stop_handlers", signal_at_once)
    with caplog.at_level(logging.WARNING, logger="primebot.pipeline.train.on_policy_runner"):
        out = _train(registry, tmp_path, iterations=50, run_name="pm",
                     train_on="primebot pipeline run --resume {run_dir} --from train")
    assert out.result.status == "interrupted" and out.result.iteration == 1
    said = next(r.getMessage() for r in caplog.records if "received" in r.getMessage())
    assert said == (f"SIGINT received: stopped after iteration 1; resume with: primebot pipeline "
                    f"run --resume {out.run_dir} --from train")


def test_stop_when_tracked_needs_checks(registry, tmp_path):
    from primebot.pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="check_interval"):
        _train(registry, tmp_path, iterations=2, sets=["runner.stop_when_tracked=true"])


def _close_in_thread(train_log: TrainingLog) -> BaseException | None:
    """close() on a helper thread, so a regression (close waiting forever) fails instead of hanging
    the suite."""
    import threading

    outcome: list[BaseException | None] = []

    def close() -> None:
        try:
            train_log.close()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=close, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "TrainingLog.close() never returned"
    return outcome[0]


def test_a_full_disk_under_the_log_stops_training_with_a_typed_error_and_never_hangs(
    tmp_path, monkeypatch
):
    import errno

    from primebot.pipeline.errors import DiskFullError

    def full(self, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TrainingLog, "_plot", full)
    train_log = TrainingLog(tmp_path, plot_interval_s=1e9)
    monkeypatch.setattr(TrainingLog, "_write", full)
    train_log.log({"iteration": 1, "reward_mean": 0.5})
    error = _close_in_thread(train_log)
    assert isinstance(error, DiskFullError) and "no space left" in str(error)
    with pytest.raises(DiskFullError):
        train_log.log({"iteration": 2})


def test_a_failing_plot_is_only_a_warning_and_close_returns(tmp_path, monkeypatch, caplog):
    def broken(self):
        raise ValueError("no fonts")

    monkeypatch.setattr(TrainingLog, "_plot", broken)
    train_log = TrainingLog(tmp_path, plot_interval_s=1e9)
    train_log.log({"iteration": 1, "reward_mean": 0.5})
    with caplog.at_level("WARNING"):
        assert _close_in_thread(train_log) is None
    assert "no fonts" in caplog.text


def test_atomic_write_on_a_full_disk_is_a_disk_full_error_and_leaves_the_old_file(tmp_path):
    import errno

    from primebot.pipeline.atomic import atomic_path, atomic_write_text
    from primebot.pipeline.errors import DiskFullError

    atomic_write_text(tmp_path / "a.txt", "old")
    with pytest.raises(DiskFullError, match="a.txt"), atomic_path(tmp_path / "a.txt"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert (tmp_path / "a.txt").read_text() == "old" and sorted(
        p.name for p in tmp_path.iterdir()
    ) == ["a.txt"]


# -- crash windows ---------------------------------------------------------------------------------
def test_a_torn_train_csv_row_does_not_survive_a_resume(registry, tmp_path):
    first = _train(registry, tmp_path, iterations=4, seed=3)
    csv_path = first.run_dir / "train.csv"
    text = csv_path.read_text(encoding="utf-8")
    # killed while appending the row of iteration 4: its line stops half-way, values cut short
    csv_path.write_text(text[: text.rstrip().rfind("\n") + 1] + text.rstrip().splitlines()[-1][:25],
                        encoding="utf-8")
    resumed = run_training(registry,
                           TrainRequest(resume=str(first.run_dir), iterations=6, progress=False))
    assert resumed.result.iteration == 6
    header, rows = read_csv_rows(csv_path)
    # the torn row is gone, not half-kept
    assert [r["iteration"] for r in rows] == ["1", "2", "3", "5", "6"]
    assert all(None not in r.values() and r["loss_value"] != "" for r in rows)
    assert csv_path.read_text(encoding="utf-8").endswith("\n")


def test_a_run_without_verdict_checks_evaluates_its_last_checkpoint(registry, tmp_path):
    from primebot.pipeline.train.trained_policy import load_trained_policy

    out = _train(registry, tmp_path, iterations=4)
    assert load_trained_policy(out.run_dir).iteration == 4


def test_a_run_its_time_limit_cut_short_is_told_how_fast_this_machine_was_and_how_to_train_on(
        tmp_path):
    """The README's wave on 2 AVX2 cores (stops 57 and 58): the default preset's 25 minutes reached
    723 of 2500 iterations, and the warning names the long preset; the long preset's 55 reached
    1586 of 6000, and the warning no longer tells that run to use the preset it ran. Each caller's
    own command: the pipeline's train stage advises ``pipeline run --resume … --from train``,
    ``primebot train`` (which has neither ``--from`` nor presets) its own ``--resume``."""
    from primebot.pipeline.stages.contract import StageContext
    from primebot.pipeline.stages.presets import (
        LONG_TRAINING_MIN,
        get_preset,
        longer_budget,
        resolve_settings,
    )
    from primebot.pipeline.train.settings_layers import TrainRequest
    from primebot.pipeline.train.time_budget import short_training
    from primebot.pipeline.train.train_config import TrainConfig
    from primebot.plugins.stages.training_stage import train_request

    assert f"runner.time_limit_min={LONG_TRAINING_MIN}" in get_preset("long").train_sets
    ctx = StageContext(run_dir=tmp_path, settings=resolve_settings("wave.npz"), registry=None,
                       stage="train")
    stage = train_request(ctx)
    assert (stage.train_on, stage.longer_budget) == (
        "primebot pipeline run --resume {run_dir} --from train", longer_budget())
    pipeline = stage.train_on.format(run_dir="/runs/wave")
    cfg = TrainConfig(num_envs=256, iterations=2500)
    cfg.runner.time_limit_min = 25
    default = short_training(cfg, 723, 0, pipeline, stage.longer_budget)
    assert "ended training at iteration 723 of 2500" in default
    assert "collected 2,961 env-steps/s where 2500 iterations in that time need about 10,240" in (
        default)
    assert "primebot pipeline run --resume /runs/wave --from train trains on" in default
    assert "--preset long trains up to 55 min" in default
    cli = short_training(cfg, 723, 0, TrainRequest().train_on.format(run_dir="/runs/wave"), None)
    assert "primebot train --resume /runs/wave trains on" in cli
    assert "--from" not in cli and "--preset" not in cli
    cfg.iterations, cfg.runner.time_limit_min = 6000, LONG_TRAINING_MIN
    long = short_training(cfg, 1586, 0, pipeline, stage.longer_budget)
    assert "1586 of 6000" in long and "--from train trains on" in long
    assert "--preset long" not in long
