"""Which part of training's randomisation ends a policy's episodes? One part removed at a time.

A tracking run whose checks stop tracking as soon as its curriculum reaches
full strength, or whose episodes last a second at full strength, learns
little from those episodes. This says which part is to blame: it plays the
run's policy (the Gaussian's mean) in the run's own training environment,
every randomisation at full strength (no curriculum), ``--envs`` envs for
``--seconds`` seconds, and counts the falls (terminations); then again with
each part of ``task.randomization`` removed in turn (a reset noise zeroed, a
push or a physics spread switched off), and with all of it off. Per variant
it prints the falls per env-minute, the mean seconds between falls and the
share of the falls that removing the part prevents.

``--set KEY=VALUE`` (repeatable, as ``primebot train --set``) changes the
training configuration first, so a candidate randomisation can be tried on
the same policy before a training run is spent on it. Usage::

    python tools/bench_randomization.py RUN_DIR
    python tools/bench_randomization.py RUN_DIR --checkpoint model_2500.pt \\
        --set "task.randomization.push.speed=[0.1,0.25]"
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

import numpy as np

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.train_config import parse_set, set_value
from primebot.pipeline.train.trained_policy import load_trained_policy, one_torch_thread

NOT_PARTS = ("enabled", "curriculum", "calm_envs")
"""Keys of ``task.randomization`` that are switches, not parts of the randomisation."""


def removed(randomization: dict[str, Any], part: str) -> dict[str, Any]:
    """A copy of ``randomization`` without ``part``: a range set to zero where the task always
    draws one (the reset noise: {axis: [low, high]} or [low, high]), else the part switched off
    (null)."""
    out = copy.deepcopy(randomization)
    value = out[part]
    if isinstance(value, dict) and value and all(isinstance(v, (list, tuple))
                                                 for v in value.values()):
        out[part] = {axis: [0.0, 0.0] for axis in value}
    elif part.startswith("reset_"):
        out[part] = [0.0, 0.0]
    else:
        out[part] = None
    return out


def variants(task_config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Task configurations by name: ``full``, ``without <part>`` for each part, ``none``."""
    randomization = task_config["randomization"]
    full = copy.deepcopy(task_config)
    full["randomization"]["curriculum"] = None  # full strength throughout
    full["randomization"]["calm_envs"] = 0.0  # in every env
    out = {"full": full}
    for part in randomization:
        if part in NOT_PARTS or randomization[part] is None:
            continue
        config = copy.deepcopy(full)
        config["randomization"] = removed(full["randomization"], part)
        out[f"without {part}"] = config
    none = copy.deepcopy(full)
    none["randomization"]["enabled"] = False
    out["none"] = none
    return out


def count_falls(spec: Any, robot: Any, motion: Any, registry: Any, policy: Any,
                task_config: dict[str, Any], envs: int, seconds: float, seed: int,
                action_std: float = 0.0) -> tuple[int, int, float]:
    """(terminations, time-outs, env-minutes played) of ``policy``, ``envs`` envs for
    ``seconds`` each; ``action_std`` > 0 adds training's exploration (Gaussian noise of that
    standard deviation on every action)."""
    rng = np.random.default_rng(seed)
    env = spec.make_env(robot=robot, motion=motion, num_envs=envs, seed=seed,
                        config=task_config, registry=registry)
    falls = timeouts = 0
    try:
        steps = max(1, round(seconds / env.step_dt))
        obs, _ = env.reset()
        for _ in range(steps):
            actions = policy.act(obs)
            if action_std > 0:
                actions = actions + rng.normal(0.0, action_std, actions.shape).astype(np.float32)
            result = env.step(actions)
            obs = result.obs
            falls += int(result.terminated.sum())
            timeouts += int(result.truncated.sum())
        return falls, timeouts, envs * steps * env.step_dt / 60.0
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a tracking run directory (args.yaml and checkpoints)")
    parser.add_argument("--checkpoint", default=None,
                        help="model_<it>.pt, an iteration or 'best' [default: as eval chooses]")
    parser.add_argument("--envs", type=int, default=128, help="envs played together [128]")
    parser.add_argument("--seconds", type=float, default=15.0,
                        help="seconds of each env's time per variant [15]")
    parser.add_argument("--seed", type=int, default=3,
                        help="seed of the envs' draws and of the exploration noise [3]")
    parser.add_argument("--action-std", type=float, default=0.0,
                        help="exploration noise on every action, as training samples them (the "
                             "run's action_std in train.csv); 0: the mean action [0]")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="a training setting changed first (repeatable)")
    args = parser.parse_args()

    host = load_plugins()
    registry = host.registry
    policy = load_trained_policy(args.run_dir, args.checkpoint)
    cfg = copy.deepcopy(policy.config)
    spec = registry.get("tasks", cfg.task)
    for key, value in parse_set(args.overrides):
        set_value(cfg, key, value, tuple(spec.open_config_sections))
    if "randomization" not in cfg.task_config:
        raise SystemExit(f"task {cfg.task!r} has no randomization section")
    robot = registry.get("robots", cfg.robot)
    motion = policy.motion() if spec.needs_motion else None
    print(f"{policy.checkpoint} (iteration {policy.iteration}); {args.envs} envs × "
          f"{args.seconds:g} s per variant; randomisation at full strength; "
          + (f"exploration noise {args.action_std:g}" if args.action_std > 0 else "mean action"))
    print(f"{'variant':32s} {'falls/env-min':>13s} {'s between falls':>16s} "
          f"{'falls prevented':>16s} {'time-outs':>9s}")
    baseline = None
    with one_torch_thread():
        for name, config in variants(cfg.task_config).items():
            t0 = time.perf_counter()
            falls, timeouts, env_minutes = count_falls(spec, robot, motion, registry, policy,
                                                       config, args.envs, args.seconds, args.seed,
                                                       args.action_std)
            rate = falls / env_minutes
            baseline = rate if baseline is None else baseline
            prevented = "" if name == "full" else f"{1.0 - rate / max(baseline, 1e-9):+.0%}"
            between = 60.0 / rate if rate > 0 else np.inf
            print(f"{name:32s} {rate:13.1f} {between:16.2f} {prevented:>16s} {timeouts:9d}"
                  f"   ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
