"""What one of training's verdict checks costs, and what playing its first-frame episode as a slot
of the spread env saves.

    python tools/bench_checks.py RUN_DIR [RUN_DIR ...] --repeats 7

For each run directory (a pipeline or ``primebot train`` run of a tracking
task), builds the verdict probe of its configuration twice, as training
builds it (``VerdictProbe.for_run``): as the task declares it (the
first-frame episode as the last slot of the spread env,
``PlaySettings.start_in_last_slot``) and with that episode in a 1-env batch
of its own (the task's ``start_in_last_slot`` set to None). It plays one set
of the check with the run's judged policy (``model_best.pt``) on each, interleaved
``--repeats`` times, and prints the medians (min-max), their ratio, and the
time of the spread and pushed parts alone. A tracked check that would become
the best plays two sets (docs/tasks.md, "The verdict checks' share").
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path
from typing import Any

from primebot.pipeline.evaluate.evaluate_run import VerdictProbe, play_episodes
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.trained_policy import load_trained_policy


class FirstFrameApart:
    """``registry``, but its task ``task`` plays a check's first-frame episode in an env of its own
    (``PlaySettings.start_in_last_slot`` None), as every task did before stop 60."""

    def __init__(self, registry: Any, task: str) -> None:
        self.registry, self.task = registry, task
        spec = registry.get("tasks", task)
        self.spec = dataclasses.replace(
            spec, play=dataclasses.replace(spec.play, start_in_last_slot=None))

    def get(self, kind: str, name: str) -> Any:
        return self.spec if (kind, name) == ("tasks", self.task) else self.registry.get(kind, name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.registry, name)


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _spread(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} s ({min(times):.2f}-{max(times):.2f})"


def bench(registry: Any, run_dir: Path, repeats: int) -> dict[str, list[float]]:
    policy = load_trained_policy(run_dir)  # the policy the pipeline judges: model_best.pt
    cfg, motion = policy.config, policy.motion()
    probes = {
        "last slot": VerdictProbe.for_run(registry, cfg, motion, seed=cfg.seed + 1),
        "own env": VerdictProbe.for_run(FirstFrameApart(registry, cfg.task), cfg, motion,
                                        seed=cfg.seed + 1),
    }
    times: dict[str, list[float]] = {name: [] for name in (*probes, "spread", "pushed")}
    try:
        for _ in range(repeats):
            for name, probe in probes.items():
                times[name].append(_timed(lambda p=probe: p(policy)))
            probe = probes["own env"]
            times["spread"].append(_timed(lambda p=probe: play_episodes(p.view, policy)))
            if probe.perturbed is not None:
                times["pushed"].append(_timed(lambda p=probe: play_episodes(p.perturbed, policy)))
    finally:
        for probe in probes.values():
            probe.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    registry = load_plugins().registry
    for run_dir in args.runs:
        times = bench(registry, run_dir, args.repeats)
        own, slot = statistics.median(times["own env"]), statistics.median(times["last slot"])
        parts = f"spread episodes {_spread(times['spread'])}"
        if times["pushed"]:
            parts += f", pushed {_spread(times['pushed'])}"
        print(f"{run_dir}: one set of a check, first-frame episode in its own env "
              f"{_spread(times['own env'])}, as the last slot {_spread(times['last slot'])}, "
              f"ratio {slot / own:.3f}; {parts}")


if __name__ == "__main__":
    main()
