"""The built-in stages of ``primebot pipeline run``, registered like any plugin's.

validate → replay → smoke → train → evaluate → export → sim2sim → stress
(sim2sim and stress run the exported ONNX, so they follow export). Each stage
is a thin adapter over the module that does the work (the same functions
the single-stage commands call); heavy imports happen only when a stage runs.
A plugin adds a stage by registering ``Stage(name, run, after=("export",))``.
"""

from __future__ import annotations

from primebot.pipeline.api import Stage, hookimpl

from . import device_smoke, motion_stages, policy_stages, training_stage

BUILTIN_STAGES = (
    Stage("validate", motion_stages.validate,
          description="check the motion file against the robot"),
    Stage("replay", motion_stages.replay, after=("validate",),
          description="kinematic replay video of the reference motion"),
    Stage("smoke", device_smoke.smoke, after=("replay",),
          description="device probe + 2 PPO iterations with a few envs on the chosen device"),
    # a resume that changes --iterations trains on (or says why not)
    Stage("train", training_stage.train, after=("smoke",), description="PPO motion tracking",
          settings=("iterations",)),
    Stage("evaluate", policy_stages.evaluate, after=("train",),
          description="deterministic policy in the training simulator: success rate, MPKPE"),
    Stage("export", policy_stages.export, after=("evaluate",),
          description="ONNX policy + deploy.yaml, checked against PyTorch with onnxruntime"),
    Stage("sim2sim", policy_stages.sim2sim, after=("export",),
          description="the exported ONNX policy in a deploy-style 1 kHz loop, without torch"),
    Stage("stress", policy_stages.stress, after=("sim2sim",),
          description="the exported policy under pushes, friction, payload, weak motors, latency, "
                      "encoder "
                      "errors and model gaps, beside replaying its reference with no policy"),
)


@hookimpl
def register_stages(register) -> None:
    """Register the eight built-in stages."""
    for stage in BUILTIN_STAGES:
        register(stage)
