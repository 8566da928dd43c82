"""The deploy-side episode loop, one for every kind of exported policy (numpy, mujoco, onnxruntime;
no torch).

Each episode starts from a fresh ``MjData`` (as on a robot that boots),
then every policy step: the graph's inputs from sensed quantities, the
policy, its actions as joint targets, ``substeps`` physics steps of the PD
torque loop (``joint_hal.hold_joint_targets``), the sensed state again. A
policy output that is not finite ends the episode at once as a failure
(``onnx_policy.NON_FINITE_ACTION``): the joints keep the last finite targets and
nothing non-finite reaches them (docs/deploy.md, "What the loop does"). What
differs between kinds of policy is an ``EpisodeKind``: where an episode
starts, what the graph takes, what an action means, when an episode ends
and what it records. ``deploy.sim2sim`` has the one for a motion-tracking
policy on a free base, ``deploy.planar`` the one for a policy without a
motion on a planar base; both read only the ONNX metadata, never a task.
"""

from __future__ import annotations

from typing import Any, Protocol

import mujoco
import numpy as np
import onnxruntime as ort

from .joint_hal import hold_joint_targets
from .onnx_policy import NON_FINITE_ACTION


class EpisodeKind(Protocol):
    """What one kind of deploy loop decides; ``robot`` has ``model``, ``qpos_adr``, ``dof_adr``,
    ``actuator_ids``."""

    robot: Any
    meta: dict

    def start(self, data: mujoco.MjData, start_step: int) -> int:
        """Put ``data`` in the episode's start state; return the step the policy is first given."""

    def first_action(self, t: int) -> np.ndarray:
        """The previous action the first observation carries (zero: no previous action), episode
        starting at ``t``."""

    def inputs(self, data: mujoco.MjData, t: int, last_action: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs (``obs`` and any other) at step ``t``, batch 1."""

    def targets(self, t: int, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the action the next observation sees as the last one, the joint targets) for the
        policy's ``actions``."""

    def next_step(self, t: int) -> int:
        """The step after ``t``."""

    def frame(self, data: mujoco.MjData, t: int) -> Any:
        """What a video keeps of this state."""

    def end(self, data: mujoco.MjData, t: int, length: int, max_steps: int) -> bool:
        """Take the state after a policy step into account; whether the episode is over."""

    def fail(self, failure: str) -> None:
        """End the episode as a failure the loop found (``NON_FINITE_ACTION``)."""

    def record(self, data: mujoco.MjData, start_step: int, length: int) -> dict:
        """The finished episode's record."""


def run_episode(session: ort.InferenceSession, kind: EpisodeKind, substeps: int, start_step: int,
                max_steps: int,
                frames: list | None = None) -> dict:
    """One episode of ``kind`` from ``start_step``; returns its record. ``frames`` collects
    ``kind.frame`` of the start state and of the state after every policy step."""
    model = kind.robot.model
    data = mujoco.MjData(model)  # fresh, as on a robot that boots
    t = kind.start(data, start_step)
    last_action = kind.first_action(t)
    length = 0
    if frames is not None:
        frames.append(kind.frame(data, t))
    while True:
        actions = session.run(["actions"], kind.inputs(data, t, last_action))[0][0]
        # the joints keep the last finite targets; the episode ends here
        if not np.isfinite(actions).all():
            kind.fail(NON_FINITE_ACTION)
            return kind.record(data, start_step, length)
        last_action, target = kind.targets(t, actions)
        hold_joint_targets(kind.robot, data, kind.meta, target, substeps)
        mujoco.mj_forward(model, data)  # sensed quantities at the new state
        length += 1
        t = kind.next_step(t)
        if frames is not None:
            frames.append(kind.frame(data, t))
        if kind.end(data, t, length, max_steps):
            return kind.record(data, start_step, length)
