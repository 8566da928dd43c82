"""The deployable ONNX policy (docs/deploy.md): normaliser → actor, with the reference motion
inside.

Graph: inputs ``obs [B, O]`` and ``time_step [B, 1]`` (float32, batch axis
dynamic, or 1 with ``static_batch``); outputs ``actions [B, J]`` and the
reference at that control step, ``joint_pos``/``joint_vel [B, J]``,
``body_pos_w [B, nB, 3]``, ``body_quat_w [B, nB, 4]`` (w x y z),
``body_lin_vel_w``/``body_ang_vel_w [B, nB, 3]`` for the bodies the
``body_names`` metadata lists. The step is made an index in float32 first:
NaN reads step 0, the value is clamped to [0, T − 1] (so −inf is step 0,
+inf and anything past the end the last frame) and fractions are truncated;
only then is it cast to int64 for the gathers, so no integer ``Clip`` is in
the graph.

Exported with torch's TorchScript exporter (``dynamo=False``), opset 17 by
default: for an MLP and a few gathers it produces a plain graph (Gemm, Elu,
Gather) in a fraction of a second and in one self-contained file, which
onnxruntime and TensorRT on JetPack read alike; the dynamo exporter takes
~3 s per export and emits GatherND for the same graph. It is used only if
the TorchScript exporter is missing from the installed torch.

A task that tracks no motion (``TaskSpec.export_kind == "policy"``, e.g.
walk) exports ``ActionPolicy`` instead: input ``obs [B, O]``, output
``actions [B, J]``, normaliser inside, nothing else.

``HalfActor`` runs an actor in float16 between float32 casts: the fp16
variant keeps float32 inputs, outputs, normaliser and reference motion.

``write_onnx`` adds the metadata, runs ``onnx.checker`` and writes the file
atomically; ``parity`` compares onnxruntime (CPU provider) with PyTorch. Both
read the graph's input and output names from the module (``input_names``,
``output_names``).
"""

from __future__ import annotations

import copy
import io
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

from ..atomic import atomic_path
from ..errors import ExportError
from ..motion.format import Motion
from ..sim.task import REFERENCE_OFFSETS

INPUT_NAMES = ("obs", "time_step")
MOTION_OUTPUTS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w",
                  "body_ang_vel_w")
SERVO_TARGET_OUTPUT = "servo_target"
"""An output only a policy trained with the servo-target offset has: the zero action's joint
targets per step (metadata ``action_offset: reference_servo_target``; docs/deploy.md)."""
OUTPUT_NAMES = ("actions", *MOTION_OUTPUTS)
OPSET = 17
PARITY_ATOL = 1e-5
BATCH1_ROWS = 128


EXAMPLE_INPUT_WIDTH = {"time_step": 1}
"""Widths of the inputs other than ``obs`` (whose width is the observation size)."""


class ActionPolicy(nn.Module):
    """``actions = actor(normaliser(obs))``: the policy alone, for tasks that track no motion."""

    input_names: tuple[str, ...] = ("obs",)
    output_names: tuple[str, ...] = ("actions",)

    def __init__(self, actor: nn.Module, obs_normalizer: nn.Module) -> None:
        super().__init__()
        self.actor = actor
        self.obs_normalizer = obs_normalizer

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.obs_normalizer(obs))


