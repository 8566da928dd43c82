"""tools/bench_checks.py, and what it measures: a verdict check whose first-frame episode is the
last slot of its spread env scores as one that plays it in an env of its own."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A one-iteration tracking run of q1 on the wave, and the host it trained with."""
    from tracking_run import TINY, WAVE

    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.session import TrainRequest, run_training

    host = load_plugins()
    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3,
                           log_dir=str(tmp_path_factory.mktemp("logs")), progress=False,
                           sets=list(TINY))
    return host, run_training(host.registry, request).run_dir


def test_a_checks_first_frame_episode_as_the_last_slot_scores_as_in_an_env_of_its_own(
        import_tool, tiny_run):
    """The verdict check plays its first-frame episode as one more slot of the sampled episodes'
    env (a 1-env batch took a fifth of a check, stop 59): the same episodes, the same summary."""
    from tracking_run import WAVE

    from primebot.pipeline.evaluate.evaluate_run import VerdictProbe, play_episodes
    from primebot.pipeline.motion.format import load_motion
    from primebot.pipeline.train.trained_policy import load_trained_policy

    host, run_dir = tiny_run
    apart_registry = import_tool("bench_checks").FirstFrameApart(host.registry, "tracking")
    policy = load_trained_policy(run_dir)
    motion = load_motion(WAVE)
    merged = VerdictProbe.for_run(host.registry, policy.config, motion, episodes=3,
                                  robust_episodes=2)
    apart = VerdictProbe.for_run(apart_registry, policy.config, motion, episodes=3,
                                 robust_episodes=2)
    try:
        assert (merged.first, merged.first_slot, merged.env.num_envs) == (None, 3, 4)
        assert (apart.first is not None, apart.first_slot, apart.env.num_envs) == (True, None, 3)
        one, other = merged(policy), apart(policy)
        assert one["episodes"] == other["episodes"] == 4
        assert one["first_frame_episode"] == other["first_frame_episode"]
        for key in ("success_rate", "mpkpe_m", "statue_mpkpe_m", "mean_episode_length"):
            assert one[key] == pytest.approx(other[key], rel=1e-6), key
        assert one["verdict"]["tracked"] == other["verdict"]["tracked"]
        metrics, _ = play_episodes(merged.view, policy)
        assert {slot: r["start_step"] for r, slot in zip(metrics.episodes, metrics.slots,
                                                         strict=True) if slot == 3} == {3: 0}
    finally:
        merged.close(), apart.close()


def test_the_check_bench_times_both_ways_on_a_run(import_tool, tiny_run):
    host, run_dir = tiny_run
    times = import_tool("bench_checks").bench(host.registry, run_dir, repeats=1)
    assert {name: len(t) for name, t in times.items()} == {
        "last slot": 1, "own env": 1, "spread": 1, "pushed": 1}
    assert all(t[0] > 0 for t in times.values())
