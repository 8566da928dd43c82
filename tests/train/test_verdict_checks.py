"""Training's verdict checks on the point-mass task: when training stops, which policy becomes
model_best.pt, and the final choice among the best checks (train/verdict_checks.py)."""

from __future__ import annotations

import pointmass_task
import pytest
import torch

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.checkpoints import load_checkpoint, numbered_checkpoints
from primebot.pipeline.train.log import read_csv_rows


@pytest.fixture(scope="module")
def registry():
    return load_plugins(extra=[("pointmass", pointmass_task)]).registry


class _ScriptedProbe:
    """Stands in for the task's verdict probe: says 'tracked' from its ``tracked_from``-th call
    on."""

    def __init__(self, tracked_from: int) -> None:
        self.calls, self.tracked_from = 0, tracked_from

    def __call__(self, policy):
        self.calls += 1
        # the runner hands over a working deterministic policy
        policy.act(torch.zeros(1, 4).numpy())
        tracked = self.calls >= self.tracked_from
        return {"success_rate": 1.0, "mpkpe_m": 0.01, "statue_mpkpe_m": 0.1,
                "fraction_removed": 0.9,
                "verdict": {"tracked": tracked, "reason": "scripted"}}


RUN_ID = "0" * 32
"""The run id of the runners these tests build without a training session."""


def _learn_until_tracked(registry, tmp_path, probe, complete_from_iteration: int = 0, complete=None,
                         iterations: int = 40):
    """Train the point mass with verdict checks every 3 iterations; its curriculum completes at the
    given iteration, or when ``complete(runner)`` says so."""
    from primebot.pipeline.train.on_policy_runner import OnPolicyRunner
    from primebot.pipeline.train.train_config import TrainConfig

    spec = registry.get("tasks", "pointmass")
    cfg = TrainConfig(task="pointmass", num_envs=16, iterations=iterations)
    cfg.runner.check_interval, cfg.runner.stop_when_tracked = 3, True
    cfg.policy.actor_hidden = cfg.policy.critic_hidden = (32, 32)
    env = spec.make_env(robot=None, motion=None, num_envs=16, seed=0,
                        config=dict(spec.default_config),
                        registry=registry, num_threads=1)
    runner = OnPolicyRunner(env, cfg, run_dir=tmp_path, progress=False, probe=probe)
    runner.run_id = RUN_ID  # as the session sets it: every checkpoint carries its run's id
    # a curriculum that completes at a given iteration (the tracking task's follows its fall rate)
    complete = complete or (lambda r: r.iteration >= complete_from_iteration)
    type(env).curriculum_complete = property(lambda _: complete(runner))
    try:
        return runner.learn()
    finally:
        del type(env).curriculum_complete
        env.close()


def test_stop_when_tracked_finishes_at_the_second_tracked_check_in_a_row(registry, tmp_path):
    probe = _ScriptedProbe(tracked_from=2)
    result = _learn_until_tracked(registry, tmp_path, probe)
    # checks at 3 (no), 6 (yes), 9 (yes)
    assert result.status == "finished" and result.iteration == 9
    # the check at 6 is the first tracked one, a new best: it plays a second set of episodes
    assert probe.calls == 4 and (tmp_path / "model_9.pt").is_file()
    _, rows = read_csv_rows(tmp_path / "train.csv")
    assert [r["verdict/tracked"] for r in rows if r.get("verdict/tracked")] == ["0.0", "1.0", "1.0"]


def test_stop_when_tracked_counts_only_checks_after_the_curriculum_completed(registry, tmp_path):
    """Tracked from the check at 6 on, but the curriculum completes at 13: the checks at 15 and 18
    are the first two of a policy trained under the full conditions, so the run stops at 18."""
    result = _learn_until_tracked(registry, tmp_path, _ScriptedProbe(tracked_from=2),
                                  complete_from_iteration=13)
    assert result.status == "finished" and result.iteration == 18


