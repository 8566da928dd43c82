"""A real, tiny trained tracking run (q1 on motions/wave.npz) for the eval/export/sim2sim tests.

One PPO iteration with 4 environments and 16-unit networks: seconds, but a
real run directory (args.yaml, model_1.pt) written by the real trainer.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from primebot.pipeline.hooks.host import PluginHost, load_plugins
from primebot.pipeline.motion.format import file_sha256
from primebot.pipeline.train.session import TrainRequest, run_training

REPO = Path(__file__).resolve().parents[1]
Q1_XML = REPO / "plugins" / "robots" / "q1" / "q1.xml"
"""The shipped q1 model the tiny runs train on."""
WAVE = REPO / "motions" / "wave.npz"
TINY = [
    "policy.actor_hidden=[16,16]",
    "policy.critic_hidden=[16,16]",
    "ppo.num_steps_per_env=8",
    "ppo.num_mini_batches=2",
    "ppo.num_learning_epochs=1",
]


def tracking_host() -> PluginHost:
    """Plugins as installed, without stage plugins (only the tasks, robots and commands are
    needed)."""
    return load_plugins(environ={"PRIMEBOT_DISABLE_PLUGINS": "stages.builtin"})


_TRAINED: dict[tuple[str, tuple[str, ...]], Path] = {}
"""The run trained once per test session (per motion digest), copied for every caller."""


def train_tiny_run(log_dir: Path, host: PluginHost | None = None,
                   sets: tuple[str, ...] = ()) -> Path:
    """A fresh copy, under ``log_dir``, of a run trained for one iteration on wave.npz (with
    ``sets`` on top of the tiny settings).

    Training happens once per session and ``sets``; each caller gets its own copy, so tests
    that write eval.json or export/ never see each other's files.
    """
    key = (file_sha256(WAVE), sets)
    if key not in _TRAINED:
        host = host or tracking_host()
        root = tempfile.mkdtemp(prefix="primebot-tiny-run-")
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        request = TrainRequest(motion=str(WAVE), num_envs=4, iterations=1, seed=3, run_name="wave",
                               sets=[*TINY, *sets], log_dir=root, progress=False)
        outcome = run_training(host.registry, request)
        assert outcome.run_dir is not None
        _TRAINED[key] = outcome.run_dir
    copy = Path(log_dir) / "wave" / _TRAINED[key].name
    shutil.copytree(_TRAINED[key], copy)
    return copy


def export_tiny_run(log_dir: Path, host: PluginHost | None = None) -> tuple[PluginHost, Path, Path]:
    """(host, run directory, policy.onnx) of a fresh copy of the tiny run, exported."""
    from primebot.pipeline.export.export_run import export_run

    host = host or tracking_host()
    run_dir = train_tiny_run(log_dir, host)
    export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5)
    return host, run_dir, run_dir / "export" / "policy.onnx"
