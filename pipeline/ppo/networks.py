"""Actor and critic MLPs (ELU) with a learned, state-independent log-std."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh,
                                           "silu": nn.SiLU}


def mlp(num_in: int, hidden: Sequence[int], num_out: int, activation: str = "elu") -> nn.Sequential:
    """Linear layers of the given widths with ``activation`` between them (none after the last)."""
    try:
        act = ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"unknown activation {activation!r}; choose one of "
                         f"{', '.join(ACTIVATIONS)}") from None
    layers: list[nn.Module] = []
    width = num_in
    for size in hidden:
        layers += [nn.Linear(width, int(size)), act()]
        width = int(size)
    layers.append(nn.Linear(width, num_out))
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """Gaussian policy π(a|o) = N(actor(o), exp(log_std)²) and value V(critic_obs).

    Observations arrive already normalised. ``log_std`` has one entry per
    action, or a single shared entry when ``shared_log_std`` (seed 000's
    policy); ``action_log_std`` broadcasts it to [A] either way.
    """

    def __init__(
        self,
        num_obs: int,
        num_critic_obs: int,
        num_actions: int,
        actor_hidden: Sequence[int] = (512, 256, 128),
        critic_hidden: Sequence[int] = (512, 256, 128),
        activation: str = "elu",
        init_noise_std: float = 1.0,
        shared_log_std: bool = False,
        init_action_gain: float = 1.0,
    ) -> None:
        super().__init__()
        self.num_actions = num_actions
        self.actor = mlp(num_obs, actor_hidden, num_actions, activation)
        if init_action_gain != 1.0:
            last = self.actor[-1]
            with torch.no_grad():
                last.weight.mul_(init_action_gain)
                last.bias.zero_()
        self.critic = mlp(num_critic_obs, critic_hidden, 1, activation)
        size = 1 if shared_log_std else num_actions
        self.log_std = nn.Parameter(torch.full((size,),
                                               float(torch.log(torch.tensor(init_noise_std)))))

    def action_log_std(self) -> torch.Tensor:
        """The log-std per action, [A]."""
        return self.log_std.expand(self.num_actions)

    def action_mean(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action (the Gaussian's mean), [B, A]."""
        return self.actor(obs)

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """V(s), [B]."""
        return self.critic(critic_obs).squeeze(-1)
