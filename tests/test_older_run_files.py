"""Run files an older primebot wrote, without a field this one needs: a typed error naming the file
and the fix, never a silent fallback (nothing reads the older formats)."""

from __future__ import annotations

import json

import pytest
import yaml

from primebot.pipeline.errors import ConfigError, ExportError
from primebot.pipeline.rundir import ARGS_FILE, read_run_id
from primebot.pipeline.train.provenance import recorded_identity
from primebot.pipeline.train.settings_layers import TrainRequest
from primebot.pipeline.train.train_config import TrainConfig


def _args(run_dir, run: dict | None, **ppo) -> None:
    cfg = TrainConfig().to_dict()
    cfg["ppo"].update(ppo)
    doc = {"config": cfg, **({"run": run} if run is not None else {})}
    (run_dir / ARGS_FILE).write_text(yaml.safe_dump(doc), encoding="utf-8")


def test_args_yaml_without_a_run_identity(tmp_path):
    _args(tmp_path, {"started": "yesterday"})
    with pytest.raises(ConfigError, match="args.yaml records no run identity") as info:
        read_run_id(tmp_path)
    assert "retrain" in info.value.fix
    assert read_run_id(tmp_path / "nothing-trained-yet") is None


def test_an_onnx_without_a_run_id_is_not_judged_as_the_runs(tmp_path):
    from primebot.pipeline.deploy.onnx_policy import require_own_export

    _args(tmp_path, {"id": "a" * 32})
    with pytest.raises(ExportError, match="policy.onnx carries no run_id metadata") as info:
        require_own_export(tmp_path, tmp_path / "policy.onnx", {"checkpoint": "model_3.pt"})
    assert "primebot export" in info.value.fix
    require_own_export(tmp_path, tmp_path / "policy.onnx", {"run_id": "a" * 32})


def test_a_result_without_its_policy_identity(tmp_path):
    old = {"checkpoint": "model_3.pt", "iteration": 3}  # at the top level, no digest or run id
    with pytest.raises(ConfigError, match="eval.json does not record the policy") as info:
        recorded_identity(old, tmp_path / "eval.json")
    assert "again" in info.value.fix
    entry = {"checkpoint": "model_3.pt", "iteration": 3, "digest": "d" * 64, "run_id": "a" * 32}
    assert recorded_identity({"policy": entry}, "eval.json").run_id == "a" * 32


def test_pipeline_json_with_a_done_stage_without_its_settings(tmp_path):
    from primebot.pipeline.stages.contract import Stage
    from primebot.pipeline.stages.presets import PipelineSettings
    from primebot.pipeline.stages.record import new_record, resumed_record

    train = Stage("train", run=lambda ctx: None, settings=("iterations",))
    stages = [(train, "builtin")]
    record = new_record(tmp_path, PipelineSettings(motion="wave.npz"), stages)
    record.stage("train").status = "done"
    record.save()
    with pytest.raises(ConfigError, match="records stage 'train' done without") as info:
        resumed_record(tmp_path, stages)
    assert "new run" in info.value.fix
    document = json.loads((tmp_path / "pipeline.json").read_text(encoding="utf-8"))
    document["stages"][0]["settings"] = {"iterations": 3000}
    (tmp_path / "pipeline.json").write_text(json.dumps(document), encoding="utf-8")
    assert resumed_record(tmp_path, stages).stage("train").settings == {"iterations": 3000}


def test_a_resume_of_a_run_that_left_mixed_precision_unsettled(tmp_path):
    from primebot.pipeline.train.session import _resume_config

    _args(tmp_path, {"id": "a" * 32}, mixed_precision="auto")
    with pytest.raises(ConfigError, match="records ppo.mixed_precision: auto") as info:
        _resume_config(TrainRequest(resume=str(tmp_path)))
    assert "retrain" in info.value.fix
    _args(tmp_path, {"id": "a" * 32}, mixed_precision="off")
    assert _resume_config(TrainRequest(resume=str(tmp_path)))[0].ppo.mixed_precision == "off"



def test_a_checkpoint_without_its_config_is_refused_by_name(tmp_path):
    """Every checkpoint carries the config it was trained with; one without is not read with
    args.yaml's instead (an older primebot's layout): a typed error naming the file."""
    from primebot.pipeline.errors import CheckpointError
    from primebot.pipeline.train.checkpoints import save_checkpoint
    from primebot.pipeline.train.trained_policy import load_trained_policy

    _args(tmp_path, {"id": "a" * 32})
    save_checkpoint(tmp_path / "model_3.pt", {"run_id": "a" * 32, "iteration": 3,
                                              "dims": {}, "learner": {}})
    with pytest.raises(CheckpointError, match="model_3.pt lacks the config"):
        load_trained_policy(tmp_path, "model_3.pt")


def test_a_tracking_run_from_before_its_ranges_were_sized_to_the_robot_is_not_resumed(tmp_path):
    """The tracking task's reset noise became units of the robot's size (version 2): a run that
    records no version recorded metres, and resuming it would read them as units of L."""
    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.session import require_task_config_version

    tracking = load_plugins().registry.get("tasks", "tracking")
    assert tracking.config_version >= 2
    _args(tmp_path, {"id": "a" * 32})
    with pytest.raises(ConfigError, match="records version 1 of task 'tracking'") as info:
        require_task_config_version(tmp_path, tracking)
    assert "retrain" in info.value.fix
    _args(tmp_path, {"id": "a" * 32, "task_config_version": tracking.config_version})
    require_task_config_version(tmp_path, tracking)
