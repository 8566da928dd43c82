"""Stage ordering: after/before constraints, registration order as tie-break, clear errors."""

from __future__ import annotations

import pytest

from primebot.pipeline.errors import PluginError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import (
    Stage,
    StageContext,
    StageResult,
    normalize_result,
    order_stages,
)

BUILTIN_ORDER = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim", "stress"]


def _noop(ctx):
    return None


def chain(names: list[str]) -> list[Stage]:
    stages, previous = [], ()
    for name in names:
        stages.append(Stage(name, _noop, after=previous))
        previous = (name,)
    return stages


def names(stages: list[Stage]) -> list[str]:
    return [stage.name for stage in stages]


def test_a_chain_of_after_constraints_keeps_its_order_whatever_the_registration_order():
    stages = chain(BUILTIN_ORDER)
    assert names(order_stages(reversed(stages))) == BUILTIN_ORDER


def test_unconstrained_stages_keep_registration_order():
    stages = [Stage(n, _noop) for n in ("c", "a", "b")]
    assert names(order_stages(stages)) == ["c", "a", "b"]


def test_a_stage_after_the_last_one_runs_last_even_when_registered_first():
    stages = [Stage("tensorrt", _noop, after=("stress",)), *chain(BUILTIN_ORDER)]
    assert names(order_stages(stages)) == [*BUILTIN_ORDER, "tensorrt"]


def test_among_free_stages_the_one_registered_first_goes_first():
    # Both may follow export; the third-party stage was registered after the built-ins.
    stages = [*chain(BUILTIN_ORDER), Stage("tensorrt", _noop, after=("export",))]
    assert names(order_stages(stages))[-3:] == ["sim2sim", "stress", "tensorrt"]


def test_after_and_before_place_a_stage_between_two_others():
    stages = [*chain(BUILTIN_ORDER), Stage("lint", _noop, after=("validate",), before=("train",))]
    order = names(order_stages(stages))
    assert order.index("validate") < order.index("lint") < order.index("train")
    # Nothing else moved: lint is placed as late as its constraints allow among free stages.
    assert [n for n in order if n != "lint"] == BUILTIN_ORDER


def test_before_alone_moves_a_stage_ahead_of_its_target():
    stages = [*chain(["a", "b", "c"]), Stage("first", _noop, before=("a",))]
    assert names(order_stages(stages)) == ["first", "a", "b", "c"]


def test_an_unknown_name_in_after_is_an_error_naming_stage_and_plugin():
    stages = [*chain(["validate", "train"]), Stage("tensorrt", _noop, after=("exprot",))]
    with pytest.raises(PluginError) as err:
        order_stages(stages, owners={"tensorrt": "acme-trt"})
    message = str(err.value)
    assert "'tensorrt'" in message and "acme-trt" in message and "'exprot'" in message
    assert "registered stages: validate, train, tensorrt" in message


def test_a_cycle_is_an_error_that_spells_out_the_cycle():
    stages = [
        Stage("a", _noop),
        Stage("b", _noop, after=("a", "d")),
        Stage("c", _noop, after=("b",)),
        Stage("d", _noop, after=("c",)),
        Stage("e", _noop, after=("d",)),  # behind the cycle, not on it
    ]
    with pytest.raises(PluginError) as err:
        order_stages(stages, owners={"d": "loop-plugin"})
    message = str(err.value)
    assert "cycle: b → c → d → b" in message
    assert "loop-plugin" in message
    assert "'e'" not in message


def test_a_two_stage_cycle_through_before_is_found():
    stages = [Stage("x", _noop, before=("y",)), Stage("y", _noop, before=("x",))]
    with pytest.raises(PluginError, match=r"cycle: x → y → x"):
        order_stages(stages)


def test_a_stage_naming_itself_is_refused():
    with pytest.raises(PluginError, match="names itself"):
        order_stages([Stage("a", _noop, after=("a",))])


def test_stage_results_may_be_a_result_a_dict_or_none():
    assert normalize_result(None, "s") == StageResult()
    assert normalize_result({"policy": "export/policy.onnx"}, "s").outputs == {
        "policy": "export/policy.onnx"
    }
    with pytest.raises(PluginError, match="stage 's' returned a int"):
        normalize_result(3, "s")


