"""A trained run's policy as evaluation and export use it: config, normaliser and deterministic
actor.

``load_trained_policy(run_dir)`` reads args.yaml and a checkpoint
(``weights_only`` loading through ``checkpoint.load_checkpoint``) and
rebuilds the actor MLP and the observation normaliser exactly as training
built them. ``make_run_env`` builds the run's task environment again, as
the task plays it to judge a policy (``TaskSpec.play``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import CheckpointError, ConfigError, CorruptCheckpointError
from ..motion.format import Motion, load_motion
from ..ppo.networks import ActorCritic
from ..ppo.normalizer import EmpiricalNormalizer
from ..registry import Registry
from ..rundir import BEST_CHECKPOINT, EXPORT_DIR, motion_copy_name, read_args, read_run_id
from ..sim.env import VecEnv
from .checkpoints import load_checkpoint, load_latest_good, numbered_checkpoints, require_same_run
from .train_config import TrainConfig

log = logging.getLogger(__name__)

@dataclass
class TrainedPolicy:
    """The deployable half of a checkpoint: normaliser → actor mean."""

    config: TrainConfig
    actor: nn.Sequential
    obs_normalizer: nn.Module
    num_obs: int
    num_actions: int
    checkpoint: Path
    iteration: int
    run_dir: Path
    digest: str
    """The checkpoint's content digest: every file derived from this policy records it
    (train/provenance.py)."""
    run_id: str
    """The run the checkpoint belongs to (args.yaml ``run.id``)."""
    _motion: Motion | None = field(default=None, init=False, repr=False, compare=False)
    """The motion once loaded (eval builds two envs, export an env and the ONNX from it)."""

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions [N, A] float32 (the Gaussian's mean) for observations [N, O]."""
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32))
        return self.actor(self.obs_normalizer(x)).numpy()

    def motion(self) -> Motion:
        """The reference motion the run trained on, checked against the recorded SHA-256 (loaded
        once)."""
        if self._motion is not None:
            return self._motion
        if not self.config.motion:
            raise ConfigError(f"run {self.run_dir} has no motion in args.yaml (task "
                              f"{self.config.task!r})")
        given = Path(self.config.motion)
        # the path training read, or the copies a run keeps of its motion, always named *.npz
        # (rundir.motion_copy_name): a motion called args.yaml is never taken for the run's own file
        copy = motion_copy_name(given.name)
        candidates = (given, self.run_dir / copy, self.run_dir / EXPORT_DIR / copy)
        path = next((c for c in candidates if c.is_file()), given)
        motion = load_motion(path)
        if self.config.motion_sha256 and motion.sha256 != self.config.motion_sha256:
            raise ConfigError(
                f"motion {path} changed since run {self.run_dir} trained on it "
                f"(sha256 {motion.sha256[:12]}… ≠ {self.config.motion_sha256[:12]}…)",
                fix="restore the original motion file",
            )
        self._motion = motion
        return motion


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one thread inside the block (restored after).

    A deterministic rollout calls the actor on a few rows between physics
    steps; OpenMP worker threads spinning against MuJoCo's threads on a busy
    machine made each call ~100× slower (walk, 16 rows: 19 ms on 2 threads, 0.18 ms on 1).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def resolve_checkpoint(run_dir: str | Path, checkpoint: str | Path | None = None) -> Path:
    """The checkpoint file to use: ``checkpoint`` (a path, a name in the run, ``best`` or an
    iteration number), else the newest ``model_<it>.pt`` (the end of training).
    ``load_trained_policy`` without a checkpoint prefers a ``model_best.pt`` chosen by the verdict
    checks."""
    run_dir = Path(run_dir)
    if checkpoint is None:
        found = numbered_checkpoints(run_dir) if run_dir.is_dir() else []
        if not found:
            raise CheckpointError(f"no model_<it>.pt checkpoint in {run_dir}",
                                  fix="train first: primebot train MOTION")
        return found[0][1]
    text = str(checkpoint)
    if text == "best":
        return run_dir / BEST_CHECKPOINT
    if text.isdigit():
        return run_dir / f"model_{text}.pt"
    path = Path(text)
    return path if path.is_file() or path.is_absolute() else run_dir / path


