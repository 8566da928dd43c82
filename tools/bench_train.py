"""Benchmark PPO training iterations end to end: env-steps/s and where the time goes.

    python tools/bench_train.py motions/wave.npz --num-envs 1024 --iterations 5

Builds the task exactly as ``primebot train`` does (default networks unless
``--set``), runs ``--warmup`` iterations, then times ``--iterations`` more and
prints per-iteration medians of: env stepping (MuJoCo + task MDP), policy
forward on the device, transfers (staging, host↔device copies, bookkeeping),
update, and end-to-end env-steps/s. Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from primebot.pipeline.devices.backend import resolve_device
from primebot.pipeline.hooks.host import get_host
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.train.on_policy_runner import OnPolicyRunner, auto_update_threads
from primebot.pipeline.train.session import TrainRequest, resolve_auto_settings, resolve_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sim import PhysicsLimit  # noqa: E402


def main() -> None:
    # torch loads only after primebot.pipeline has set OMP_WAIT_POLICY (idle OpenMP threads sleep),
    # as in `primebot train`; a top-level `import torch` above the primebot imports would measure
    # spinning threads
    import torch

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("motion", nargs="?", default="motions/wave.npz")
    parser.add_argument("--task", default="tracking")
    parser.add_argument("--device", default=None)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="MuJoCo threads (default: the task's choice)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    registry = get_host().registry
    device = resolve_device(registry, args.device)
    request = TrainRequest(motion=args.motion, task=args.task, num_envs=args.num_envs,
                           iterations=args.warmup + args.iterations, sets=args.sets)
    cfg = resolve_config(registry, request, device.torch_device)
    resolve_auto_settings(cfg, device.backend)  # as a new training run does
    spec = registry.get("tasks", cfg.task)
    robot = registry.get("robots", cfg.robot) if cfg.robot else None
    motion = load_motion(args.motion) if spec.needs_motion else None
    env = spec.make_env(robot=robot, motion=motion, num_envs=cfg.num_envs, seed=cfg.seed,
                        config=cfg.task_config,
                        registry=registry, num_threads=args.threads)
    runner = OnPolicyRunner(env, cfg, autocast_dtype=device.backend.autocast_dtype(),
                            progress=False)
    default_threads = torch.get_num_threads()
    steps = cfg.ppo.num_steps_per_env * cfg.num_envs
    samples: dict[str, list[float]] = {k: []
                                       for k in ("env_s", "policy_s", "transfer_s", "collect_s",
                                                 "update_s",
                                                        "iteration_s", "sps", "physics_sps")}
    limit = PhysicsLimit(env, env.sim.num_threads)
    start = time.perf_counter()
    for i in range(args.warmup + args.iterations):
        t0 = time.perf_counter()
        if i < args.warmup:  # record the states the physics limit steps from
            with limit.recording():
                runner._one_iteration(default_threads, start)
        else:
            runner._one_iteration(default_threads, start)
        device.backend.synchronize()
        elapsed = time.perf_counter() - t0
        if i < args.warmup:
            continue
        # the physics limit, interleaved with the iterations so a busy machine slows both alike
        samples["physics_sps"].append(steps / limit.seconds(cfg.ppo.num_steps_per_env))
        for key in ("env_s", "policy_s", "transfer_s", "collect_s", "update_s"):
            samples[key].append(runner.timing[key])
        samples["iteration_s"].append(elapsed)
        samples["sps"].append(steps / elapsed)
    physics_dt, decimation = float(env.sim.physics_dt), int(env.sim.decimation)
    env.close()
    medians = {key: statistics.median(values) for key, values in samples.items()}
    report = {
        "task": cfg.task, "device": device.torch_device, "num_envs": cfg.num_envs,
        "steps_per_env": cfg.ppo.num_steps_per_env, "actor_hidden": list(cfg.policy.actor_hidden),
        "learning_epochs": cfg.ppo.num_learning_epochs,
        "physics_dt": physics_dt, "decimation": decimation,
        "iterations_timed": args.iterations, "cpus": os.cpu_count(),
        "collect_threads": cfg.runner.collect_threads,
        "update_threads": cfg.runner.update_threads or auto_update_threads(),
        **{f"median_{k}": round(v, 4) for k, v in medians.items()},
        "env_steps_per_s": round(medians["sps"]),
        "collect_only_env_steps_per_s": round(steps / medians["collect_s"]),
        "physics_limit_env_steps_per_s": round(medians["physics_sps"]),
        "ratio_to_physics_limit": round(medians["sps"] / medians["physics_sps"], 3),
        "mixed_precision": runner.ppo.autocast_dtype is not None,
        "rollout_mixed_precision": runner.ppo.rollout_autocast_dtype is not None,
        "compile_update": cfg.ppo.compile_update == "on",
        "compile_failure": runner.ppo.compile_failure,
    }
    if args.json:
        print(json.dumps(report))
        return
    it = medians["iteration_s"]
    print(f"{cfg.task} on {device.torch_device}: {cfg.num_envs} envs x {cfg.ppo.num_steps_per_env} "
          f"steps, physics {1 / report['physics_dt']:g} Hz x {report['decimation']}, "
          f"actor {list(cfg.policy.actor_hidden)}, {cfg.ppo.num_learning_epochs} learning epochs, "
          f"{args.iterations} timed iterations (median); mixed precision: update "
          f"{cfg.ppo.mixed_precision}, "
          f"rollout {cfg.ppo.rollout_mixed_precision}; compiled update: {cfg.ppo.compile_update}"
          + (f" (failed: {report['compile_failure']})" if report["compile_failure"] else ""))
    for key in ("env_s", "policy_s", "transfer_s", "update_s"):
        print(f"  {key[:-2]:<9} {medians[key]:8.3f} s  {100 * medians[key] / it:5.1f} %")
    print(f"  iteration {it:8.3f} s")
    print(f"end to end: {report['env_steps_per_s']} env-steps/s (collection alone: "
          f"{report['collect_only_env_steps_per_s']} env-steps/s)")
    print(f"physics limit (Batch.step alone, same run): {report['physics_limit_env_steps_per_s']} "
          "env-steps/s; "
          f"end to end / limit = {report['ratio_to_physics_limit']:.3f}")


if __name__ == "__main__":
    main()
