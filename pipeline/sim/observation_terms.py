"""Observation terms and the manager that lays them out in the policy's and the critic's vectors.

An observation term is a pure function registered through
``register_observation_terms``: ``func(state, **params)`` returns the term's
values for every environment, ``[N, size]``, from the task's state object
(the same object its reward and termination terms read). A task declares
each observation group (``policy``, ``critic``) as an ordered tuple of
``ObservationSlot(name, term)``: the name is what the ONNX metadata's
``observation_names`` lists, the term the registered function that fills
it, so two groups may fill a slot of the same name with different terms
(the policy's joint positions as the encoders read them, the critic's true
ones). A task config may append registered terms to a group
(docs/tasks.md, "Observations").

Noise: uniform ``±scale`` per slot, drawn for the span of columns from the
first to the last slot that has a scale, in one call per step (zero where
a slot in between has none), on the policy group only.

History: a slot with ``history`` H holds its last H values, oldest first
(``observation_history.py``); noise is drawn for the current values, so each
past value keeps the noise it was observed with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..registry import Registry
from .observation_history import ObservationHistory, stacked_lengths


@dataclass(frozen=True)
class ObservationTerm:
    """A named observation term: ``func(state, **params)`` → ``[N, size]``; ``size(state)`` its
    width."""

    name: str
    func: Callable[..., Any]
    size: Callable[[Any], int] | int
    """Columns the term fills: a number, or a function of the task's state (e.g. 2 per joint)."""
    description: str = ""
    default_params: Mapping[str, Any] = field(default_factory=dict)
    mirror: str = ""
    """What the term's values become in the robot's left-right mirror image (``MIRROR_KINDS``;
    ``ppo.symmetry``, docs/training.md): empty when the term does not say, and then a policy that
    sees it trains without symmetry."""

    def width(self, state: Any) -> int:
        return int(self.size(state) if callable(self.size) else self.size)


MIRROR_KINDS = {
    "joints": "blocks of one value per policy joint: each taken from its mirror partner, negated "
              "for a roll or yaw joint",
    "rotation": "the first two columns of a rotation matrix between two frames of the robot's "
                "sagittal plane (r00 r01 r10 r11 r20 r21): M R M with M = diag(1, -1, 1)",
    "polar": "a position or linear velocity in such a frame: y negated",
    "axial": "an angular velocity in such a frame: x and z negated",
    "invariant": "unchanged (a time, a phase, a height)",
}
"""How an observation term changes in the mirror image (``ObservationTerm.mirror``)."""
_MIRROR_SIGNS = {"rotation": (1, -1, -1, 1, 1, -1), "polar": (1, -1, 1), "axial": (-1, 1, -1)}


@dataclass(frozen=True)
class ObservationSlot:
    """One entry of an observation group: the slot's ``name`` and the registered ``term`` that fills
    it."""

    name: str
    term: str = ""
    """The registered term's name; empty: the same as ``name``."""
    params: Mapping[str, Any] = field(default_factory=dict)
    history: int = 0
    """How many steps of the term's values the observation holds, the current one last (0 or 1:
    the current alone; ``observation_history.py``)."""

    @property
    def term_name(self) -> str:
        return self.term or self.name


@dataclass(frozen=True)
class ObservationLayout:
    """Names and widths of an observation group's slots, in order."""

    terms: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        return sum(width for _, width in self.terms)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.terms)

    def slice(self, name: str) -> slice:
        start = 0
        for term, width in self.terms:
            if term == name:
                return slice(start, start + width)
            start += width
        raise KeyError(name)