class HalfActor(nn.Module):
    """``actor`` in float16: float32 in, float16 weights and arithmetic, float32 out."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = copy.deepcopy(actor).half()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(x.half()).float()


def step_index(time_step: torch.Tensor, num_steps: int) -> torch.Tensor:
    """``time_step [B, 1]`` float → step indices [B] int64: NaN → 0, clamped to [0, num_steps − 1],
    truncated.

    The clamp is done in float32 (±inf clamp like any other value) so the graph
    has no integer ``Clip``; the cast truncates towards zero, which is the floor
    of the already non-negative value.
    """
    finite = torch.where(torch.isnan(time_step), torch.zeros_like(time_step), time_step)
    return finite.clamp(0.0, float(num_steps - 1)).to(torch.int64).squeeze(-1)


class DeployPolicy(nn.Module):
    """``actions = actor(normaliser(obs))`` plus the reference motion gathered at ``time_step`` (and
    the servo targets, where the motion carries them)."""

    input_names: tuple[str, ...] = INPUT_NAMES

    def __init__(self, actor: nn.Module, obs_normalizer: nn.Module,
                 motion: Mapping[str, np.ndarray]) -> None:
        super().__init__()
        self.actor = actor
        self.obs_normalizer = obs_normalizer
        self.tables = (*MOTION_OUTPUTS, *((SERVO_TARGET_OUTPUT,)
                                          if SERVO_TARGET_OUTPUT in motion else ()))
        self.output_names: tuple[str, ...] = ("actions", *self.tables)
        for key in self.tables:
            self.register_buffer(key,
                                 torch.as_tensor(np.ascontiguousarray(motion[key]),
                                                 dtype=torch.float32))
        self.num_steps = int(np.shape(motion["joint_pos"])[0])

    def forward(self, obs: torch.Tensor, time_step: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # A float step index keeps the input float32 like obs (one dtype on the robot side).
        step = step_index(time_step, self.num_steps)
        actions = self.act(obs, time_step, step)
        return (actions, *(getattr(self, key)[step] for key in self.tables))

    def act(self, obs: torch.Tensor, time_step: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        """The ``actions`` output for ``obs`` at reference step indices ``step``."""
        return self.actor(self.obs_normalizer(obs))


class DefaultOffsetPolicy(DeployPolicy):
    """A ``DeployPolicy`` trained with actions relative to the reference pose, whose graph speaks in
    actions relative to the default pose (mjlab's convention: target = default + scale·actions;
    ``--format mjlab``).

    With ``shift[t] = (reference joint_pos[t] − default_joint_pos) / action_scale`` the graph
    outputs ``actions = policy + shift[t]``, so default + scale·actions = reference + scale·policy,
    the target the policy was trained to give (``origin``: the table in place of the reference
    ``joint_pos``, ``servo_target`` for a policy trained with the servo-target offset). The
    observation's ``actions`` term (columns ``actions_columns``), which a deploy loop fills with
    the previous ``actions`` output, is turned back into the policy's own previous action by
    subtracting ``shift[t − 1]``; at step 0 nothing is subtracted (an episode's first observation
    carries zero, as in training). Docs: docs/deploy.md,
    "mjlab compatibility".
    """

    def __init__(self, actor: nn.Module, obs_normalizer: nn.Module,
                 motion: Mapping[str, np.ndarray],
                 default_joint_pos: np.ndarray, action_scale: np.ndarray,
                 actions_columns: tuple[int, int] | None, origin: str = "joint_pos") -> None:
        super().__init__(actor, obs_normalizer, motion)
        shift = ((np.asarray(motion[origin], dtype=np.float64)
                  - np.asarray(default_joint_pos, dtype=np.float64))
                 / np.asarray(action_scale, dtype=np.float64))
        self.register_buffer("action_shift", torch.as_tensor(shift, dtype=torch.float32))
        self.actions_columns = actions_columns

    def act(self, obs: torch.Tensor, time_step: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        if self.actions_columns is not None:
            begin, end = self.actions_columns
            previous = self.action_shift[step_index(time_step - 1.0, self.num_steps)]
            previous = torch.where((step == 0).unsqueeze(-1), torch.zeros_like(previous), previous)
            obs = torch.cat((obs[:, :begin], obs[:, begin:end] - previous, obs[:, end:]), dim=1)
        return super().act(obs, time_step, step) + self.action_shift[step]


def tracking_module(actor: nn.Module, obs_normalizer: nn.Module, motion: Mapping[str, np.ndarray],
                    metadata: Mapping[str, object]) -> DeployPolicy:
    """The tracking graph ``metadata`` describes: ``DefaultOffsetPolicy`` when it bakes the
    reference offset into the actions (``action_offset_baked``, ``metadata.bake_action_offset``),
    else ``DeployPolicy``."""
    from ..deploy.onnx_policy import ACTION_OFFSET_BAKED

    if ACTION_OFFSET_BAKED not in metadata:
        return DeployPolicy(actor, obs_normalizer, motion)
    names = list(metadata["observation_names"])
    columns = None
    if "actions" in names:
        i = names.index("actions")
        begin = int(metadata["observation_offsets"][i])
        columns = (begin, begin + int(metadata["observation_sizes"][i]))
    return DefaultOffsetPolicy(actor, obs_normalizer, motion, metadata["default_joint_pos"],
                               metadata["action_scale"],
                               columns, REFERENCE_OFFSETS[metadata[ACTION_OFFSET_BAKED]])


def motion_at_control_rate(motion: Motion, control_dt: float) -> dict[str, np.ndarray]:
    """The motion's arrays sampled once per control step (all bodies, MuJoCo order).

    A motion at the control rate is used as is and one at an integer multiple
    of it is strided, which is exactly what the tracking task's resampling
    gives at those rates; other rates are refused.
    """
    rate = 1.0 / control_dt
    ratio = motion.fps / rate
    stride = int(round(ratio))
    if stride < 1 or abs(ratio - stride) > 1e-6:
        raise ExportError(
            f"motion {motion.source} is at {motion.fps:g} fps; the policy runs at {rate:g} Hz",
            fix=f"resample the motion to {rate:g} fps (or an integer multiple) before training",
        )
    return {key: np.asarray(value[::stride], dtype=np.float32)
            for key, value in motion.arrays().items()}


# -- metadata --------------------------------------------------------------------------------
def format_value(value) -> str:
    """A metadata string: sequences comma-separated, floats as ``repr`` (round-trips exactly)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (Sequence, np.ndarray)):
        return ",".join(format_value(v)
                        for v in np.asarray(value, dtype=object).reshape(-1).tolist())
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))


