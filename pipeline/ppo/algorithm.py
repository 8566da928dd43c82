"""PPO: the verbs ``act``, ``process_env_step``, ``compute_returns`` and ``update``.

The runner owns the loop; this class owns the networks, the optimiser, the
rollout storage and the random streams the learner consumes. Names follow
the paper and cleanrl (``ratio``, ``pg_loss1``, ``pg_loss2``, ``v_loss_clipped``,
``approx_kl``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import numpy as np
import torch
from torch import nn

from . import gaussian
from .compiled import CompiledOrEager
from .config import PPOConfig
from .networks import ActorCritic
from .normalizer import EmpiricalNormalizer, Reducer
from .storage import RolloutStorage
from .symmetry import Mirror

log = logging.getLogger(__name__)

NONFINITE_NAMES = ("surrogate loss", "value loss", "entropy", "gradients")


class PPO:
    """Proximal Policy Optimisation with clipped surrogate and value losses, GAE and adaptive lr."""

    def __init__(
        self,
        actor_critic: ActorCritic,
        cfg: PPOConfig,
        num_envs: int,
        num_obs: int,
        num_critic_obs: int,
        device: str = "cpu",
        *,
        obs_normalizer: nn.Module | None = None,
        critic_normalizer: nn.Module | None = None,
        noise: str = "host",
        seed: int = 0,
        autocast_dtype: torch.dtype | None = None,
        rollout_autocast_dtype: torch.dtype | None = None,
        compile_update: bool = False,
        reduce: Reducer | None = None,
        world_size: int = 1,
        mirror: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        if noise not in ("host", "device"):
            raise ValueError(f"noise must be 'host' or 'device', not {noise!r}")
        self.cfg = cfg
        self.device = device
        self.actor_critic = actor_critic.to(device)
        self.obs_normalizer = (obs_normalizer or nn.Identity()).to(device)
        self.critic_normalizer = (critic_normalizer or nn.Identity()).to(device)
        self.optimizer = torch.optim.Adam(self.actor_critic.parameters(), lr=cfg.learning_rate,
                                          fused=_fused_adam(device))
        self.learning_rate = cfg.learning_rate
        self.num_actions = actor_critic.num_actions
        self.storage = RolloutStorage(cfg.num_steps_per_env, num_envs, num_obs, num_critic_obs,
                                      self.num_actions, device)
        # Rewards and done flags are produced on the host; they stay there for the
        # whole rollout and cross to the device in one copy in compute_returns.
        self.host_step_data = np.zeros((cfg.num_steps_per_env, 3, num_envs), dtype=np.float32)
        self.noise = noise
        self.host_rng = np.random.default_rng(seed)
        self.device_rng = torch.Generator(device=device)
        self.device_rng.manual_seed(seed)
        self.autocast_dtype = autocast_dtype
        """The update's autocast dtype (None: float32)."""
        self.rollout_autocast_dtype = rollout_autocast_dtype
        """The collection forward's autocast dtype (None: float32)."""
        self._compiled_forward = (
            CompiledOrEager(self._forward, "the update's forward") if compile_update else None
        )
        self.scaler = _grad_scaler(device) if autocast_dtype == torch.float16 else None
        self.reduce = reduce
        self.world_size = world_size
        self.mirror = (None if mirror is None else
                       Mirror(*mirror, num_obs, self.num_actions, self.obs_normalizer, device))
        """With ``(observation, action)`` mirrors (``VecEnv.mirror``), the policy loss is taken
        over each sample and its mirror image too (symmetry.py)."""
        self.nonfinite: list[str] = []
        """What went non-finite in the last ``update`` (empty when all is well)."""

    @property
    def compile_failure(self) -> str | None:
        """Why the update's compile failed and it runs eagerly; None when compiled as asked, or not
        asked."""
        return self._compiled_forward.failure if self._compiled_forward is not None else None

    # -- acting ----------------------------------------------------------------
    def sample_noise(self, out: np.ndarray) -> None:
        """Fill ``out`` [N, A] with standard-normal noise from the host RNG (float32, no
        allocation)."""
        self.host_rng.standard_normal(out=out, dtype=np.float32)

    def normalize(self, obs: torch.Tensor, critic_obs: torch.Tensor,
                  update: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply (and optionally update) the observation normalisers."""
        if update:
            for norm, x in ((self.obs_normalizer, obs), (self.critic_normalizer, critic_obs)):
                if isinstance(norm, EmpiricalNormalizer):
                    norm.update(x, self.reduce)
        return self.obs_normalizer(obs), self.critic_normalizer(critic_obs)

    def act(self, obs: torch.Tensor, critic_obs: torch.Tensor,
            noise: torch.Tensor | None = None) -> torch.Tensor:
        """Sample actions for normalised ``obs`` [N, O] and record the transition's device half.

        ``noise`` [N, A] is standard-normal noise that came from the host with the
        observations; without it (device noise) it is drawn here on the device.
        """
        mean, values = self._forward(obs, critic_obs, self.rollout_autocast_dtype)
        log_std = self.actor_critic.action_log_std().expand_as(mean)
        if noise is None:
            noise = torch.randn(mean.shape, generator=self.device_rng, device=mean.device,
                                dtype=mean.dtype)
        actions = mean + torch.exp(log_std) * noise
        log_probs = gaussian.log_prob(actions, mean, log_std)
        self.storage.add(obs, critic_obs, actions, mean, log_std, log_probs, values)
        return actions

    def process_env_step(self, rewards: np.ndarray, terminated: np.ndarray,
                         truncated: np.ndarray) -> None:
        """Record the host half of the transition last passed to ``act``."""
        row = self.host_step_data[self.storage.step - 1]
        row[0] = rewards
        row[1] = terminated
        row[2] = truncated

    def compute_returns(self, last_critic_obs: torch.Tensor) -> None:
        """Move the rollout's rewards to the device (one copy), bootstrap time-outs, run GAE."""
        step_data = torch.from_numpy(self.host_step_data).to(self.device)
        rewards, terminated, truncated = step_data.unbind(1)
        s = self.storage
        # A time-out is not a failure: the return continues past it, so add the
        # discounted value of the state (rsl_rl's approximation: V of the last
        # observed state, as the true next state was already reset).
        s.rewards.copy_(rewards + self.cfg.gamma * s.values * truncated)
        s.dones.copy_(torch.clamp(terminated + truncated, max=1.0))
        s.truncated.copy_(truncated)
        last_values = self.actor_critic.value(last_critic_obs)
        s.compute_returns(last_values, self.cfg.gamma, self.cfg.lam)
        if self.cfg.normalize_advantage:
            adv = s.advantages
            s.advantages.copy_((adv - adv.mean()) / (adv.std() + 1e-8))

    # -- learning --------------------------------------------------------------
    def _permutation(self, total: int) -> torch.Tensor:
        if self.noise == "host":
            return torch.from_numpy(self.host_rng.permutation(total)).to(self.device)
        return torch.randperm(total, generator=self.device_rng, device=self.device)

    def _forward(self, obs: torch.Tensor, critic_obs: torch.Tensor,
                 dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Action means and values, float32, the networks run under autocast to ``dtype`` (None:
        float32); the rollout's (``act``) and the update's (``losses``, compiled when
        ``compile_update``)."""
        with _autocast(self.device, dtype):
            mean = self.actor_critic.action_mean(obs)
            values = self.actor_critic.value(critic_obs)
        return mean.float(), values.float()

    def losses(self, batch) -> dict[str, torch.Tensor]:
        """The PPO losses of one mini-batch (float32 even under autocast)."""
        cfg = self.cfg
        obs, actions, old_log_probs, advantages = (batch.obs, batch.actions, batch.log_probs,
                                                   batch.advantages)
        if self.mirror is not None:  # the samples, then their mirror images (symmetry.py)
            obs = torch.cat([obs, self.mirror.observations(obs)])
            actions = torch.cat([actions, self.mirror.actions(actions)])
            old_log_probs = torch.cat([old_log_probs, old_log_probs])
            advantages = torch.cat([advantages, advantages])
        all_mean, values = (self._compiled_forward or self._forward)(obs, batch.critic_obs,
                                                                     self.autocast_dtype)
        log_std = self.actor_critic.action_log_std().expand_as(all_mean)
        new_log_probs = gaussian.log_prob(actions, all_mean, log_std)
        ratio = torch.exp(new_log_probs - old_log_probs)
        pg_loss1 = -advantages * ratio
        pg_loss2 = -advantages * torch.clamp(ratio, 1.0 - cfg.clip_param, 1.0 + cfg.clip_param)
        pg_loss = torch.max(pg_loss1, pg_loss2).mean()
        originals = len(batch.obs)
        mean, log_std, ratio = all_mean[:originals], log_std[:originals], ratio[:originals]
        if cfg.use_clipped_value_loss:
            v_clipped = batch.values + torch.clamp(values - batch.values, -cfg.clip_param,
                                                   cfg.clip_param)
            v_loss_unclipped = (values - batch.returns) ** 2
            v_loss_clipped = (v_clipped - batch.returns) ** 2
            v_loss = torch.max(v_loss_unclipped, v_loss_clipped).mean()
        else:
            v_loss = ((values - batch.returns) ** 2).mean()
        entropy = gaussian.entropy(log_std).mean()
        with torch.no_grad():
            approx_kl = gaussian.kl_divergence(batch.mean, batch.log_std, mean, log_std).mean()
            clip_fraction = ((ratio - 1.0).abs() > cfg.clip_param).float().mean()
        return {
            "surrogate": pg_loss,
            "value": v_loss,
            "entropy": entropy,
            "loss": pg_loss + cfg.value_loss_coef * v_loss - cfg.entropy_coef * entropy,
            "approx_kl": approx_kl,
            "clip_fraction": clip_fraction,
        }

    def _adapt_learning_rate(self, kl: torch.Tensor) -> None:
        if self.reduce is not None:
            kl = self.reduce(kl.clone()) / self.world_size
        kl_value = float(kl)
        if kl_value > 2.0 * self.cfg.desired_kl:
            self.learning_rate = max(1e-5, self.learning_rate / 1.5)
        elif 0.0 < kl_value < 0.5 * self.cfg.desired_kl:
            self.learning_rate = min(1e-2, self.learning_rate * 1.5)
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def _all_reduce_gradients(self) -> None:
        params = [p for p in self.actor_critic.parameters() if p.grad is not None]
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        flat = self.reduce(flat) / self.world_size
        offset = 0
        for p in params:
            n = p.grad.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n

    def update(self) -> dict[str, float]:
        """Epochs × mini-batches of PPO on the stored rollout; returns mean metrics.

        Non-finite losses, gradients or parameters are flagged on the device
        and read once at the end (one sync); their names land in ``self.nonfinite``.
        """
        cfg = self.cfg
        s = self.storage
        total = s.num_steps * s.num_envs
        perms = [self._permutation(total)
                 for _ in range(cfg.learning_epochs(torch.device(self.device).type))]
        sums: dict[str, torch.Tensor] = {}
        flags = torch.zeros(len(NONFINITE_NAMES), dtype=torch.bool, device=self.device)
        params = list(self.actor_critic.parameters())
        count, rate_sum = 0, 0.0
        for batch in s.mini_batches(cfg.num_mini_batches, perms):
            out = self.losses(batch)
            if cfg.desired_kl > 0 and cfg.schedule == "adaptive":
                self._adapt_learning_rate(out["approx_kl"])
            rate_sum += self.learning_rate
            self.optimizer.zero_grad(set_to_none=False)
            if self.scaler is not None:
                self.scaler.scale(out["loss"]).backward()
                self.scaler.unscale_(self.optimizer)
            else:
                out["loss"].backward()
            if self.reduce is not None:
                self._all_reduce_gradients()
            grad_norm = nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            step_flags = torch.stack([
                ~torch.isfinite(out["surrogate"]), ~torch.isfinite(out["value"]),
                ~torch.isfinite(out["entropy"]), ~torch.isfinite(grad_norm),
            ])
            flags |= step_flags
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            for key, value in out.items():
                sums[key] = sums.get(key, 0.0) + value.detach()
            count += 1
        s.clear()
        metrics = {key: float(value) / count for key, value in sums.items()}
        # the rate each step used, averaged: the adaptive schedule ramps it within an update (its
        # KL counts from the collecting policy, so it starts at 0 every update) and the rate left
        # at the end is not the one the update moved by (docs/experiments/robustness.md,
        # "The rate within an update")
        metrics["learning_rate"] = rate_sum / count
        # how far the update moved the policy from the one that collected the rollout (approx_kl
        # averages the mini-batches, the first of which have hardly moved it)
        metrics["approx_kl_last"] = float(out["approx_kl"])
        with torch.no_grad():
            metrics["action_std"] = float(torch.exp(self.actor_critic.action_log_std()).mean())
        bad = [name for name, flag in zip(NONFINITE_NAMES, flags.tolist(), strict=True) if flag]
        bad += [f"parameter {name}" for name, p in self.actor_critic.named_parameters()
                if not bool(torch.isfinite(p).all())]
        self.nonfinite = bad
        return metrics

    # -- state -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Weights, optimiser, normalisers and learning rate (identical on every rank)."""
        return {
            "actor_critic": self.actor_critic.state_dict(),
            "obs_normalizer": self.obs_normalizer.state_dict(),
            "critic_normalizer": self.critic_normalizer.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "learning_rate": self.learning_rate,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor_critic.load_state_dict(state["actor_critic"])
        self.obs_normalizer.load_state_dict(state["obs_normalizer"])
        self.critic_normalizer.load_state_dict(state["critic_normalizer"])
        fused = [group["fused"] for group in self.optimizer.param_groups]
        self.optimizer.load_state_dict(state["optimizer"])
        for group, kernel in zip(self.optimizer.param_groups, fused, strict=True):
            group["fused"] = kernel  # this device's kernel, not the one the checkpoint's ran
        self.learning_rate = float(state["learning_rate"])
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def rng_state(self) -> dict[str, Any]:
        """The learner's random streams (per rank: each rank draws its own noise)."""
        return {"host": self.host_rng.bit_generator.state, "device": self.device_rng.get_state()}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self.host_rng.bit_generator.state = state["host"]
        try:
            self.device_rng.set_state(state["device"])
        # saved on another device type: its stream cannot continue here
        except (RuntimeError, TypeError):
            log.warning(
                "warning: the device RNG state comes from another device type; reseeding it"
            )


FUSED_ADAM_DEVICES = ("cpu", "cuda")
"""Device types whose Adam step runs as one fused kernel: on a 2-core CPU with the laptop networks
the 16 steps of an update take 3 ms in all against 27 ms for torch's per-tensor loop, a few
percent of an iteration (docs/training.md, "Performance"). Other devices (an NPU) keep torch's
default."""


def _fused_adam(device: str) -> bool | None:
    """``fused`` for Adam on ``device``: True where the fused kernel exists, else torch's
    default."""
    return True if torch.device(device).type in FUSED_ADAM_DEVICES else None


def _autocast(device: str, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """Autocast to ``dtype`` on ``device``'s type; no autocast for None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def _grad_scaler(device: str) -> torch.amp.GradScaler | None:
    """A loss scaler for float16 autocast, or None where this torch has none for the device."""
    try:
        return torch.amp.GradScaler(torch.device(device).type)
    except (RuntimeError, ValueError, AttributeError) as exc:
        log.warning("warning: no gradient scaler for %s (%s); float16 updates run unscaled", device,
                    exc)
        return None
