"""A real, tiny trained tracking run (q1 on motions/wave.npz) for the eval/export/sim2sim tests.

One PPO iteration with 4 environments and 16-unit networks: seconds, but a
real run directory (args.yaml, model_1.pt) written by the real trainer.
"""

from __future__ import annotations

from pathlib import Path

from primebot.pipeline.plugins import PluginHost, load_plugins
from primebot.pipeline.training import TrainRequest, run_training

REPO = Path(__file__).resolve().parents[1]
WAVE = REPO / "motions" / "wave.npz"
TINY = [
    "policy.actor_hidden=[16,16]",
    "policy.critic_hidden=[16,16]",
    "ppo.num_steps_per_env=8",
    "ppo.num_mini_batches=2",
    "ppo.num_learning_epochs=1",
]


def tracking_host() -> PluginHost:
    """Plugins as installed, without stage plugins (only the tasks, robots and commands are needed)."""
    return load_plugins(environ={"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"})


def train_tiny_run(log_dir: Path, host: PluginHost | None = None) -> Path:
    """Train one iteration on wave.npz and return the run directory."""
    host = host or tracking_host()
    request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3, run_name="wave",
                           sets=list(TINY), log_dir=str(log_dir), progress=False)
    outcome = run_training(host.registry, request)
    assert outcome.run_dir is not None
    return outcome.run_dir