@dataclass(frozen=True)
class ObservationTerm:
    """One policy observation term as deployment code must build it (mjlab's per-term fields).

    primebot's terms are raw values (scale 1), unclipped; a term with
    ``history_length`` H holds its last H values, oldest first, flattened
    (docs/deploy.md). The fields are written out so a consumer checks them
    instead of assuming them.
    """

    name: str
    offset: int
    size: int
    scale: float = 1.0
    clip: tuple[float, float] = (-float("inf"), float("inf"))
    history_length: int = 0
    flatten_history_dim: bool = True


def observation_layout(terms: Sequence[tuple[str, int]],
                       history: Sequence[int] | None = None) -> list[ObservationTerm]:
    """Offsets of consecutive observation terms ``(name, size)``, ``size`` with the term's history
    (``history``: steps per term, 0 for none; scale 1, no clip)."""
    out, offset = [], 0
    for i, (name, size) in enumerate(terms):
        out.append(ObservationTerm(str(name), offset, int(size),
                                   history_length=int(history[i]) if history else 0))
        offset += int(size)
    return out


# -- writing and checking --------------------------------------------------------------------
def _export_graph(module: nn.Module, num_obs: int, static_batch: bool,
                  opset: int) -> onnx.ModelProto:
    inputs, outputs = list(module.input_names), list(module.output_names)
    args = tuple(torch.zeros(1, EXAMPLE_INPUT_WIDTH.get(name, num_obs)) for name in inputs)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter announces its deprecation
        try:
            torch.onnx.export(
                module, args, buffer, input_names=inputs, output_names=outputs,
                dynamic_axes={} if static_batch
                else {name: {0: "batch"} for name in (*inputs, *outputs)},
                opset_version=opset, dynamo=False,
            )
        # a torch without the TorchScript exporter
        except (TypeError, RuntimeError, NotImplementedError):
            batch = torch.export.Dim("batch")
            program = torch.onnx.export(
                module, args, input_names=inputs, output_names=outputs,
                dynamic_shapes=None if static_batch else tuple({0: batch} for _ in inputs),
                opset_version=max(opset, 18), dynamo=True, external_data=False, verbose=False,
            )
            return program.model_proto
    return onnx.load_from_string(buffer.getvalue())