def run_policy_checkpoint(run_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The run's policy: ``model_best.pt`` when training chose it by its verdict checks (its payload
    carries ``best_check``), else the newest numbered checkpoint that loads (a damaged newest file
    falls back, as --resume does)."""
    best = run_dir / BEST_CHECKPOINT
    if best.is_file():
        try:
            payload = load_checkpoint(best, map_location="cpu")
        # damage only: any other reason stops (docs/architecture.md §3)
        except CorruptCheckpointError as exc:
            log.warning("warning: %s; using the newest numbered checkpoint",
                        str(exc).splitlines()[0])
        else:
            if payload.get("best_check") is not None:
                return best, payload
    return load_latest_good(run_dir, map_location="cpu")


def load_trained_policy(run_dir: str | Path, checkpoint: str | Path | None = None) -> TrainedPolicy:
    """Rebuild the run's actor and observation normaliser from a checkpoint (CPU, eval mode)."""
    run_dir = Path(run_dir)
    read_args(run_dir)  # a typed error naming the file when the run has no args.yaml
    if checkpoint is None:
        resolve_checkpoint(run_dir)  # names the run when it has no checkpoint at all
        path, payload = run_policy_checkpoint(run_dir)
    else:
        path = resolve_checkpoint(run_dir, checkpoint)
        payload = load_checkpoint(path, map_location="cpu")
    run_id = read_run_id(run_dir)
    assert run_id is not None  # read_args above found args.yaml
    require_same_run(payload, run_id, path)
    try:
        cfg = TrainConfig.from_dict(payload["config"])
        dims = payload["dims"]
        learner = payload["learner"]
    except (KeyError, TypeError) as exc:
        raise CheckpointError(
            f"checkpoint {path} lacks the config, dims or learner state: {exc}"
        ) from None
    pol = cfg.policy
    net = ActorCritic(
        dims["num_obs"], dims["num_critic_obs"], dims["num_actions"], pol.actor_hidden,
        pol.critic_hidden,
        pol.activation, pol.init_noise_std, pol.shared_log_std,
    )
    net.load_state_dict(learner["actor_critic"])
    normalizer: nn.Module = nn.Identity()
    if learner.get("obs_normalizer"):
        normalizer = EmpiricalNormalizer(dims["num_obs"])
        normalizer.load_state_dict(learner["obs_normalizer"])
    actor = net.actor.eval()
    normalizer.eval()
    return TrainedPolicy(
        config=cfg, actor=actor, obs_normalizer=normalizer, num_obs=int(dims["num_obs"]),
        num_actions=int(dims["num_actions"]), checkpoint=path,
        iteration=int(payload.get("iteration", 0)),
        run_dir=run_dir, digest=str(payload["digest"]), run_id=run_id,
    )


def make_run_env(
    registry: Registry,
    policy: TrainedPolicy,
    num_envs: int,
    *,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    num_threads: int | None = None,
) -> VecEnv:
    """The run's task environment again, as ``make_eval_env`` builds it."""
    cfg = policy.config
    motion = policy.motion() if registry.get("tasks", cfg.task).needs_motion else None
    env = make_eval_env(registry, cfg, motion, num_envs, seed=seed, overrides=overrides,
                        num_threads=num_threads)
    if env.num_obs != policy.num_obs or env.num_actions != policy.num_actions:
        env.close()
        raise CheckpointError(
            f"checkpoint {policy.checkpoint} expects {policy.num_obs} observations and "
            f"{policy.num_actions} actions; "
            f"task {cfg.task!r} now gives {env.num_obs} and {env.num_actions}",
            fix="evaluate with the primebot version (and task settings) the run was trained with",
        )
    return env


def make_eval_env(
    registry: Registry,
    cfg: TrainConfig,
    motion: Any,
    num_envs: int,
    *,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    num_threads: int | None = None,
) -> VecEnv:
    """The task environment of training configuration ``cfg`` (with its ``motion``) as the task
    plays it to judge a policy: its ``play.evaluation`` settings, then ``overrides`` (e.g.
    ``play.spread``), merged over the run's task settings."""
    spec = registry.get("tasks", cfg.task)
    robot = registry.get("robots", cfg.robot) if cfg.robot else None
    return spec.make_env(
        robot=robot, motion=motion, num_envs=num_envs, seed=seed,
        config=spec.play.config(cfg.task_config, overrides),
        registry=registry, num_threads=num_threads,
    )
