"""Benchmark the tracking environment against the physics limit (docs/tasks.md, "Speed").

For each number of envs, in one process per size and interleaved repeats:

  (a) physics limit: ``mujoco.batch.Batch.step(nstep=decimation)`` alone on the
      same model (self-collision sensors and the env's per-env friction/mass
      included), default batch settings, from exactly the states (b) steps
      from (recorded in a pass of (b), copied in untimed), so both do the same
      physics work;
  (b) the full ``TrackingEnv.step`` (physics, state, terminations, rewards,
      resets, observations) under random actions;
  (c) (b) plus a CPU policy forward (512-256-128 ELU MLP, torch) and host-side
      Gaussian exploration noise, as a trainer collects.

Prints env-steps/s (medians over repeats), the ratios b/a and c/a, peak RSS
and the time split per stage of (b)/(c). Usage::

    python tools/bench_sim.py                    # 256 and 1024 envs, threads = cores
    python tools/bench_sim.py --num-envs 1024 --steps 60 --repeats 5 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class PhysicsLimit:
    """The physics limit of a tracking env: its model's ``Batch.step`` alone.

    A plain batch of the same model, with the env's per-env friction and mass,
    is stepped from states recorded while the env itself stepped (controls and
    pushes included, copied in untimed), so both do the same physics work.
    ``tools/bench_train.py`` reuses it to give its ratio to the limit.
    """

    def __init__(self, env, threads: int) -> None:
        from mujoco.batch import Batch

        self.env = env
        self.batch = Batch(env.model_info.model, env.num_envs, threads)
        for name in ("geom_friction", "body_mass", "body_inertia", "body_ipos"):
            values = env.sim.batch.expanded(name)
            if values is not None:
                self.batch.expand(name)[:] = values
        self.batch.set_const()
        self.recorded: list = []
        self._replayed = 0

    @contextlib.contextmanager
    def recording(self, limit: int = 40):
        """Record up to ``limit`` states the env's own batch steps from, while the block runs."""
        sim_batch = self.env.sim.batch
        env_batch_step = sim_batch.step

        def recording_step(*args, **kwargs):
            if len(self.recorded) < limit:
                self.recorded.append(sim_batch.state.copy())
            return env_batch_step(*args, **kwargs)

        sim_batch.step = recording_step  # an instance attribute shadows the method
        try:
            yield self
        finally:
            del sim_batch.step

    def seconds(self, count: int) -> float:
        """Seconds for ``count`` control steps of physics alone, from the recorded states."""
        elapsed = 0.0
        for _ in range(count):
            self.batch.state[:] = self.recorded[self._replayed % len(self.recorded)]
            self._replayed += 1
            start = time.perf_counter()
            self.batch.step(nstep=self.env.sim.decimation)
            elapsed += time.perf_counter() - start
        return elapsed


def run_one(
    num_envs: int,
    steps: int,
    repeats: int,
    threads: int,
    torch_threads: int,
    motion_path: str,
    robot_name: str = "q1",
) -> dict:
    """Measure (a), (b), (c) for one env count in this process; return the figures."""
    import numpy as np
    import torch

    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.motion.format import load_motion

    torch.set_num_threads(torch_threads)
    host = load_plugins()
    spec = host.registry.get("tasks", "tracking")
    robot = host.registry.get("robots", robot_name)
    motion = load_motion(motion_path)
    env = spec.make_env(
        robot=robot,
        motion=motion,
        num_envs=num_envs,
        seed=0,
        config={"log_reward_terms": False},
        registry=host.registry,
        num_threads=threads,
    )
    rss_env = _peak_rss_mb()
    rng = np.random.default_rng(0)
    n, j = env.num_envs, env.num_actions

    # (a) the same model, with the env's per-env friction/mass, on a plain batch,
    # stepped from exactly the states (b) steps from.
    limit = PhysicsLimit(env, threads)
    env.reset()
    with limit.recording():
        for _ in range(min(steps, 40)):
            env.step(rng.uniform(-1, 1, (n, j)).astype(np.float32))

    def physics(count: int) -> tuple[float, dict]:
        return limit.seconds(count), {}

    # (b) the env alone
    def env_steps(count: int) -> tuple[float, dict]:
        before = dict(env.timings)
        start = time.perf_counter()
        for _ in range(count):
            env.step(rng.uniform(-1, 1, (n, j)).astype(np.float32))
        return time.perf_counter() - start, {k: env.timings[k] - before[k] for k in env.timings}

    # (c) the env with a policy forward on the CPU
    policy = torch.nn.Sequential(
        torch.nn.Linear(env.num_obs, 512),
        torch.nn.ELU(),
        torch.nn.Linear(512, 256),
        torch.nn.ELU(),
        torch.nn.Linear(256, 128),
        torch.nn.ELU(),
        torch.nn.Linear(128, j),
    )
    std = np.full(j, 0.5, np.float32)
    obs = env.reset()[0]

    def with_policy(count: int) -> tuple[float, dict]:
        nonlocal obs
        before = dict(env.timings)
        infer = 0.0
        start = time.perf_counter()
        with torch.inference_mode():
            for _ in range(count):
                t0 = time.perf_counter()
                mean = policy(torch.from_numpy(obs)).numpy()
                actions = mean + std * rng.standard_normal(mean.shape, dtype=np.float32)
                infer += time.perf_counter() - t0
                obs = env.step(actions).obs
        split = {k: env.timings[k] - before[k] for k in env.timings}
        return time.perf_counter() - start, {**split, "policy": infer}

    # Interleave the three in blocks of 5 steps so that a busy machine
    # slows them alike; a repeat's figure sums its blocks.
    modes = {"a": physics, "b": env_steps, "c": with_policy}
    for fn in modes.values():  # warm-up
        fn(5)
    runs: dict[str, list[float]] = {m: [] for m in modes}
    splits: dict[str, list[dict]] = {m: [] for m in modes}
    block = 5
    for _ in range(repeats):
        seconds = dict.fromkeys(modes, 0.0)
        split_sum: dict[str, dict] = {m: {} for m in modes}
        done = 0
        while done < steps:
            count = min(block, steps - done)
            for m, fn in modes.items():
                elapsed, split = fn(count)
                seconds[m] += elapsed
                for k, v in split.items():
                    split_sum[m][k] = split_sum[m].get(k, 0.0) + v
            done += count
        for m in modes:
            runs[m].append(steps * n / seconds[m])
            splits[m].append({k: v / steps for k, v in split_sum[m].items()})
    a_runs, b_runs, c_runs = runs["a"], runs["b"], runs["c"]
    b_splits, c_splits = splits["b"], splits["c"]

    def median_split(splits: list[dict]) -> dict:
        return {k: statistics.median(s[k] for s in splits) * 1e3 for k in splits[0]}

    a, b, c = (statistics.median(r) for r in (a_runs, b_runs, c_runs))
    return {
        "num_envs": n,
        "threads": threads,
        "torch_threads": torch_threads,
        "steps": steps,
        "repeats": repeats,
        "a_physics_sps": a,
        "b_env_sps": b,
        "c_env_policy_sps": c,
        "b_over_a": b / a,
        "c_over_a": c / a,
        "ratios_per_repeat": {
            "b/a": [x / y for x, y in zip(b_runs, a_runs, strict=True)],
            "c/a": [x / y for x, y in zip(c_runs, a_runs, strict=True)],
        },
        "b_split_ms": median_split(b_splits),
        "c_split_ms": median_split(c_splits),
        "peak_rss_mb": _peak_rss_mb(),
        "rss_after_env_mb": rss_env,
    }