def test_a_check_that_completes_the_curriculum_does_not_count_towards_stopping(registry, tmp_path,
                                                                               monkeypatch):
    """A curriculum that completes when told of the third check (at 9; a verdict curriculum raises
    the strength on a tracked check): the policy checked at 9 never trained at full strength, so the
    checks that count are those at 12 and 15. Every check reaches the env."""
    from primebot.pipeline.sim.env import VecEnv

    seen: list[bool] = []
    monkeypatch.setattr(VecEnv, "observe_verdict", lambda env,
                        summary: seen.append(summary["verdict"]["tracked"]))
    result = _learn_until_tracked(registry, tmp_path, _ScriptedProbe(tracked_from=2),
                                  complete=lambda _: len(seen) >= 3)
    assert seen == [False, True, True, True, True] and result.iteration == 15


class _ScoredProbe:
    """A verdict probe that reads its checks' figures from a script: (tracked, success rate, MPKPE)
    per call."""

    def __init__(self, script: list[tuple[bool, float, float]]) -> None:
        self.script, self.calls = script, 0

    def __call__(self, policy):
        tracked, success, mpkpe = self.script[min(self.calls, len(self.script) - 1)][:3]
        self.calls += 1
        return {"success_rate": success, "mpkpe_m": mpkpe, "statue_mpkpe_m": 0.1,
                "fraction_removed": 0.5,
                "verdict": {"tracked": tracked, "reason": "scripted"}}


def test_model_best_is_the_best_verdict_check_and_is_the_policy_evaluation_loads(
    registry, tmp_path
):
    """Checks at 3, 6, 9 … 21: the one at 9 tracked before the curriculum completed (at 13), the one
    at 15 tracked after it; nothing after tracks. model_best.pt is the policy of iteration 15 and is
    what load_trained_policy returns for the run, though training went on to 21. (Each tracked new
    best plays a second set of episodes: the script's repeated rows.)"""
    from primebot.pipeline.train.checkpoints import load_checkpoint
    from primebot.pipeline.train.trained_policy import load_trained_policy

    script = [(False, 0.5, 0.05), (False, 1.0, 0.03), (True, 1.0, 0.01), (True, 1.0, 0.01),
              (False, 1.0, 0.04),
              (True, 1.0, 0.02), (True, 1.0, 0.02), (False, 0.2, 0.09), (False, 1.0, 0.03)]
    result = _learn_until_tracked(registry, tmp_path, _ScoredProbe(script),
                                  complete_from_iteration=13,
                                  iterations=21)
    assert result.iteration == 21
    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 15 and best["best_check"] == [1.0, 1.0, 1.0, 1.0, 1.0, -0.02, 15]
    args = f"config: {{}}\nrun: {{id: '{RUN_ID}'}}\n"  # what a run directory holds
    (tmp_path / "args.yaml").write_text(args, encoding="utf-8")
    assert load_trained_policy(tmp_path).checkpoint == tmp_path / "model_best.pt"


def test_a_lucky_check_does_not_become_model_best_nor_count_towards_stopping(registry, tmp_path):
    """The check at 6 reads better than the one at 3, but its second set of episodes falls: it ranks
    as that second set, stays out of model_best.pt and breaks the run of tracked checks, so the run
    stops at 12 (checks at 9 and 12), not at 6."""
    from primebot.pipeline.train.checkpoints import load_checkpoint

    # 3, and its second set: a new best, confirmed
    script = [(True, 1.0, 0.01), (True, 1.0, 0.012),
              (True, 1.0, 0.005), (False, 0.7, 0.03),  # 6: looks best, does not hold
              (True, 1.0, 0.02), (True, 1.0, 0.02)]    # 9 and 12: tracked, not better than 3
    probe = _ScoredProbe(script)
    result = _learn_until_tracked(registry, tmp_path, probe)
    assert result.iteration == 12 and probe.calls == 6
    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 3 and best["best_check"] == [1.0, 1.0, 1.0, 1.0, 1.0, -0.012, 3]
    _, rows = read_csv_rows(tmp_path / "train.csv")
    assert [r.get("verdict/confirmed") for r in rows if r.get("verdict/tracked")] == [
        "1.0",
        "0.0",
        "",
        "",
    ]


