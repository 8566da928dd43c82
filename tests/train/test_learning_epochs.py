"""``ppo.num_learning_epochs=auto``: fewer passes on a CPU, where the update bounds training;
settled, recorded, reproduced on resume."""

from __future__ import annotations

import pointmass_task
import pytest
import yaml

from primebot.pipeline.errors import ConfigError
from primebot.pipeline.hooks import host as plugins
from primebot.pipeline.ppo.config import ACCELERATOR_EPOCHS, CPU_EPOCHS, PPOConfig
from primebot.pipeline.train.session import TrainRequest, resolve_config, run_training


@pytest.mark.parametrize(("device_type", "epochs"),
                         [("cpu", CPU_EPOCHS), ("cuda", ACCELERATOR_EPOCHS),
                                                      ("npu", ACCELERATOR_EPOCHS)])
def test_auto_is_fewer_epochs_on_a_cpu_only(device_type, epochs):
    assert PPOConfig().num_learning_epochs == "auto"
    assert PPOConfig().learning_epochs(device_type) == epochs
    assert (CPU_EPOCHS, ACCELERATOR_EPOCHS) == (3, 5)  # mjlab's 5 where the update is cheap


@pytest.mark.parametrize("device_type", ["cpu", "cuda"])
def test_a_set_number_is_kept_on_every_device(device_type):
    assert PPOConfig(num_learning_epochs=4).learning_epochs(device_type) == 4


def _host():
    return plugins.load_plugins(extra=[("pointmass", pointmass_task)])


@pytest.mark.parametrize("bad", [0, -1, "many", 2.5, True])
def test_a_bad_value_is_a_config_error_naming_the_key(bad):
    request = TrainRequest(task="pointmass", sets=[f"ppo.num_learning_epochs={bad}"])
    with pytest.raises(ConfigError, match="ppo.num_learning_epochs"):
        resolve_config(_host().registry, request, "cpu")


def test_auto_is_settled_in_args_yaml_and_a_resume_keeps_it(tmp_path):
    host = _host()
    first = run_training(host.registry, TrainRequest(
        task="pointmass", num_envs=8, iterations=1, seed=3, log_dir=str(tmp_path), progress=False,
        sets=["ppo.num_learning_epochs=auto"]))
    args = yaml.safe_load((first.run_dir / "args.yaml").read_text())
    assert args["config"]["ppo"]["num_learning_epochs"] == CPU_EPOCHS
    assert first.runner.cfg.ppo.num_learning_epochs == CPU_EPOCHS

    resumed = run_training(host.registry,
                           TrainRequest(resume=str(first.run_dir), iterations=2, progress=False))
    assert resumed.result.iteration == 2
    assert resumed.runner.cfg.ppo.num_learning_epochs == CPU_EPOCHS
