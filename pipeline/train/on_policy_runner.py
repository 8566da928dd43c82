"""The on-policy training loop: collect, update, log, checkpoint (docs/architecture.md §3, §6).

Per environment step exactly one host→device copy (observations, critic
observations and host-drawn noise packed in one pinned buffer, see
``transfer``) and one device→host copy (actions). Rewards and done flags stay on the host until
the rollout ends and cross in one copy. torch runs with ``collect_threads``
while MuJoCo steps (its OpenMP threads would otherwise spin on MuJoCo's
cores) and with ``update_threads`` during the update.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import NonFiniteError
from ..ppo.algorithm import PPO
from ..ppo.networks import ActorCritic
from ..ppo.normalizer import EmpiricalNormalizer
from ..sim.env import VecEnv
from ..sim.physics import available_cores
from .checkpoint_keeping import CheckpointKeeping
from .distributed import DistContext
from .log import TrainingLog
from .runner_state import EPISODE_WINDOW, RunnerState, config_hash
from .settings_layers import TRAIN_ON
from .signals import install_stop_handlers
from .time_budget import early_warning, projection_point, time_left
from .train_config import TrainConfig
from .transfer import StepTransfer
from .verdict_checks import Probe, VerdictChecks

log = logging.getLogger(__name__)


def auto_update_threads() -> int:
    """All cores for the update. primebot sets OMP_WAIT_POLICY=PASSIVE before torch loads: with
    OpenMP's default active waiting, 2 update threads on 2 busy cores were 4.7× slower than 1."""
    return available_cores()


@dataclass
class RunResult:
    """How ``learn`` ended."""

    iteration: int
    status: str
    """``finished`` or ``interrupted`` (a signal; the run resumes from ``checkpoint``)."""
    checkpoint: Path | None = None
    signal_name: str = ""
    reason: str = ""
    """Why training finished before ``cfg.iterations`` (the stop rule, the time limit); empty
    otherwise."""
    time_limited: bool = False
    """``runner.time_limit_min`` ended training."""
    first_iteration: int = 0
    """The iteration this call of ``learn`` started from (a resume's checkpoint)."""


class _MeanAction:
    """The learner's deterministic policy (normalised observation → mean action) as an
    ``act(obs)``."""

    def __init__(self, ppo: PPO, device: str) -> None:
        self.ppo, self.device = ppo, device

    def act(self, obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.device)
        return self.ppo.actor_critic.action_mean(self.ppo.obs_normalizer(x)).float().cpu().numpy()


