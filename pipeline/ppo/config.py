"""The learner's settings: the PPO algorithm and the actor-critic networks, every field documented.

Training's configuration (``train/config.py``) holds them as its ``ppo`` and ``policy`` sections.
Defaults follow mjlab's motion-tracking PPO.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCELERATOR_EPOCHS = 5
"""``num_learning_epochs=auto`` on a GPU or NPU: mjlab's 5 passes over each rollout."""
CPU_EPOCHS = 3
"""``num_learning_epochs=auto`` on a CPU, where the update bounds training: 3 passes, a third less update
time per iteration than 5 and the same tracking in the same wall-clock (docs/training.md, "Performance")."""


@dataclass
class PolicyConfig:
    """The actor-critic networks."""

    actor_hidden: tuple[int, ...] = (512, 256, 128)
    """Hidden layer widths of the actor MLP."""
    critic_hidden: tuple[int, ...] = (512, 256, 128)
    """Hidden layer widths of the critic MLP."""
    activation: str = "elu"
    """Activation between layers: elu, relu, tanh or silu."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the exploration noise."""
    shared_log_std: bool = False
    """One log-std for all actions instead of one per action."""
    empirical_normalization: bool = True
    """Normalise observations with running mean/std (saved with the policy, exported to ONNX)."""


@dataclass
class PPOConfig:
    """The PPO algorithm."""

    num_steps_per_env: int = 24
    """Environment steps per env collected each iteration."""
    num_learning_epochs: int | str = "auto"
    """Passes over the rollout per update; 'auto': ``ACCELERATOR_EPOCHS`` on a GPU or NPU, ``CPU_EPOCHS`` on a
    CPU (``learning_epochs``)."""
    num_mini_batches: int = 4
    """Mini-batches per epoch."""
    clip_param: float = 0.2
    """PPO ratio clip ε (also clips the value update)."""
    gamma: float = 0.99
    """Discount factor γ."""
    lam: float = 0.95
    """GAE λ."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    entropy_coef: float = 0.005
    """Weight of the entropy bonus."""
    learning_rate: float = 1e-3
    """Adam learning rate (initial value under the adaptive schedule)."""
    schedule: str = "adaptive"
    """'adaptive' (scale lr to keep KL near desired_kl) or 'fixed'."""
    desired_kl: float = 0.01
    """Target KL for the adaptive schedule."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""
    use_clipped_value_loss: bool = True
    """Clip the value update around the rollout's values (as the policy ratio)."""
    normalize_advantage: bool = True
    """Standardise advantages over the rollout."""
    mixed_precision: str = "auto"
    """Autocast in the update only: 'auto' (on where the device runs the autocast dtype natively: an
    accelerator, a CPU with bf16 instructions), 'on' or 'off'."""

    def learning_epochs(self, device_type: str) -> int:
        """``num_learning_epochs`` on a device of ``device_type`` ('cpu', 'cuda', 'npu'), 'auto' settled."""
        if self.num_learning_epochs == "auto":
            return CPU_EPOCHS if device_type == "cpu" else ACCELERATOR_EPOCHS
        return int(self.num_learning_epochs)