class ObservationGroup:
    """One observation vector [N, size] float32, filled slot by slot from the task's state."""

    def __init__(self, slots: Sequence[ObservationSlot], registry: Registry, state: Any,
                 num_envs: int,
                 noise: Mapping[str, float] | None = None,
                 rng: np.random.Generator | None = None) -> None:
        self.slots = []
        for slot in slots:
            term: ObservationTerm = registry.get("observation_terms", slot.term_name)
            params = {**term.default_params, **slot.params}
            self.slots.append((slot.name, term, params))
        widths = [term.width(state) for _, term, _ in self.slots]
        lengths = stacked_lengths([slot.history for slot in slots])
        self.frame_layout = ObservationLayout(tuple(
            (name, width) for (name, _, _), width in zip(self.slots, widths, strict=True)))
        """The slots' current values alone (what noise is added to)."""
        self.layout = ObservationLayout(tuple(
            (name, width * length)
            for (name, _, _), width, length in zip(self.slots, widths, lengths, strict=True)))
        """The observation as the networks see it, each slot with its history."""
        self.history_lengths = tuple(length if length > 1 else 0 for length in lengths)
        """Per slot, the steps it holds (0: the current value alone; ONNX metadata
        ``observation_terms_history_length``)."""
        self._frame = np.zeros((num_envs, self.frame_layout.size), np.float32)
        self._history = (ObservationHistory(widths, lengths, num_envs)
                         if any(length > 1 for length in lengths) else None)
        """The slots' past values (None: no slot keeps any; the frame is the observation)."""
        self.buffer = self._frame if self._history is None else self._history.buffer
        self._slices = [self.frame_layout.slice(name) for name, _, _ in self.slots]
        self._noise = (_NoiseSpan(self.frame_layout, noise or {}, num_envs, rng) if noise
                       else None)

    def restart(self, ids: np.ndarray) -> None:
        """Envs ``ids`` start an episode: their next observation fills their history."""
        if self._history is not None:
            self._history.restart(ids)

    def load(self, observations: np.ndarray) -> None:
        """Continue from ``observations`` (a resumed run's ``buffer``, past steps included)."""
        if self._history is None:
            self.buffer[:] = observations
        else:
            self._history.load(observations)

    def mirror(self, joint_source: np.ndarray,
               joint_sign: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(source, sign)`` over the whole vector: ``sign · obs[source]`` is the observation of
        the robot's mirror image, given the policy joints' mirror (``joint_source``,
        ``joint_sign``); a ``ConfigError`` naming a slot whose term does not say how it mirrors."""
        joints = len(joint_source)
        source, sign = [], []
        for name, term, _ in self.slots:
            cols = self.layout.slice(name)
            width, start = cols.stop - cols.start, cols.start
            kind = term.mirror
            signs = _MIRROR_SIGNS.get(kind, ())
            if kind == "joints" and width % joints == 0:
                for block in range(start, cols.stop, joints):
                    source.append(block + np.asarray(joint_source))
                    sign.append(np.asarray(joint_sign, dtype=float))
            elif signs and width % len(signs) == 0:  # each step of a history alike
                source.append(np.arange(start, cols.stop))
                sign.append(np.tile(np.asarray(signs, dtype=float), width // len(signs)))
            elif kind == "invariant":
                source.append(np.arange(start, cols.stop))
                sign.append(np.ones(width))
            else:
                raise ConfigError(
                    f"observation {name!r} (term {term.name!r}, {width} values) does not say how "
                    f"it mirrors (mirror={kind!r})",
                    fix="train without ppo.symmetry, or register the term with mirror= one of "
                        f"{', '.join(MIRROR_KINDS)} (docs/training.md)",
                )
        return np.concatenate(source).astype(np.int64), np.concatenate(sign)

    def compute(self, state: Any) -> np.ndarray:
        """The observation [N, size]: the slots' values from ``state`` (then the noise, if any),
        appended to their history; returns ``buffer``."""
        out = self._frame
        for (name, term, params), cols in zip(self.slots, self._slices, strict=True):
            value = term.func(state, **params)
            if value.shape != (out.shape[0], cols.stop - cols.start):
                raise ValueError(f"observation term {term.name!r} (slot {name!r}) returned shape "
                                 f"{value.shape}, "
                                 f"expected ({out.shape[0]}, {cols.stop - cols.start})")
            out[:, cols] = value
        if self._noise is not None:
            self._noise.add(out)
        return out if self._history is None else self._history.push(out)


class _NoiseSpan:
    """Uniform noise ±scale on the columns from the first to the last slot with a scale, one draw a
    step."""

    def __init__(self, layout: ObservationLayout, scales: Mapping[str, float], num_envs: int,
                 rng: np.random.Generator | None) -> None:
        unknown = sorted(set(scales) - set(layout.names))
        if unknown:
            raise ConfigError("observation noise names no slot of the policy: "
                              f"{', '.join(unknown)}",
                              fix=f"the policy's slots: {', '.join(layout.names)}")
        named = [layout.slice(name) for name in layout.names if name in scales]
        first, last = named[0].start, named[-1].stop
        self.cols = slice(first, last)
        scale = np.zeros(last - first, np.float32)
        for name, value in scales.items():
            cols = layout.slice(name)
            scale[cols.start - first: cols.stop - first] = float(value)
        self.scale, self.offset = 2.0 * scale, -scale
        self.buffer = np.zeros((num_envs, last - first), np.float32) if np.any(scale) else None
        self.rng = rng

    def add(self, out: np.ndarray) -> None:
        if self.buffer is None:
            return
        noise = self.buffer
        self.rng.random(out=noise, dtype=np.float32)
        noise *= self.scale
        noise += self.offset
        out[:, self.cols] += noise


def appended_slots(config: Mapping[str, Any], groups: Sequence[str], settings: Sequence[str]
                   ) -> dict[str, list[ObservationSlot]]:
    """The slots a task config adds to its groups: every key of ``config`` (the task's
    ``observations`` section) that is not one of the task's own ``settings`` names a registered
    observation term, as ``<term>: {group: policy|critic|both, params: {...}, noise: scale}`` (group
    defaults to both; ``noise``: see ``appended_noise``)."""
    added: dict[str, list[ObservationSlot]] = {group: [] for group in groups}
    for name, raw in config.items():
        if name in settings:
            continue
        raw = raw or {}
        if not isinstance(raw, Mapping) or set(raw) - {"group", "params", "noise"}:
            raise ConfigError(f"observations.{name}: expected {{group: ..., params: {{...}}, "
                              f"noise: ...}}, got "
                              f"{raw!r}",
                              fix=f"--set task.observations.{name}={{group: critic}}")
        group = raw.get("group", "both")
        targets = list(groups) if group == "both" else [group]
        if any(g not in groups for g in targets):
            raise ConfigError(f"observations.{name}.group must be one of "
                              f"{', '.join([*groups, 'both'])}, "
                              f"got {group!r}")
        for target in targets:
            added[target].append(ObservationSlot(name, params=dict(raw.get("params") or {})))
    return added


def appended_noise(config: Mapping[str, Any], settings: Sequence[str]) -> dict[str, float]:
    """The training noise of appended terms: ``<term>: {..., noise: scale}`` adds uniform noise
    ±scale to that term in the policy group, as the task's ``noise_scale`` does for its own
    terms."""
    noise = {}
    for name, raw in config.items():
        if name in settings or not isinstance(raw, Mapping) or raw.get("noise") is None:
            continue
        scale = raw["noise"]
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale >= 0:
            raise ConfigError(f"observations.{name}.noise must be a number ≥ 0, got {scale!r}",
                              fix=f"--set 'task.observations.{name}={{group: policy, noise: 0.1}}'")
        noise[name] = float(scale)
    return noise


def with_history(slots: Sequence[ObservationSlot], history: Mapping[str, Any] | None
                 ) -> list[ObservationSlot]:
    """``slots`` with the history the task's ``observations.history`` asks for: slot name → how
    many steps of its values the policy sees (the current one included; 0 or 1: none)."""
    history = dict(history or {})
    names = [slot.name for slot in slots]
    unknown = sorted(set(history) - set(names))
    if unknown:
        raise ConfigError(f"observations.history names no slot of the policy: {', '.join(unknown)}",
                          fix=f"the policy's slots: {', '.join(names)}, e.g. --set "
                              "'task.observations.history={joint_vel: 3}'")
    for name, length in history.items():
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ConfigError(f"observations.history.{name} must be a whole number of steps ≥ 0, "
                              f"got {length!r}",
                              fix=f"--set 'task.observations.history={{{name}: 3}}'")
    return [replace(slot, history=int(history.get(slot.name, slot.history))) for slot in slots]
