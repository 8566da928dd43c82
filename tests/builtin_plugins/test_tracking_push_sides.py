"""Kicks by the side of the robot they point to: every training kick remembers its side, and a
verdict check's pushed episodes split by it, as the stress test's do (train.csv's
``verdict/robust_<side>``)."""

from __future__ import annotations

import numpy as np
from tracking_env import FULL_STRENGTH, make_env

from primebot.pipeline.api import push_sector, quat_from_axis_angle


def test_every_kick_is_remembered_by_the_side_of_the_robot_it_points_to(host, motion):
    env = make_env(host, motion, num_envs=64, seed=3, config=FULL_STRENGTH)
    env.reset()
    assert (env.pusher.side == -1).all()
    # robots facing every which way: the side is the robot's, not the world's
    yaw = np.random.default_rng(1).uniform(-np.pi, np.pi, 64)
    env.sim.qpos[:, env.model_info.root_quat_qpos] = quat_from_axis_angle(
        np.array([0.0, 0.0, 1.0]), yaw)
    before = env.sim.qvel[:, :2].copy()
    env.pusher.countdown[:] = 1
    assert env.pusher.step() == 64
    kick = env.sim.qvel[:, :2] - before
    assert np.array_equal(push_sector(np.arctan2(kick[:, 1], kick[:, 0]) - yaw), env.pusher.side)
    assert len(set(env.pusher.side.tolist())) == 4
    # a new episode keeps its last kick's side until the next kick (a check reads it after the
    # reset that ends the kicked episode)
    env._reset_envs(np.arange(64))
    assert (env.pusher.side >= 0).all()


def test_training_logs_its_checks_pushed_episodes_by_side(tmp_path):
    from tracking_run import TINY, WAVE, tracking_host

    from primebot.pipeline.api import PUSH_DIRECTIONS
    from primebot.pipeline.train.log import read_csv_rows
    from primebot.pipeline.train.session import TrainRequest, run_training

    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3,
                           log_dir=str(tmp_path), progress=False,
                           sets=[*TINY, "runner.check_interval=1"])
    out = run_training(tracking_host().registry, request)
    header, rows = read_csv_rows(out.run_dir / "train.csv")
    sides = [k.removeprefix("verdict/robust_") for k in header
             if k.startswith("verdict/robust_") and k != "verdict/robust_success_rate"]
    assert sides and set(sides) <= set(PUSH_DIRECTIONS)
    assert all(0.0 <= float(rows[-1][f"verdict/robust_{side}"]) <= 1.0 for side in sides)