def test_a_check_that_did_not_track_is_not_ranked_by_its_curriculum_progress(registry, tmp_path):
    """A curriculum at the full conditions for the first check only (as the tracking task's, which
    starts at full strength and falls back when the checks fall): that untrained check (success
    0.25) must not beat the later ones trained below the full conditions; none tracks, so the best
    is the one at 9 (success 1.00, lower MPKPE), and its rank keeps its true progress (0: the
    stage's warning reads it)."""
    from primebot.pipeline.train.checkpoints import load_checkpoint

    script = [(False, 0.25, 0.08), (False, 1.0, 0.03), (False, 1.0, 0.02)]
    result = _learn_until_tracked(registry, tmp_path, _ScoredProbe(script),
                                  complete=lambda r: r.iteration <= 3,
                                  iterations=9)
    assert result.iteration == 9
    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 9 and best["best_check"] == [0.0, 1.0, 1.0, 0.0, 1.0, -0.02, 9]


_BEST_AT_15 = [(False, 0.5, 0.05), (False, 1.0, 0.03), (True, 1.0, 0.01), (True, 1.0, 0.01),
               (False, 1.0, 0.04),
               (True, 1.0, 0.02), (True, 1.0, 0.02), (False, 0.2, 0.09), (False, 1.0, 0.03)]
"""Checks every 3 iterations up to 21; the best is the check at 15 (as in the model_best.pt test
above)."""


def test_model_best_is_a_link_to_the_numbered_checkpoint_of_its_check(registry, tmp_path):
    import os

    _learn_until_tracked(registry, tmp_path, _ScoredProbe(_BEST_AT_15), complete_from_iteration=13,
                         iterations=21)
    # model_15.pt is written first, then model_best.pt made the same file: a stop between the two
    # writes leaves a numbered checkpoint that resume repairs model_best.pt from
    assert os.path.samefile(tmp_path / "model_best.pt", tmp_path / "model_15.pt")
    assert load_checkpoint(tmp_path / "model_15.pt")["best_check"][-1] == 15


def test_resume_repairs_a_model_best_left_behind_by_a_stop_between_the_two_writes(
    registry, tmp_path
):
    from primebot.pipeline.train.on_policy_runner import OnPolicyRunner
    from primebot.pipeline.train.train_config import TrainConfig

    _learn_until_tracked(registry, tmp_path, _ScoredProbe(_BEST_AT_15), complete_from_iteration=13,
                         iterations=21)
    best = tmp_path / "model_best.pt"
    # as if the process was killed after model_15.pt was written, before model_best.pt followed (the
    # check at 9 was the best before): the summary would name 15 while the file holds 9
    from primebot.pipeline.train.checkpoints import save_checkpoint

    older = {k: v for k, v in load_checkpoint(tmp_path / "model_15.pt").items()
             if k not in ("format", "version", "digest")}
    older["best_check"] = [1.0, 0.0, 1.0, -0.01, 9]
    best.unlink()
    save_checkpoint(best, older)
    spec = registry.get("tasks", "pointmass")
    cfg = TrainConfig(task="pointmass", num_envs=16, iterations=21)
    cfg.runner.check_interval, cfg.runner.stop_when_tracked = 3, True
    cfg.policy.actor_hidden = cfg.policy.critic_hidden = (32, 32)
    env = spec.make_env(robot=None, motion=None, num_envs=16, seed=0,
                        config=dict(spec.default_config),
                        registry=registry, num_threads=1)
    try:
        runner = OnPolicyRunner(
            env, cfg, run_dir=tmp_path, progress=False, probe=_ScoredProbe(_BEST_AT_15)
        )
        runner.run_id = RUN_ID
        runner.restore(load_checkpoint(tmp_path / "model_21.pt"))
        assert "linked again from model_15.pt" in runner.reconcile_best()
    finally:
        env.close()
    assert load_checkpoint(best)["best_check"][-1] == 15 and runner.reconcile_best() == ""


