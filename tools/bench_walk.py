"""Benchmark learning speed on the ``walk`` task (seed 000; docs/tasks.md, "Benchmark").

For each seed, train ``walk`` on ``biped4`` with the task's preset through the
real trainer (``OnPolicyRunner``, configuration resolved as ``primebot train
--task walk`` resolves it) and record every finished episode's return with
the env-step count and wall-clock at which it finished. Reported per seed:

  steps_to_threshold   env steps until the moving average of the last
                       ``--window`` episode returns first reaches the task's
                       walking threshold (walking ≥ 0.5 m/s for a whole
                       episode: 40.0 with the default reward);
  seconds_to_threshold wall-clock of training up to that point;
  steps_to_threshold_w100  the same with the trainer's own 100-episode
                       average (train.csv ``episode_return``), when reached;
  env_steps_per_s      env steps / wall-clock over the whole run (collection
                       and PPO updates together, as seed 000 counts);
  env_steps_per_cpu_s  env steps / CPU seconds of this process: on a machine
                       shared with other jobs, the rate one free core gives.

then the median and range over seeds. Seed 000 reports ~160k env steps
(GPU) / ~180k (NPU) and 2,600 / 2,200 env-steps/s. Usage::

    python tools/bench_walk.py                            # 5 seeds, cpu
    python tools/bench_walk.py --device cuda --json out.json
    python tools/bench_walk.py --seeds 0 1 --set policy.critic_hidden=[256,256,128]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from primebot.pipeline.sim.env import StepResult, VecEnv


class EpisodeRecorder(VecEnv):
    """Passes a VecEnv through and records (env steps, seconds, return) of every finished episode.

    Once the ``windows`` moving averages have all reached ``threshold`` (or
    ``max_steps`` env steps have run) it asks the runner to stop after the
    current iteration.
    """

    def __init__(self, env: VecEnv, threshold: float, windows: tuple[int, ...],
                 max_steps: int) -> None:
        self.env = env
        for name in ("num_envs", "num_obs", "num_critic_obs", "num_actions", "max_episode_length",
                     "step_dt"):
            setattr(self, name, getattr(env, name))
        self.threshold = threshold
        self.windows = windows
        self.max_steps = max_steps
        self.runner: Any = None
        self.env_steps = 0
        self.start = time.perf_counter()
        self.episodes: list[tuple[int, float, float]] = []
        self.hits: dict[int, tuple[int, float]] = {}
        self._returns = np.zeros(env.num_envs)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        return self.env.reset()

    def step(self, actions: np.ndarray) -> StepResult:
        result = self.env.step(actions)
        self.env_steps += self.num_envs
        self._returns += result.reward
        done = np.flatnonzero(result.terminated | result.truncated)
        if done.size:
            now = time.perf_counter() - self.start
            for i in done:
                self.episodes.append((self.env_steps, now, float(self._returns[i])))
            self._returns[done] = 0.0
            self._check_windows(now)
        if self.runner is not None and (len(self.hits) == len(self.windows)
                                        or self.env_steps >= self.max_steps):
            self.runner.request_stop("benchmark done")
        return result

    def _check_windows(self, now: float) -> None:
        for window in self.windows:
            if window in self.hits or len(self.episodes) < window:
                continue
            average = statistics.fmean(r for _, _, r in self.episodes[-window:])
            if average >= self.threshold:
                self.hits[window] = (self.env_steps, now)

    def state_dict(self) -> dict[str, Any]:
        return self.env.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.env.load_state_dict(state)

    def close(self) -> None:
        self.env.close()


def run_seed(seed: int, device: str, sets: list[str], window: int,
             max_steps: int) -> dict[str, Any]:
    """Train one seed until both averages reach the threshold (or ``max_steps``); return its
    figures."""
    from primebot.pipeline.devices.backend import resolve_device
    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.on_policy_runner import EPISODE_WINDOW, OnPolicyRunner
    from primebot.pipeline.train.session import TrainRequest, resolve_auto_settings, resolve_config

    host = load_plugins()
    resolved = resolve_device(host.registry, device)
    request = TrainRequest(task="walk", robot="biped4", seed=seed, sets=list(sets))
    cfg = resolve_config(host.registry, request, resolved.torch_device)
    resolve_auto_settings(cfg, resolved.backend)  # as a new training run does
    rollout = cfg.num_envs * cfg.ppo.num_steps_per_env
    cfg.iterations = math.ceil(max_steps / rollout)
    spec = host.registry.get("tasks", "walk")
    env = spec.make_env(
        robot=host.registry.get("robots", cfg.robot), motion=None, num_envs=cfg.num_envs,
        seed=cfg.seed,
        config=cfg.task_config, registry=host.registry, num_threads=None,
    )
    windows = tuple(sorted({window, EPISODE_WINDOW}))
    recorder = EpisodeRecorder(env, env.walking_threshold, windows, max_steps)
    runner = OnPolicyRunner(recorder, cfg, autocast_dtype=resolved.backend.autocast_dtype(),
                            progress=False)
    recorder.runner = runner
    recorder.start = time.perf_counter()
    cpu_start = time.process_time()
    try:
        runner.learn()
    finally:
        recorder.close()
    wall = time.perf_counter() - recorder.start
    cpu = time.process_time() - cpu_start
    hit = recorder.hits.get(window)
    hit100 = recorder.hits.get(EPISODE_WINDOW)
    last = [r for _, _, r in recorder.episodes[-window:]]
    return {
        "seed": seed,
        "device": resolved.torch_device,
        "torch_threads": {"collect": cfg.runner.collect_threads,
                          "update": cfg.runner.update_threads},
        "physics_threads": env.sim.num_threads,
        "threshold": env.walking_threshold,
        "steps_to_threshold": hit[0] if hit else None,
        "seconds_to_threshold": round(hit[1], 2) if hit else None,
        f"steps_to_threshold_w{EPISODE_WINDOW}": hit100[0] if hit100 else None,
        "env_steps": recorder.env_steps,
        "wall_s": round(wall, 2),
        "env_steps_per_s": round(recorder.env_steps / wall, 1),
        # CPU seconds this process used (all its threads): a rate that other jobs on the machine
        # barely move.
        "cpu_s": round(cpu, 2),
        "env_steps_per_cpu_s": round(recorder.env_steps / cpu, 1),
        "final_average_return": round(statistics.fmean(last), 2) if last else None,
        "episodes": len(recorder.episodes),
        # Other processes on the machine slow every figure above; record how busy it was.
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpu_cores": os.cpu_count(),
    }


def _summary(values: list[float | None]) -> dict[str, Any]:
    reached = [v for v in values if v is not None]
    if not reached:
        return {"median": None, "min": None, "max": None, "reached": 0, "of": len(values)}
    # A seed that never reached the threshold counts as slower than all others.
    median = statistics.median([v if v is not None else math.inf for v in values])
    return {"median": median, "min": min(reached), "max": max(reached), "reached": len(reached),
            "of": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--device", default="cpu", help="cpu, cuda, npu (default cpu)")
    parser.add_argument("--window", type=int, default=20,
                        help="episodes in the moving average (default 20)")
    parser.add_argument("--max-steps", type=int, default=400_000,
                        help="give up on a seed after this many env steps")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="override a setting, as primebot train --set")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    rows = []
    for seed in args.seeds:
        row = run_seed(seed, args.device, args.sets, args.window, args.max_steps)
        rows.append(row)
        print(json.dumps(row), flush=True)
    w100 = next(k for k in rows[0] if k.startswith("steps_to_threshold_w"))
    summary = {
        "window": args.window,
        "sets": args.sets,
        "steps_to_threshold": _summary([r["steps_to_threshold"] for r in rows]),
        "seconds_to_threshold": _summary([r["seconds_to_threshold"] for r in rows]),
        w100: _summary([r[w100] for r in rows]),
        "env_steps_per_s": _summary([r["env_steps_per_s"] for r in rows]),
        "env_steps_per_cpu_s": _summary([r["env_steps_per_cpu_s"] for r in rows]),
    }
    print(json.dumps({"summary": summary}, indent=2))
    if args.json:
        from pathlib import Path

        from primebot.pipeline.atomic import atomic_write_text

        atomic_write_text(Path(args.json),
                          json.dumps({"seeds": rows, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