class OnPolicyRunner(CheckpointKeeping, RunnerState):
    """Owns the environment, the PPO learner, the run directory's files and the loop."""

    def __init__(
        self,
        env: VecEnv,
        cfg: TrainConfig,
        *,
        run_dir: str | Path | None = None,
        dist: DistContext | None = None,
        autocast_dtype: torch.dtype | None = None,
        tensorboard: bool = False,
        progress: bool = True,
        probe: Probe | None = None,
        train_on: str = TRAIN_ON,
        longer_budget: tuple[float, str] | None = None,
    ) -> None:
        self.env = env
        self.train_on = train_on
        """How the caller trains this run on (``TrainRequest.train_on``): what a stop by signal, a
        non-finite update and the time limit's early warning advise."""
        self.longer_budget = longer_budget
        """A longer time limit the caller offers (``TrainRequest.longer_budget``)."""
        self.checks = VerdictChecks(probe, stops=cfg.runner.stop_when_tracked)
        """The verdict checks (``runner.check_interval``): ``probe`` scores the deterministic policy
        (an object with ``act(obs)``) in a task-made evaluation env and returns its metrics with the
        ``verdict``; None: no checks."""
        self.cfg = cfg
        self.dist = dist or DistContext()
        self.device = cfg.device
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.tensorboard = tensorboard
        self.progress = progress
        self.config_hash = config_hash(cfg)
        self._seed_everything(cfg.seed)
        self.ppo = self._build_learner(autocast_dtype)
        self.dist.broadcast_module(self.ppo.actor_critic)
        self.transfer = StepTransfer(
            env.num_envs, env.num_obs, env.num_critic_obs, env.num_actions, self.device,
            host_noise=cfg.runner.noise == "host",
        )
        self.iteration = 0
        self.best_return = -float("inf")
        self.episode_returns: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.episode_lengths: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self._ep_return = np.zeros(env.num_envs, dtype=np.float64)
        self._ep_length = np.zeros(env.num_envs, dtype=np.int64)
        obs, critic_obs = env.reset()
        self.transfer.stage(obs, critic_obs)
        self._stop: str = ""
        self.timing: dict[str, float] = {}
        self.run_id: str | None = None
        """The run's identity (args.yaml ``run.id``), carried by every checkpoint; ``restore``
        refuses another run's."""
        self._train_log: TrainingLog | None = None
        self._saved_iteration = -1
        self._time_limited = False

    # -- construction ---------------------------------------------------------------
    def _seed_everything(self, seed: int) -> None:
        # The same torch seed on every rank gives identical initial weights
        # (broadcast makes sure); numpy/python streams differ per rank.
        torch.manual_seed(seed)
        np.random.seed((seed + 100_003 * self.dist.rank) % 2**32)
        random.seed(seed + 100_003 * self.dist.rank)

    def _build_learner(self, autocast_dtype: torch.dtype | None) -> PPO:
        env, cfg, pol = self.env, self.cfg, self.cfg.policy
        actor_critic = ActorCritic(
            env.num_obs, env.num_critic_obs, env.num_actions, pol.actor_hidden, pol.critic_hidden,
            pol.activation, pol.init_noise_std, pol.shared_log_std, pol.init_action_gain,
        )
        obs_norm = EmpiricalNormalizer(env.num_obs) if pol.empirical_normalization else None
        critic_norm = (
            EmpiricalNormalizer(env.num_critic_obs) if pol.empirical_normalization else None
        )
        # session.resolve_auto_settings settles auto before the runner is built
        use_amp = cfg.ppo.mixed_precision == "on"
        return PPO(
            actor_critic, cfg.ppo, env.num_envs, env.num_obs, env.num_critic_obs, self.device,
            obs_normalizer=obs_norm, critic_normalizer=critic_norm, noise=cfg.runner.noise,
            seed=cfg.seed + 100_003 * self.dist.rank,
            autocast_dtype=autocast_dtype if use_amp else None,
            rollout_autocast_dtype=autocast_dtype if cfg.ppo.rollout_mixed_precision == "on"
            else None,
            compile_update=cfg.ppo.compile_update == "on",
            reduce=self.dist.all_reduce_sum if self.dist.enabled else None,
            world_size=self.dist.world_size,
            mirror=env.mirror() if cfg.ppo.symmetry else None,
        )

    # -- collection -----------------------------------------------------------------
    def _check_finite(self, what: str, array: np.ndarray, step: int) -> None:
        if np.isfinite(array).all():
            return
        bad = np.argwhere(~np.isfinite(array))[0]
        where = f"env {bad[0]}" + (f", column {bad[1]}" if len(bad) > 1 else "")
        raise NonFiniteError(
            f"non-finite {what} at iteration {self.iteration + 1}, step {step} ({where}); training "
            "stopped, "
            "no checkpoint written for this iteration",
            fix="check the task's observation/reward terms and the motion for bad frames; resume "
                "from the last checkpoint",
        )

    def collect(self) -> dict[str, float]:
        """One rollout of ``num_steps_per_env`` steps into the learner's storage; returns info
        means."""
        ppo, env, transfer = self.ppo, self.env, self.transfer
        info_sums: dict[str, float] = {}
        info_counts: dict[str, int] = {}
        reward_sum = 0.0
        t_env = t_transfer = t_policy = 0.0
        with torch.inference_mode():
            for step in range(self.cfg.ppo.num_steps_per_env):
                t0 = time.perf_counter()
                if transfer.noise is not None:
                    ppo.sample_noise(transfer.noise)
                obs, critic_obs, noise = transfer.to_device()
                t1 = time.perf_counter()
                obs_n, critic_n = ppo.normalize(obs, critic_obs, update=True)
                actions = ppo.act(obs_n, critic_n, noise)
                host_actions = transfer.actions_to_host(actions)
                t2 = time.perf_counter()
                t_policy += t2 - t1
                result = env.step(host_actions)
                t3 = time.perf_counter()
                self._check_finite("observations", result.obs, step)
                self._check_finite("critic observations", result.critic_obs, step)
                self._check_finite("rewards", result.reward, step)
                ppo.process_env_step(result.reward, result.terminated, result.truncated)
                transfer.stage(result.obs, result.critic_obs)
                reward_sum += float(result.reward.mean())
                self._track_episodes(result.reward, result.terminated | result.truncated)
                for key, value in result.info.items():
                    if isinstance(value, (int, float, np.number)) or (isinstance(value, np.ndarray)
                                                                      and value.size == 1):
                        info_sums[key] = info_sums.get(key, 0.0) + float(value)
                        info_counts[key] = info_counts.get(key, 0) + 1
                t4 = time.perf_counter()
                t_transfer += t1 - t0 + (t4 - t3)
                t_env += t3 - t2
            obs, critic_obs, _ = transfer.to_device()
            _, critic_n = ppo.normalize(obs, critic_obs, update=False)
            ppo.compute_returns(critic_n)
        self.timing["env_s"] = t_env
        self.timing["transfer_s"] = t_transfer
        self.timing["policy_s"] = t_policy
        out = {key: info_sums[key] / info_counts[key] for key in sorted(info_sums)}
        out["reward_mean"] = reward_sum / self.cfg.ppo.num_steps_per_env
        return out

    def _track_episodes(self, reward: np.ndarray, done: np.ndarray) -> None:
        self._ep_return += reward
        self._ep_length += 1
        if done.any():
            ids = np.flatnonzero(done)
            self.episode_returns.extend(self._ep_return[ids].tolist())
            self.episode_lengths.extend(self._ep_length[ids].astype(float).tolist())
            self._ep_return[ids] = 0.0
            self._ep_length[ids] = 0

    # -- the loop -------------------------------------------------------------------
    def learn(self) -> RunResult:
        """Train until ``cfg.iterations`` or a signal; files are written by rank 0 only."""
        writes = self.run_dir is not None and self.dist.is_main
        train_log = None
        if writes:
            train_log = TrainingLog(
                self.run_dir, keep_until=self.iteration,
                plot_interval_s=self.cfg.runner.plot_interval_s,
                tensorboard=self.tensorboard,
            )
        self._train_log = train_log
        bar = self._progress_bar() if self.dist.is_main and self.progress else None
        console = contextlib.ExitStack()
        if bar is not None:
            from tqdm.contrib.logging import logging_redirect_tqdm

            # a warning on the console goes above the bar on a line of its own, not after its text
            console.enter_context(logging_redirect_tqdm())
        restore = install_stop_handlers(self.request_stop)
        default_threads = torch.get_num_threads()
        start, first_iteration = time.perf_counter(), self.iteration
        project_at = first_iteration + projection_point(self.cfg, self.checks_verdict)
        failing = False
        done = ""
        try:
            while self.iteration < self.cfg.iterations:
                row = self._one_iteration(default_threads, start)
                done = self._stop_rule(row, time.perf_counter() - start)
                if self.iteration == project_at and not done and self.dist.is_main:
                    # where the time limit will end training, said now rather than at its end
                    warning = early_warning(self.cfg, self.iteration, first_iteration,
                                            time.perf_counter() - start, self.longer_budget)
                    if warning:
                        log.warning("warning: %s", warning)
                if train_log is not None:
                    train_log.log(row)
                if bar is not None:
                    ret = row.get("episode_return")
                    postfix = {"sps": f"{row['sps']:.0f}",
                               "ret": "-" if ret is None else f"{ret:.3f}"}
                    left = time_left(self.cfg, row["elapsed_s"])
                    if left is not None:
                        # the ETA counts to the last iteration; the time limit may come first
                        postfix["limit_in"] = bar.format_interval(left)
                    bar.set_postfix(postfix, refresh=False)
                    bar.update(1)
                self._maybe_save(row)
                if done:
                    log.warning("%s: training stopped after iteration %d of %d", done,
                                self.iteration,
                                self.cfg.iterations)
                    break

                stop = self._agreed_stop()
                if stop:
                    path = self.save_numbered()
                    self.dist.barrier()
                    log.warning(
                        "%s received: stopped after iteration %d%s", stop, self.iteration,
                        f"; resume with: {self.train_on_command()}" if self.run_dir else "",
                    )
                    return RunResult(self.iteration, "interrupted", path, stop)
            if self.checks.final_choice_due:
                # every rank writes the last checkpoint again: it records the final choice
                self._saved_iteration = -1
                chosen = self.choose_final_best()
                done = f"{done}; {chosen}" if done and chosen else done or chosen
            path = self.save_numbered()
            self.dist.barrier()
            return RunResult(self.iteration, "finished", path, reason=done,
                             time_limited=self._time_limited, first_iteration=first_iteration)
        except BaseException:
            failing = True
            raise
        finally:
            restore()
            torch.set_num_threads(default_threads)
            console.close()
            if bar is not None:
                bar.close()
            if train_log is not None:
                self._train_log = None
                # a full disk under the log is raised here, unless another error is already on its
                # way
                train_log.close(raise_errors=not failing)

    def _one_iteration(self, default_threads: int, start: float) -> dict[str, Any]:
        runner_cfg = self.cfg.runner
        t0 = time.perf_counter()
        torch.set_num_threads(runner_cfg.collect_threads if runner_cfg.collect_threads > 0
                              else available_cores())
        infos = self.collect()
        t1 = time.perf_counter()
        torch.set_num_threads(runner_cfg.update_threads if runner_cfg.update_threads > 0
                              else auto_update_threads())
        metrics = self.ppo.update()
        t2 = time.perf_counter()
        if self.ppo.nonfinite:
            raise NonFiniteError(
                f"non-finite {', '.join(self.ppo.nonfinite)} in the PPO update of iteration "
                f"{self.iteration + 1}; "
                "training stopped, no checkpoint written for this iteration",
                fix="check rewards for huge values, then resume with a lower learning rate or "
                    f"gradient clip: {self.train_on_command()} --set ppo.learning_rate=1e-4",
            )
        self.iteration += 1
        steps = self.cfg.ppo.num_steps_per_env * self.env.num_envs * self.dist.world_size
        self.timing.update(collect_s=t1 - t0, update_s=t2 - t1)
        row: dict[str, Any] = {
            "iteration": self.iteration,
            "env_steps": self.iteration * steps,
            **self._episode_statistics(infos.pop("reward_mean")),
            "loss_surrogate": metrics["surrogate"],
            "loss_value": metrics["value"],
            "entropy": metrics["entropy"],
            "approx_kl": metrics["approx_kl"],
            "approx_kl_last": metrics["approx_kl_last"],
            "clip_fraction": metrics["clip_fraction"],
            "learning_rate": metrics["learning_rate"],
            "action_std": metrics["action_std"],
            "sps": steps / (t2 - t0),
            "collect_s": t1 - t0,
            "transfer_s": self.timing["transfer_s"],
            "update_s": t2 - t1,
            "elapsed_s": time.perf_counter() - start,
        }
        row.update(infos)
        return row

    def _stop_rule(self, row: dict[str, Any], elapsed_s: float) -> str:
        """Check the verdict when due (its figures go into ``row``); why training should finish now,
        or ''."""
        runner_cfg = self.cfg.runner
        if self.checks_verdict and self.iteration % runner_cfg.check_interval == 0:
            with torch.no_grad():
                row.update(self.checks.check(_MeanAction(self.ppo, self.device), self.env,
                                             self.iteration))
            if runner_cfg.stop_when_tracked and self.checks.done:
                return (f"the policy tracked its motion{self.checks.robustness_note} at "
                        f"{self.checks.tracked_in_a_row} "
                        f"checks in a row{self.checks.pooled_note} ({self.checks.last_reason})")
        if time_left(self.cfg, elapsed_s) == 0.0:
            self._time_limited = True
            return f"time limit of {runner_cfg.time_limit_min:g} min reached"
        return ""

    def _episode_statistics(self, reward_mean: float) -> dict[str, float | None]:
        """Mean step reward and recent episode return/length, over all ranks (identical on each)."""
        returns, lengths = self.episode_returns, self.episode_lengths
        if not self.dist.enabled:
            return {
                "reward_mean": reward_mean,
                "episode_return": float(np.mean(returns)) if returns else None,
                "episode_length": float(np.mean(lengths)) if lengths else None,
            }
        stats = torch.tensor([reward_mean, float(np.sum(returns)), float(np.sum(lengths)),
                              float(len(returns))],
                             dtype=torch.float64, device=self.device)
        reward, ret, length, count = self.dist.all_reduce_sum(stats).tolist()
        return {
            "reward_mean": reward / self.dist.world_size,
            "episode_return": ret / count if count else None,
            "episode_length": length / count if count else None,
        }

    # -- signals and progress -------------------------------------------------------
    def train_on_command(self) -> str:
        """The caller's command that trains this run on, with its run directory (``RUN_DIR`` where
        this rank writes none)."""
        return self.train_on.format(run_dir=self.run_dir or "RUN_DIR")

    def request_stop(self, reason: str = "stop") -> None:
        """Ask the loop to checkpoint and return after the current iteration (signal handlers call
        this)."""
        self._stop = reason
        log.warning("%s: finishing iteration %d, then checkpoint and exit (again to abort)", reason,
                    self.iteration + 1)

    def _agreed_stop(self) -> str:
        if not self.dist.enabled:
            return self._stop
        flag = torch.tensor([1.0 if self._stop else 0.0], device=self.device)
        self.dist.all_reduce_sum(flag)
        return (self._stop or "SIGTERM") if float(flag) > 0 else ""

    def _progress_bar(self):
        from tqdm import tqdm

        return tqdm(total=self.cfg.iterations, initial=self.iteration, unit="it", desc="train",
                    dynamic_ncols=True, mininterval=1.0)