class _RobustnessProbe(_ScoredProbe):
    """A scored probe that also measures robustness: (tracked, success, MPKPE, success under
    perturbation)."""

    def __call__(self, policy):
        row = self.script[min(self.calls, len(self.script) - 1)]
        summary = super().__call__(policy)
        return {**summary, "robust_success_rate": row[3], "robust": row[3] >= 0.9}


def test_a_robust_check_beats_a_tracked_one_and_only_robust_checks_stop_training(
    registry, tmp_path
):
    """Checks at 3 and 6 track with the lower MPKPE but fall under perturbation; the one at 9 tracks
    and is robust, so it becomes model_best.pt over 3, and then 12, robust too and within the tie
    of 9 under the push, trained longer; training stops at the second robust check in a row
    (12)."""
    from primebot.pipeline.train.checkpoints import load_checkpoint

    # 3 (and its second set): tracked, fragile
    script = [(True, 1.0, 0.005, 0.5), (True, 1.0, 0.005, 0.5),
              (True, 1.0, 0.01, 0.4),                           # 6: worse than 3 under the push
              # 9 (and its second set): robust, a new best
              (True, 1.0, 0.02, 0.95), (True, 1.0, 0.02, 0.94),
              # 12 (and its second set): robust too, within the tie of 9, later
              (True, 1.0, 0.03, 0.9), (True, 1.0, 0.02, 0.92)]
    probe = _RobustnessProbe(script)
    result = _learn_until_tracked(registry, tmp_path, probe)
    assert result.iteration == 12 and probe.calls == 7
    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 12 and best["best_check"] == [1.0, 1.0, 0.9, 1.0, 1.0, -0.03, 12]
    _, rows = read_csv_rows(tmp_path / "train.csv")
    assert [r["verdict/robust_success_rate"] for r in rows if r.get("verdict/tracked")] == [
        "0.5",
        "0.4",
        "0.95",
        "0.9",
    ]


def test_training_stops_only_once_the_pooled_pushed_episodes_decide_robust(registry, tmp_path):
    """Checks of 32 pushed episodes each: 29 and 30 of 32 (the check at 3 and its second set), then
    30 and 29 at 6 (a new best within the tie, trained longer, so it plays its second set too),
    pass one by one but 118 of 128 cannot tell the success from 0.9 (the bow's stop 52 seed
    stopped on such checks and the stress test then read 0.88); the check at 9 and its second set,
    64 of 64, bring the pool to 182 of 192, and training stops there."""
    class Counted(_RobustnessProbe):
        def __call__(self, policy):
            return {**super().__call__(policy), "robust_episodes": 32}

    script = [(True, 1.0, 0.01, 29 / 32), (True, 1.0, 0.01, 30 / 32),   # 3 and its second set
              (True, 1.0, 0.02, 30 / 32), (True, 1.0, 0.02, 29 / 32),   # 6 and its second set
              (True, 1.0, 0.02, 1.0), (True, 1.0, 0.02, 1.0)]           # 9 and its second set
    result = _learn_until_tracked(registry, tmp_path, Counted(script))
    assert result.status == "finished" and result.iteration == 9
    assert "3 checks in a row, 182 of 192 pushed episodes pooled" in result.reason


