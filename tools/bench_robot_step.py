"""Physics throughput of a registered robot with ``mujoco.batch.Batch`` (the simulator's speed
limit).

    python tools/bench_robot_step.py                      # q1, 1024 sims, 2 threads, nstep 4
    python tools/bench_robot_step.py --robot q1 --sims 256 --threads 2 --repeats 7

Every simulation starts in the robot's standing keyframe with ctrl = default
pose, so contacts are those of standing. Prints the median over repeats of
env-steps/s (one env-step = nstep physics steps, a 50 Hz control period) and
physics steps/s. Other processes on the machine lower the numbers: compare
figures measured within one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
from mujoco.batch import Batch

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.robot.model import load_robot_model, robot_indices
from primebot.pipeline.robot.spec import get_robot


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="q1")
    parser.add_argument("--sims", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nstep", type=int, default=4)
    parser.add_argument("--calls", type=int, default=25, help="Batch.step calls per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    spec = get_robot(load_plugins().registry, args.robot)
    model = load_robot_model(spec)
    indices = robot_indices(model, spec)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, spec.extra.get("keyframe", "stand"))
    batch = Batch(model, args.sims, args.threads)
    batch.reset(keyframe=max(key, -1))
    ctrl = batch.bind("ctrl")
    ctrl[:, indices.actuator_ids] = spec.default_joint_pos
    batch.step(nstep=args.nstep)  # warm up threads and contacts
    rates, cpu_rates = [], []
    for _ in range(args.repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(args.calls):
            batch.step(nstep=args.nstep)
        rates.append(args.sims * args.calls / (time.perf_counter() - start))
        cpu_rates.append(args.sims * args.calls / (time.process_time() - cpu_start))
    env_steps = statistics.median(rates)
    per_cpu = statistics.median(cpu_rates)
    print(
        f"{spec.name}: {args.sims} sims, {args.threads} threads, nstep {args.nstep}: "
        f"{env_steps:,.0f} env-steps/s, {env_steps * args.nstep:,.0f} physics steps/s "
        f"(median of {args.repeats}; range {min(rates):,.0f}-{max(rates):,.0f} env-steps/s)"
    )
    # CPU time counts only this process's threads, so it is far less sensitive to
    # other jobs on the machine: threads x this is the rate on otherwise idle cores.
    print(
        f"  per CPU-second: {per_cpu:,.0f} env-steps, {per_cpu * args.nstep:,.0f} physics steps "
        f"(x{args.threads} threads = {per_cpu * args.nstep * args.threads:,.0f} physics steps/s if "
        "the cores were free)"
    )


if __name__ == "__main__":
    main()
