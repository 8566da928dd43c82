"""``primebot train`` on the real tracking task and the shipped wave motion (q1, MuJoCo)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.checkpoints import load_checkpoint
from primebot.pipeline.train.log import WALL_CLOCK_COLUMNS, read_csv_rows
from primebot.pipeline.train.session import TrainRequest, run_training

WAVE = Path(__file__).resolve().parents[2] / "motions" / "wave.npz"
SMALL = ["policy.actor_hidden=[64,64]", "policy.critic_hidden=[64,64]", "ppo.num_steps_per_env=8",
         "task.log_reward_terms=false"]


@pytest.fixture(scope="module")
def registry():
    registry = load_plugins().registry
    if "tracking" not in registry.names("tasks") or not WAVE.is_file():
        pytest.skip("tracking task or motions/wave.npz not available")
    return registry


def _train(registry, log_dir, iterations):
    return run_training(registry,
                        TrainRequest(motion=str(WAVE), num_envs=8, iterations=iterations, seed=7,
                                               sets=SMALL, log_dir=str(log_dir), progress=False))


def test_train_wave_writes_run_with_reward_terms(registry, tmp_path):
    out = _train(registry, tmp_path, 2)
    header, rows = read_csv_rows(out.run_dir / "train.csv")
    assert len(rows) == 2
    assert out.runner.env.num_obs == 119 and out.runner.env.num_actions == 22
    args = (out.run_dir / "args.yaml").read_text()
    assert "motion_sha256" in args and "robot: q1" in args


def test_tracking_resume_is_bit_for_bit(registry, tmp_path):
    straight = _train(registry, tmp_path / "a", 4)
    first = _train(registry, tmp_path / "b", 2)
    run_training(registry, TrainRequest(resume=str(first.run_dir), iterations=4, progress=False))
    a = load_checkpoint(straight.run_dir / "model_4.pt")["learner"]["actor_critic"]
    b = load_checkpoint(first.run_dir / "model_4.pt")["learner"]["actor_critic"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in WALL_CLOCK_COLUMNS}  # noqa: E731
                          for r in rows]
    assert strip(read_csv_rows(straight.run_dir / "train.csv")[1]) == strip(
        read_csv_rows(first.run_dir / "train.csv")[1]
    )