def test_a_stop_is_confirmed_on_fresh_pushed_episodes_and_an_unconfirmed_one_ends_the_row(
    registry, tmp_path
):
    """Every check stands all 32 pushes, so the row decides at the second check (6); 128 fresh
    pushed episodes then succeed in only 110 (0.86: a lucky row), which ends the row; the next row
    decides at 12, its confirmation reads 120 of 128, and training stops there, on that policy."""
    class Confirmed(_RobustnessProbe):
        confirmations = iter([(110, 128), (120, 128)])

        def __call__(self, policy):
            return {**super().__call__(policy), "robust_episodes": 32}

        def confirm_robust(self, policy):
            policy.act(torch.zeros(1, 4).numpy())
            return next(self.confirmations)

    result = _learn_until_tracked(registry, tmp_path, Confirmed([(True, 1.0, 0.01, 1.0)]))
    assert result.status == "finished" and result.iteration == 12
    assert "confirmed on 128 fresh ones (0.94)" in result.reason
    # the confirmed policy is the one judged, though the check at 3 (64 of 64) ranked higher
    from primebot.pipeline.train.checkpoints import load_checkpoint

    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 12 and best["best_check"][1:3] == [1.0, 0.9375]
    _, rows = read_csv_rows(tmp_path / "train.csv")
    assert {r["iteration"]: r["verdict/stop_confirmation"] for r in rows
            if r.get("verdict/stop_confirmation")} == {"6": "0.859375", "12": "0.9375"}


def test_checks_that_do_not_stop_training_never_spend_time_confirming():
    """Without stop-when-tracked nothing stops on the checks, so a decided row plays no fresh
    episodes and leaves model_best.pt to the ranking."""
    from primebot.pipeline.train.verdict_checks import VerdictChecks

    class Env:
        curriculum_complete, curriculum_progress = True, 1.0

        def observe_verdict(self, summary):
            pass

    calls = []

    class Probe:
        def __call__(self, policy):
            return {"success_rate": 1.0, "mpkpe_m": 0.01, "statue_mpkpe_m": 0.1,
                    "verdict": {"tracked": True}, "robust": True, "robust_success_rate": 1.0,
                    "robust_episodes": 32}

        def confirm_robust(self, policy):
            calls.append(policy)
            return (128, 128)

    for stops, confirmations in ((False, 0), (True, 1)):
        calls.clear()
        checks = VerdictChecks(Probe(), stops=stops)
        rows = [checks.check(None, Env(), iteration) for iteration in (25, 50)]
        assert len(calls) == confirmations and checks.done == stops
        assert ("verdict/stop_confirmation" in rows[-1]) == stops


def test_success_under_perturbation_within_one_standard_error_is_a_tie_that_the_later_check_wins():
    """The Booster T1's wave: a check at a quarter of the randomisation succeeded under the push in
    one episode of 32 more than a later check at full strength, and became model_best.pt. Within
    the tie the check trained longer wins, not the one further along the curriculum (which, where
    the curriculum falls back, is an early one)."""
    from primebot.pipeline.train.verdict_checks import outranks

    # (tracked, robust, success under the push, curriculum progress, success, -MPKPE)
    quarter, full = (1.0, 0.0, 0.81, 0.25, 1.0, -0.002), (1.0, 0.0, 0.78, 1.0, 1.0, -0.003)
    assert outranks(full, quarter, later=True) and not outranks(quarter, full, later=False)
    # a curriculum that fell back: the later check at a quarter of the strength wins the tie
    assert outranks(quarter, full, later=True) and not outranks(full, quarter, later=False)
    # where the probe measures no robustness, progress still orders tracked checks
    assert outranks(full, quarter) and not outranks(quarter, full)
    # beyond the tie, the push still decides, however early
    assert outranks((1.0, 0.0, 0.9, 0.25, 1.0, -0.002), full, later=False)
    # a robust check beats one that is not, however near and however late the other
    assert outranks((1.0, 1.0, 0.91, 0.25, 1.0, -0.002), (1.0, 0.0, 0.88, 1.0, 1.0, -0.002),
                    later=False)
    # a check that did not track never outranks one that did, however robust and late
    assert not outranks((0.0, 0.0, 1.0, 1.0, 1.0, -0.001), quarter, later=True)


