"""The learner's settings: the PPO algorithm and the actor-critic networks, every field documented.

Training's configuration (``train/train_config.py``) holds them as its ``ppo`` and ``policy``
sections.
Defaults follow mjlab's motion-tracking PPO.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCELERATOR_EPOCHS = 5
"""``num_learning_epochs=auto`` on a GPU or NPU: mjlab's 5 passes over each rollout."""
CPU_EPOCHS = 3
"""``num_learning_epochs=auto`` on a CPU, where the update bounds training: 3 passes, a third less
update time per iteration than 5 and the same tracking in the same wall-clock (docs/training.md,
"Performance")."""

COMPILE_MIN_ROWS = 4096
"""``compile_update=auto`` compiles on a CPU from this many samples per mini-batch: there the
compiled forward and backward take ~18 % less time than eager, and the seconds spent compiling are
repaid in tens of iterations; below it the gain is ~9 % and a short run would not repay them
(docs/training.md, "Performance")."""
ROLLOUT_AUTOCAST_MIN_ENVS = 512
"""``rollout_mixed_precision=auto`` autocasts the collection forward on a CPU from this many envs:
at 1024 the actor and critic forward takes about half the time in bf16 (8.8 → 4.6 ms a step with the
default networks, 4.2 → 2.2 ms with the laptop ones); at the default preset's 256 envs the laptop
networks gain nothing (0.87 vs 0.91 ms), and sampling keeps float32."""
AUTO_ON_OFF = ("auto", "on", "off")
"""The values of the learner's on/off switches that a new run settles from its device."""


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
    init_action_gain: float = 1.0
    """Scales the actor's last layer at initialisation (1: PyTorch's default init); below 1 its bias
    also starts at 0, so the first policy's actions are near 0 (with the tracking task's
    ``actions.offset: reference``, the first policy replays the reference)."""
    empirical_normalization: bool = True
    """Normalise observations with running mean/std (saved with the policy, exported to ONNX)."""


@dataclass
class PPOConfig:
    """The PPO algorithm."""

    num_steps_per_env: int = 24
    """Environment steps per env collected each iteration."""
    num_learning_epochs: int | str = "auto"
    """Passes over the rollout per update; 'auto': ``ACCELERATOR_EPOCHS`` on a GPU or NPU,
    ``CPU_EPOCHS`` on a CPU (``learning_epochs``)."""
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
    symmetry: bool = False
    """Take the policy loss over each sample and its left-right mirror image too (``symmetry.py``;
    the task's env says how its observations and actions mirror, ``VecEnv.mirror``)."""
    mixed_precision: str = "auto"
    """Autocast in the update: 'auto' (on where the device runs the autocast dtype natively: an
    accelerator, a CPU with bf16 instructions), 'on' or 'off'."""
    rollout_mixed_precision: str = "auto"
    """Autocast the networks' forward while collecting too: 'auto' (on a CPU whose update autocasts,
    from ``ROLLOUT_AUTOCAST_MIN_ENVS`` envs; an accelerator keeps float32 sampling), 'on' or 'off'.
    Probes, evaluation and the ONNX run float32 either way."""
    compile_update: str = "auto"
    """``torch.compile`` the networks' forward and backward in the update: 'auto' (on a CPU from
    ``COMPILE_MIN_ROWS`` samples per mini-batch), 'on' or 'off'. A compile that fails runs eagerly,
    with a warning."""

    def learning_epochs(self, device_type: str) -> int:
        """``num_learning_epochs`` on a device of ``device_type`` ('cpu', 'cuda', 'npu'), 'auto'
        settled."""
        if self.num_learning_epochs == "auto":
            return CPU_EPOCHS if device_type == "cpu" else ACCELERATOR_EPOCHS
        return int(self.num_learning_epochs)

    def settle_auto_switches(self, device_type: str, num_envs: int) -> list[str]:
        """Settle ``rollout_mixed_precision`` and ``compile_update`` when they are 'auto' (after
        ``mixed_precision``, which the rollout's follows); returns what was settled and why, for the
        log."""
        on_cpu = device_type == "cpu"
        settled = []
        if self.rollout_mixed_precision == "auto":
            on = on_cpu and self.mixed_precision == "on" and num_envs >= ROLLOUT_AUTOCAST_MIN_ENVS
            self.rollout_mixed_precision = "on" if on else "off"
            settled.append(f"rollout mixed precision: {self.rollout_mixed_precision} (auto: "
                           "update's "
                           f"{self.mixed_precision}, {num_envs} envs on {device_type}; on a CPU "
                           "from "
                           f"{ROLLOUT_AUTOCAST_MIN_ENVS})")
        if self.compile_update == "auto":
            rows = self.num_steps_per_env * num_envs // self.num_mini_batches
            self.compile_update = "on" if on_cpu and rows >= COMPILE_MIN_ROWS else "off"
            settled.append(f"compiled update: {self.compile_update} (auto: {rows} samples per "
                           "mini-batch "
                           f"on {device_type}; compiles on a CPU from {COMPILE_MIN_ROWS})")
        return settled