def test_context_paths_and_outputs_of_earlier_stages(tmp_path):
    from primebot.pipeline.stages.presets import PipelineSettings

    ctx = StageContext(tmp_path, PipelineSettings(motion="m.npz"), registry=None, stage="export",
                       outputs={"train": {"checkpoint": "model_best.pt"}})
    assert ctx.output("train", "checkpoint") == tmp_path / "model_best.pt"
    assert ctx.output("train", "missing") is None
    assert ctx.path("export/policy.onnx") == tmp_path / "export" / "policy.onnx"
    assert not ctx.resuming
    ctx.previous_status = "interrupted"
    assert ctx.resuming


class _PluginWithTwoStages:
    @hookimpl
    def register_stages(self, register):
        register(Stage("tensorrt", _noop, after=("export",), description="convert to TensorRT"))
        register(Stage("lint", _noop, after=("validate",), before=("train",)))


def test_plugin_stages_are_ordered_among_the_builtin_ones(clean_env):
    from primebot.pipeline.stages.stage_runner import ordered_stages

    host = load_plugins(extra=[("acme", _PluginWithTwoStages())])
    ordered = ordered_stages(host.registry)
    order = [stage.name for stage, _ in ordered]
    assert order[-1] == "tensorrt"
    assert order.index("validate") < order.index("lint") < order.index("train")
    assert [n for n in order if n not in ("tensorrt", "lint")] == BUILTIN_ORDER
    assert dict((s.name, p) for s, p in ordered)["tensorrt"] == "acme"
    assert dict((s.name, p) for s, p in ordered)["train"] == "stages.builtin"


def test_the_train_stage_resumes_with_the_settings_given_on_resume(tmp_path):
    from primebot.pipeline.stages.presets import PipelineSettings
    from primebot.plugins.stages.training_stage import train_request

    (tmp_path / "args.yaml").write_text("config: {}\n")
    (tmp_path / "model_5.pt").write_bytes(b"")
    settings = PipelineSettings(motion="m.npz", iterations=40, resume_sets=["ppo.lr=1e-4"])
    request = train_request(StageContext(tmp_path, settings, registry=None, stage="train"))
    assert (
        request.resume == str(tmp_path)
        and request.iterations == 40
        and request.sets == ["ppo.lr=1e-4"]
    )


def test_the_laptop_presets_train_four_epochs_and_the_full_preset_keeps_mjlabs_five():
    from primebot.pipeline.stages.presets import PRESETS

    for name in ("quick", "default", "long"):
        assert "ppo.num_learning_epochs=4" in PRESETS[name].train_sets, name
    assert not any(s.startswith("ppo.num_learning_epochs") for s in PRESETS["full"].train_sets)


def test_the_validate_stage_shows_the_training_overrides_a_motion_carries(tmp_path):
    from primebot.pipeline.stages.presets import PipelineSettings
    from primebot.plugins.stages.motion_stages import validate

    settings = PipelineSettings(motion="motions/getup.npz")
    ctx = StageContext(tmp_path, settings, registry=load_plugins().registry, stage="validate")
    result = validate(ctx)
    assert "task.terminations.end_effector_height=null" in result.summary["training_overrides"]
    assert (
        "it carries training overrides: task.terminations.end_effector_height=null"
        in result.message
    )


def test_the_validate_stage_leaves_its_warnings_to_the_runner_which_prints_each_once(tmp_path):
    from primebot.pipeline.stages.presets import PipelineSettings
    from primebot.plugins.stages.motion_stages import validate

    said = []
    ctx = StageContext(tmp_path, PipelineSettings(motion="motions/getup.npz"),
                       registry=load_plugins().registry, stage="validate", echo=said.append)
    result = validate(ctx)
    assert said == []  # the runner prints result.warnings, "warning: " before each
    assert len(result.warnings) == 2 and all(w.startswith("[key body_pos_w, frame ")
                                             for w in result.warnings)
    assert "\n      fix: raise the root so the lowest point rests on z = 0" in result.warnings[0]