def test_the_final_choice_candidates_are_the_longest_trained_within_the_tie():
    """The README's wave with 128 envs on a slow machine (stop 56), its checks as train.csv has
    them (iteration, curriculum strength, success under the push of 32 episodes): the curriculum
    started at full strength and fell back to 0.75 at iteration 625. Ranked by progress within the
    tie, the early checks at full strength were among the candidates, and 250 was judged (it did not
    track in sim2sim; 1000 did). Ranked by training time, the candidates are the latest ones that
    the push cannot tell apart from the best."""
    from primebot.pipeline.train.verdict_checks import VerdictChecks

    checks_csv = [(250, 1.0, 0.66), (275, 1.0, 0.53), (300, 1.0, 0.75), (325, 1.0, 0.75),
                  (625, 0.75, 0.69), (725, 0.75, 0.59), (925, 0.75, 0.78), (950, 0.75, 0.69),
                  (1000, 0.75, 0.69), (1075, 1.0, 0.53)]

    class Env:
        curriculum_complete, curriculum_progress = True, 1.0

        def observe_verdict(self, summary):
            pass

    class Probe:
        push = 0.0

        def __call__(self, policy):
            return {"success_rate": 1.0, "mpkpe_m": 0.009, "statue_mpkpe_m": 0.018,
                    "verdict": {"tracked": True}, "robust": False,
                    "robust_success_rate": self.push, "robust_episodes": 32}

    probe, env = Probe(), Env()
    checks = VerdictChecks(probe, stops=True)
    for iteration, strength, push in checks_csv:
        probe.push, env.curriculum_progress = push, strength
        env.curriculum_complete = strength == 1.0
        checks.check(None, env, iteration)
    assert set(checks.candidate_iterations) == {625, 925, 950, 1000}
    # beyond the tie the push decides: 925 (0.78) over 1000 (0.69)
    assert checks.best_iteration == 925


def test_training_that_ends_without_a_stop_judges_the_top_check_fresh_episodes_confirm_best(
    registry, tmp_path
):
    """No check is robust (32 pushed episodes each, 0.5–0.8), so training runs to its cap (15). The
    four best checks under the push, 6 (0.8), 12 (0.7), 9 (0.6) and 3 (0.5), had their policies
    written as they came (15, fifth, was not). Each, the best (6) too, plays a fresh set of the
    check, where 9 does not track and drops out; the rest each play 128 fresh pushed episodes, and
    12's, 118 of them, beats 6's 100: model_best.pt is 12's policy, recording the choice, and so
    does the last checkpoint, which a resume continues from."""
    from primebot.pipeline.train.checkpoints import load_checkpoint
    from primebot.pipeline.train.trained_policy import load_trained_policy

    acted = []

    class Final(_RobustnessProbe):
        confirmations = iter([(100, 128), (118, 128), (80, 128)])

        def __call__(self, policy):
            return {**super().__call__(policy), "robust_episodes": 32}

        def confirm_robust(self, policy):
            acted.append(policy.act(torch.ones(1, 4).numpy()))
            return next(self.confirmations)

    script = [(True, 1.0, 0.01, 0.5), (True, 1.0, 0.01, 0.5),       # 3 and its second set
              (True, 1.0, 0.01, 0.8), (True, 1.0, 0.01, 0.8),       # 6: the best check
              (True, 1.0, 0.01, 0.6), (True, 1.0, 0.01, 0.7),       # 9, 12
              (True, 1.0, 0.01, 0.4),                               # 15
              # the final choice's fresh sets: 6 and 12 track again, 9 does not, 3 does
              (True, 1.0, 0.01, 0.8), (True, 1.0, 0.01, 0.7), (False, 0.8, 0.05, 0.6),
              (True, 1.0, 0.01, 0.5)]
    # what a run directory holds: the candidates are loaded as evaluation loads a run's policy
    (tmp_path / "args.yaml").write_text(f"config: {{}}\nrun: {{id: '{RUN_ID}'}}\n",
                                        encoding="utf-8")
    result = _learn_until_tracked(registry, tmp_path, Final(script), iterations=15)
    assert result.status == "finished" and result.iteration == 15
    assert ("final choice: the top 4 checks on fresh pushed episodes: iteration 6 0.78 of 128, "
            "iteration 12 0.92 of 128, iteration 9 not tracked again, iteration 3 0.62 of 128; "
            "iteration 12's policy is judged") in result.reason
    assert {it for it, _ in numbered_checkpoints(tmp_path)} >= {3, 6, 9, 12, 15}
    best = load_checkpoint(tmp_path / "model_best.pt")
    assert best["iteration"] == 12 and best["best_check"] == [1.0, 1.0, 0.921875, 1.0, 1.0, -0.01,
                                                               12]
    assert load_checkpoint(tmp_path / "model_15.pt")["best_check"][-1] == 12
    # each confirmation played its own checkpoint's policy: the second one is model_12.pt's
    twelve = load_trained_policy(tmp_path, "model_12.pt").act(torch.ones(1, 4).numpy())
    assert torch.allclose(torch.from_numpy(acted[1]), torch.from_numpy(twelve))
    assert not torch.allclose(torch.from_numpy(acted[0]), torch.from_numpy(twelve))


