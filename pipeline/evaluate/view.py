"""What motion-tracking evaluation reads of a task's environment: ``TrackingView``.

A task whose policy tracks a reference motion gives one through its
``TaskSpec.evaluation_view(env)`` hook (the built-in tracking task:
``plugins/tasks/tracking/evaluation.py``). ``evaluate.evaluate_run`` plays the
episodes and scores them with ``evaluate.metrics`` through it, and knows no
task's environment attributes. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import TrackingSnapshot


@dataclass
class TrackingView:
    """A task environment as motion-tracking evaluation sees it."""

    env: Any
    """The environment (a ``VecEnv`` that resets finished envs inside ``step``, with
    ``sim.qpos``)."""
    snapshot: Callable[[np.ndarray], TrackingSnapshot]
    """``snapshot(rows)``: robot and reference of env rows now, as copies (the metrics' input)."""
    reference_steps: Callable[[], np.ndarray]
    """Each env's reference step now, [N] (the start steps of episodes, right after a reset)."""
    episode_steps: Callable[[], np.ndarray]
    """Policy steps each env has played in its current episode, [N] (0 right after a reset)."""
    reference_body_pos: np.ndarray
    """The tracked bodies' reference positions per control step, [T, K, 3] (the statue baseline)."""
    body_names: tuple[str, ...]
    """The K tracked bodies, in the order of the snapshot's body axis."""
    render: Callable[..., Path | None]
    """``render(qpos, reference_steps, path, title="eval")``: a video of the robot at ``qpos`` (per
    policy step) with the reference at those steps as a ghost, ``title`` in its caption; returns
    the path, or None without OpenGL."""
    push_sides: Callable[[], np.ndarray] | None = None
    """Each env's last kick as a ``push_direction.PUSH_DIRECTIONS`` index relative to the robot's
    heading, [N] (-1: none yet); None for an env that is never pushed. A finished episode's kick is
    read right after the env reset it, so a reset must leave it."""
