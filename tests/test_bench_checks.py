"""tools/bench_checks.py: one verdict check set timed with the first-frame episode as the last slot
and in an env of its own, on a real (one-iteration) tracking run."""

from __future__ import annotations


def test_the_check_bench_times_both_ways_on_a_run(import_tool, tmp_path):
    from tracking_run import TINY, WAVE

    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.session import TrainRequest, run_training

    host = load_plugins()

    tool = import_tool("bench_checks")
    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3,
                           log_dir=str(tmp_path), progress=False, sets=list(TINY))
    run_dir = run_training(host.registry, request).run_dir
    times = tool.bench(host.registry, run_dir, repeats=1)
    assert {name: len(t) for name, t in times.items()} == {
        "last slot": 1, "own env": 1, "spread": 1, "pushed": 1}
    assert all(t[0] > 0 for t in times.values())