class _ChoiceProbe:
    """A probe for ``VerdictChecks.final_choice`` whose policies are their iterations: a fresh set
    of the check tracks where ``tracks(iteration)`` says, and ``confirmed[iteration]`` of 128
    fresh pushed episodes succeed."""

    def __init__(self, confirmed: dict[int, int], tracks) -> None:
        self.confirmed, self.tracks = confirmed, tracks

    def __call__(self, iteration):
        return {"verdict": {"tracked": self.tracks(iteration)}}

    def confirm_robust(self, iteration):
        return self.confirmed[iteration], 128


def test_the_final_choice_prefers_a_confirmed_robust_policy_then_success_then_the_longest_trained():
    """Ranks as ``check_rank`` makes them: (tracked, robust, success under the push, curriculum
    progress, success, -MPKPE). Among successes within the tie, the latest iteration wins, whatever
    strength the curriculum held it at."""
    from primebot.pipeline.train.verdict_checks import VerdictChecks

    def choose(confirmed: dict[int, int], progress: dict[int, float],
               tracks=lambda it: True) -> int:
        checks = VerdictChecks(_ChoiceProbe(confirmed, tracks), stops=True)
        checks.candidates = [((1.0, 0.0, 0.85, progress[it], 1.0, -0.01), it) for it in confirmed]
        assert checks.final_choice(lambda iteration: iteration)
        return checks.best_iteration

    # at full strength alike: within the tie of the most successful (0.86), the later (0.82) …
    assert choose({100: 100, 200: 110, 300: 105}, {100: 1.0, 200: 1.0, 300: 1.0}) == 300
    # … beyond it (0.70), the most successful
    assert choose({100: 100, 200: 110, 300: 90}, {100: 1.0, 200: 1.0, 300: 1.0}) == 200
    # a curriculum that rises: within the tie, the later check, at full strength (the Booster T1's
    # wave: 0.81 at a quarter of the strength, then 0.78 at full)
    assert choose({100: 104, 200: 100}, {100: 0.25, 200: 1.0}) == 200
    # one the episodes tell apart wins, trained at whatever strength (0.86 against 0.78) …
    assert choose({100: 100, 200: 110}, {100: 1.0, 200: 0.25}) == 200
    # … and so does one confirmed robust, however near (0.91 against 0.88)
    assert choose({100: 116, 200: 113}, {100: 0.25, 200: 1.0}) == 100
    # the mjlab G1's squat (stop 55): 100 at strength 1 held 0 of 128, 425 and 450, at 0.75 after
    # the curriculum fell back, 10 and 5; the stress test's push: 0, 4 and 5 of 32
    assert choose({450: 5, 425: 10, 100: 0}, {450: 0.75, 425: 0.75, 100: 1.0}) == 450
    # the wave with 128 envs (stop 56): 250 at strength 1 (0.74), 1000 at 0.75 (0.71); exported,
    # 250 did not track in sim2sim and 1000 did
    assert choose({250: 95, 325: 85, 1000: 91}, {250: 1.0, 325: 1.0, 1000: 0.75}) == 1000
    # equal success: the later
    assert choose({300: 110, 100: 110}, {100: 1.0, 300: 1.0}) == 300
    # a candidate whose second set does not track is not chosen, however successful
    assert choose({100: 100, 200: 120}, {100: 1.0, 200: 1.0}, tracks=lambda it: it != 200) == 100