def _print(result: dict) -> None:
    n = result["num_envs"]
    print(
        f"\n== {n} envs, {result['threads']} MuJoCo threads, {result['torch_threads']} torch "
        f"thread(s), {result['steps']} steps x {result['repeats']} repeats (medians)"
    )
    print(f"  (a) Batch.step alone        {result['a_physics_sps']:10.0f} env-steps/s")
    print(
        f"  (b) env.step                {result['b_env_sps']:10.0f} env-steps/s   b/a = "
        f"{result['b_over_a']:.3f}"
    )
    print(
        f"  (c) env.step + policy (CPU) {result['c_env_policy_sps']:10.0f} env-steps/s   c/a = "
        f"{result['c_over_a']:.3f}"
    )
    per_b = " ".join(f"{x:.3f}" for x in result["ratios_per_repeat"]["b/a"])
    per_c = " ".join(f"{x:.3f}" for x in result["ratios_per_repeat"]["c/a"])
    print(f"  per repeat: b/a {per_b}   c/a {per_c}")
    share = result["b_split_ms"]["physics"] / sum(result["b_split_ms"].values())
    print(f"  physics share of (b)'s step time: {share:.3f} (contention-proof view of b/a)")
    print(
        f"  peak RSS {result['peak_rss_mb']:.0f} MB (after building the env: "
        f"{result['rss_after_env_mb']:.0f} MB)"
    )
    for label, split in (("(b)", result["b_split_ms"]), ("(c)", result["c_split_ms"])):
        total = sum(split.values())
        parts = "  ".join(f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in split.items())
        print(f"  {label} ms/step: {parts}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--steps", type=int, default=50, help="control steps per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=None, help="MuJoCo threads (default: available cores)"
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads for the policy (1 keeps MuJoCo's cores free)",
    )
    parser.add_argument("--motion", default=str(REPO / "motions" / "wave.npz"))
    parser.add_argument(
        "--robot", default="q1", help="a registered robot (the motion must be for it)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    from primebot.pipeline.sim.physics import available_cores

    threads = args.threads or available_cores()
    if args.child:  # one size, in its own process so peak memory is its own
        result = run_one(
            args.num_envs[0],
            args.steps,
            args.repeats,
            threads,
            args.torch_threads,
            args.motion,
            args.robot,
        )
        print(json.dumps(result))
        return 0

    print(
        f"bench_sim: {args.robot} tracking on {args.motion}; load {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} CPUs"
    )
    results = []
    for n in args.num_envs:
        cmd = [
            sys.executable,
            __file__,
            "--child",
            "--num-envs",
            str(n),
            "--steps",
            str(args.steps),
        ]
        cmd += [
            "--repeats",
            str(args.repeats),
            "--threads",
            str(threads),
            "--torch-threads",
            str(args.torch_threads),
        ]
        cmd += ["--motion", args.motion, "--robot", args.robot]
        # idle OpenMP threads must sleep, not spin on the cores MuJoCo's threads need
        child_env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=child_env).stdout
        result = json.loads(out.strip().splitlines()[-1])
        results.append(result)
        _print(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
