"""Observation history: a term observed with its last H values, oldest first (mjlab's
``history_length`` with the history dimension flattened; docs/tasks.md, "Observation history").

A *frame* is the observation without history: every term's current values, in the
group's order. ``ObservationHistory`` turns each step's frame into the observation the
policy sees, row by row (an env while training, a robot when deployed): a term with
history H takes H × its width, the value of H − 1 steps ago first and the current one
last; a row that starts an episode has every past value equal to its first. The
training env and the deploy loops (sim2sim, the stress test, the bundle runner) both
stack through this one class, so a policy sees the same layout in both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def stacked_lengths(lengths: Sequence[int]) -> list[int]:
    """How many values of each term the observation holds: a history of 0 or 1 is the current
    value alone."""
    return [max(int(h), 1) for h in lengths]


class ObservationHistory:
    """The observations [N, size] float32 of N rows from their frames [N, frame_size]."""

    def __init__(self, widths: Sequence[int], lengths: Sequence[int], num_rows: int) -> None:
        if len(widths) != len(lengths):
            raise ValueError(f"{len(widths)} term widths but {len(lengths)} history lengths")
        self.widths = [int(w) for w in widths]
        self.lengths = stacked_lengths(lengths)
        self.frame_size = sum(self.widths)
        self.size = sum(w * h for w, h in zip(self.widths, self.lengths, strict=True))
        self.buffer = np.zeros((num_rows, self.size), np.float32)
        """The observations with history; its rows' past values are the history itself."""
        self._spans: list[tuple[slice, slice, int, int]] = []
        frame_at = stacked_at = 0
        for width, length in zip(self.widths, self.lengths, strict=True):
            self._spans.append((slice(frame_at, frame_at + width),
                                slice(stacked_at, stacked_at + width * length), width, length))
            frame_at += width
            stacked_at += width * length
        self._fresh = np.ones(num_rows, bool)

    @property
    def active(self) -> bool:
        """Whether any term keeps past values (else the observation is the frame)."""
        return any(h > 1 for h in self.lengths)

    def restart(self, rows: np.ndarray | slice | None = None) -> None:
        """Rows ``rows`` (all: None) start an episode: their next frame fills their whole
        history."""
        self._fresh[slice(None) if rows is None else rows] = True

    def load(self, observations: np.ndarray) -> None:
        """Continue from ``observations`` [N, size] (a resumed run's): the next frame is appended
        to the history they hold."""
        self.buffer[:] = observations
        self._fresh[:] = False

    def push(self, frame: np.ndarray) -> np.ndarray:
        """Append each row's ``frame`` [N, frame_size] to its history; returns ``buffer``."""
        if frame.shape != (self.buffer.shape[0], self.frame_size):
            raise ValueError(f"frame of shape {frame.shape}, expected "
                             f"({self.buffer.shape[0]}, {self.frame_size})")
        out, fresh = self.buffer, np.flatnonzero(self._fresh)
        for source, target, width, length in self._spans:
            block = out[:, target]
            if length > 1:
                block[:, :-width] = block[:, width:].copy()
                block[fresh] = np.tile(frame[fresh, source], length)
            block[:, -width:] = frame[:, source]
        self._fresh[:] = False
        return out