def test_the_final_choice_plays_the_best_check_again_too():
    """q1's OMOMO clip sub3 with ``--preset long`` (stop 68): the best check, iteration 2700, had
    tracked in both its sets among checks that mostly did not, and was judged for being the
    longest trained of candidates the push could not tell apart; sim2sim read it NOT TRACKED
    (0.82 of 33) where 2350 and 2375 were TRACKED (0.94, 0.91). Played again like the others, a
    best check that does not track drops out; where none tracks again, the best stays judged."""
    from primebot.pipeline.train.verdict_checks import VerdictChecks

    def choose(tracks) -> tuple[int, str]:
        checks = VerdictChecks(_ChoiceProbe({2700: 13, 2375: 20, 2350: 12, 2325: 23}, tracks),
                               stops=True)
        checks.candidates = [((1.0, 0.0, 0.12, 0.75, 0.94, -0.097), 2700),
                             ((1.0, 0.0, 0.18, 0.75, 0.94, -0.082), 2375),
                             ((1.0, 0.0, 0.09, 0.5, 1.0, -0.093), 2350),
                             ((1.0, 0.0, 0.18, 0.25, 1.0, -0.086), 2325)]
        checks.best, checks.best_iteration = checks.candidates[0][0], 2700
        return checks.best_iteration if checks.final_choice(lambda it: it) else 0, checks.final_note

    # as the run had it but for the best's fresh set: 2700 and 2325 do not track again
    chosen, note = choose(lambda it: it in (2375, 2350))
    assert chosen == 2375 and "iteration 2700 not tracked again" in note
    # the best tracking again is chosen as before: the longest trained within the tie
    assert choose(lambda it: it != 2325)[0] == 2700
    # none tracks again: the best check stays judged
    chosen, note = choose(lambda it: False)
    assert chosen == 2700 and note.endswith("iteration 2700's policy is judged")


def test_the_curriculum_warning_sends_an_untracked_policy_to_the_tracking_advice():
    from primebot.pipeline.train.session import _curriculum_warning
    from primebot.pipeline.train.verdict_checks import VerdictChecks

    checks = VerdictChecks(None)
    # (tracked, robust, success under perturbation, curriculum progress, success, −MPKPE)
    checks.best = (0.0, 0.0, 0.0, 0.0, 0.55, -0.11)
    untracked = _curriculum_warning("the policy", checks, "primebot pipeline run --resume R")
    assert untracked.startswith("the policy at 0 of the randomisation: no check tracked its motion")
    assert "When a motion does not track" in untracked and "not robust" not in untracked
    checks.best = (1.0, 0.0, 0.6, 0.25, 0.97, -0.02)
    tracked = _curriculum_warning("the policy", checks, "primebot pipeline run --resume R")
    assert "before the task's curriculum was complete" in tracked
    assert "What to try when a motion is tracked but not robust" in tracked