def write_onnx(module: nn.Module, path: str | Path, num_obs: int, metadata: Mapping[str, object], *,
               static_batch: bool = False, opset: int = OPSET) -> Path:
    """Export ``module`` (``DeployPolicy`` or ``ActionPolicy``) to one self-contained ONNX file with
    ``metadata`` (checked by ``onnx.checker``); ``static_batch`` fixes the batch axis at 1."""
    module = module.eval()
    with torch.no_grad():
        proto = _export_graph(module, num_obs, static_batch, opset)
    del proto.metadata_props[:]
    for key, value in metadata.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, format_value(value)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except onnx.checker.ValidationError as exc:
        raise ExportError(f"the exported graph fails onnx.checker: {exc}") from exc
    path = Path(path)
    with atomic_path(path) as tmp:
        # Everything inline: the file must travel alone to the robot.
        onnx.save_model(proto, tmp, save_as_external_data=False)
    return path


def read_metadata(path: str | Path) -> dict[str, str]:
    """The ``metadata_props`` of an ONNX file as a dict of strings."""
    return {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}


def _session(path: str | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def parity(
    module: nn.Module, path: str | Path, obs: np.ndarray, time_steps: np.ndarray | None,
    batch_sizes: Sequence[int] = (1, 64),
) -> dict[int, dict[str, float]]:
    """Largest |onnxruntime − PyTorch| of every output, per batch size, over ``obs`` rows [M, O].

    ``time_steps`` [M] go with the rows to a module with a ``time_step`` input (else ``None``).

    Each batch size runs over consecutive chunks of the recorded rows (wrapping
    round when there are fewer rows than a batch), so every row is checked;
    batch 1 checks the first ``BATCH1_ROWS`` rows (one call per row).
    """
    session = _session(path)
    columns = {"obs": np.ascontiguousarray(obs, dtype=np.float32)}
    if time_steps is not None:
        columns["time_step"] = np.asarray(time_steps, dtype=np.float32).reshape(-1, 1)
    inputs, outputs = list(module.input_names), list(module.output_names)
    out: dict[int, dict[str, float]] = {}
    for batch in batch_sizes:
        worst = dict.fromkeys(outputs, 0.0)
        count = max(min(len(obs), BATCH1_ROWS) if batch == 1 else len(obs), batch)
        for start in range(0, count, batch):
            rows = np.arange(start, start + batch) % len(obs)
            feed = {name: columns[name][rows] for name in inputs}
            got = session.run(outputs, feed)
            with torch.no_grad():
                want = module(*(torch.from_numpy(feed[name]) for name in inputs))
            want = want if isinstance(want, tuple) else (want,)
            for name, a, b in zip(outputs, got, want, strict=True):
                worst[name] = max(worst[name], float(np.max(np.abs(a - b.numpy()))))
        out[int(batch)] = worst
    return out


def parity_failures(report: Mapping[int, Mapping[str, float]],
                    atol: float = PARITY_ATOL) -> list[str]:
    """One line per (batch, output) whose difference exceeds ``atol``."""
    return [
        f"batch {batch}: {name} differs by {diff:.3g} (> {atol:g})"
        for batch, diffs in report.items()
        for name, diff in diffs.items()
        if not diff <= atol  # NaN fails too
    ]


def onnx_latency(path: str | Path, num_obs: int, repeats: int = 300,
                 warmup: int = 30) -> dict[str, float]:
    """Batch-1 onnxruntime latency (CPU provider, one thread): median, 90th and 99th percentile in
    ms."""
    session = _session(path)
    rng = np.random.default_rng(0)
    given = {"obs": rng.standard_normal((1, num_obs)).astype(np.float32),
             "time_step": np.zeros((1, 1), np.float32)}
    feed = {i.name: given[i.name] for i in session.get_inputs()}
    for _ in range(warmup):
        session.run(None, feed)
    times = np.empty(repeats)
    for k in range(repeats):
        t0 = time.perf_counter()
        session.run(None, feed)
        times[k] = time.perf_counter() - t0
    return {"median_ms": float(np.median(times) * 1e3),
            "p90_ms": float(np.percentile(times, 90) * 1e3),
            "p99_ms": float(np.percentile(times, 99) * 1e3), "repeats": repeats}
