"""What the time limit (``runner.time_limit_min``) leaves of a run's training, said early and at the
end.

The presets size their iterations for a machine of some speed; on a slower one the time limit ends
training long before them (the default preset's 2500 iterations in 25 minutes need about 10,000
env-steps/s; a 2-core machine without bf16 collected 2,500). The runner projects, once this
session's first ``PROJECT_AFTER`` iterations and its first verdict check are paid for, where the
limit will stop training, and warns then (``early_warning``) instead of only after the limit; the
train stage warns again at the end with what was collected and how to train on
(``short_training``; docs/training.md, ``time_limit_min``).
"""

from __future__ import annotations

from .train_config import TrainConfig

SHORT_TRAINING = 0.5
"""Training warns when the time limit ends (or will end) it before this share of its iterations:
the settings were sized for a faster machine, and the policy gets much less training than they
assume."""

PROJECT_AFTER = 25
"""This session's iterations before the projection (at least one verdict check's interval, so the
checks' share of the time is in the pace)."""


def limit_seconds(cfg: TrainConfig) -> float:
    """``runner.time_limit_min`` in seconds (0: no limit)."""
    return 60.0 * cfg.runner.time_limit_min


def projection_point(cfg: TrainConfig, checks: bool) -> int:
    """After how many of this session's iterations the runner projects the end (``early_warning``):
    ``PROJECT_AFTER``, or the first verdict check's iteration where that comes later."""
    return max(PROJECT_AFTER, cfg.runner.check_interval if checks else 0)


def early_warning(cfg: TrainConfig, iteration: int, first_iteration: int, elapsed_s: float,
                  longer_budget: tuple[float, str] | None = None) -> str:
    """The warning of a run whose time limit will end it before ``SHORT_TRAINING`` of its iterations
    at the pace of this session's iterations so far (``iteration - first_iteration`` in
    ``elapsed_s`` seconds), or ''; ``longer_budget`` as for ``short_training``."""
    limit_s = limit_seconds(cfg)
    done = iteration - first_iteration
    if limit_s <= 0 or done <= 0 or elapsed_s <= 0:
        return ""
    seconds_per_iteration = elapsed_s / done
    projected = min(cfg.iterations,
                    iteration + int(max(limit_s - elapsed_s, 0.0) / seconds_per_iteration))
    if projected >= SHORT_TRAINING * cfg.iterations:
        return ""
    return (f"at {seconds_per_iteration:.2f} s an iteration (verdict checks included), the time "
            f"limit of {cfg.runner.time_limit_min:g} min will end training around iteration "
            f"{projected} of "
            f"{cfg.iterations}, {projected / cfg.iterations:.0%} of the training the settings were "
            "sized for: expect the policy to track and survive less. A faster device (--device "
            f"cuda) trains further in the same minutes; {_longer(cfg, longer_budget)}the end of "
            "training says how to train on")


def short_training(cfg: TrainConfig, iteration: int, first_iteration: int, train_on: str,
                   longer_budget: tuple[float, str] | None) -> str:
    """The warning of a run whose time limit ended it at ``iteration``, before ``SHORT_TRAINING`` of
    its iterations: how fast this machine collected (over this session's iterations, from
    ``first_iteration``: a resume's earlier ones took other time), how fast the iterations needed,
    and what to do (``train_on``: the caller's command to train on; ``longer_budget``: a longer
    limit the caller offers, named where the run's own is shorter)."""
    seconds = limit_seconds(cfg)
    steps_per_iteration = cfg.num_envs * cfg.ppo.num_steps_per_env
    needed = cfg.iterations * steps_per_iteration / seconds
    env_steps = (iteration - first_iteration) * steps_per_iteration
    return (f"the time limit of {cfg.runner.time_limit_min:g} min ended training at iteration "
            f"{iteration} of {cfg.iterations}: this machine collected {env_steps / seconds:,.0f} "
            f"env-steps/s where {cfg.iterations} iterations in that time need about "
            f"{needed:,.0f}, so the policy had {iteration / cfg.iterations:.0%} of the training "
            f"the settings were sized for; expect it to track and survive less. {train_on} "
            f"trains on for another time limit; {_longer(cfg, longer_budget)}"
            "a GPU (--device cuda) collects faster (docs/training.md, \"Performance\")")


def _longer(cfg: TrainConfig, longer_budget: tuple[float, str] | None) -> str:
    """'--preset long trains up to 55 min; ' where the caller offers a longer limit than the run's,
    else ''."""
    if longer_budget is None or cfg.runner.time_limit_min >= longer_budget[0]:
        return ""
    return f"{longer_budget[1]} trains up to {longer_budget[0]:g} min; "


def time_left(cfg: TrainConfig, elapsed_s: float) -> float | None:
    """Seconds until the time limit ends training (None without a limit): the progress bar shows
    them beside its ETA, which counts to the last iteration."""
    if cfg.runner.time_limit_min <= 0:
        return None
    return max(limit_seconds(cfg) - elapsed_s, 0.0)
