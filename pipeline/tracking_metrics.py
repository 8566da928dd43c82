"""Motion-tracking metrics, shared by ``primebot eval`` and ``primebot sim2sim``.

Pure numpy (no torch, no MuJoCo), so the torch-free deploy loop computes
exactly what evaluation computes and the two can be compared number for
number. The unit of work is one control step of N episodes running side by
side: ``step_errors`` turns a ``TrackingSnapshot`` into per-episode errors,
``failure_checks`` says which episodes failed and why, and
``EpisodeMetrics`` averages errors over each episode's steps, then over
episodes, into the dictionary written to eval.json / sim2sim.json.

Definitions (world frame unless said otherwise; K tracked bodies, E end effectors):

- ``mpkpe_m``: mean over tracked bodies of ‖p − p_ref‖ (mean per-body position error).
- ``mpkpe_root_relative_m``: the same after subtracting each side's root position.
- ``joint_pos_error_rad`` / ``joint_vel_error_rad_s``: mean over joints of |q − q_ref| / |q̇ − q̇_ref|.
- ``ee_pos_error_m``: mean over end effectors of ‖p − p_ref‖.
- ``anchor_pos_error_m`` / ``anchor_ori_error_rad``: distance and rotation angle between anchors.
- ``success_rate``: episodes that reached their last step without a failure.
- ``fall_rate``: episodes ended by the anchor height or anchor orientation check (the robot went down);
  an end-effector-only failure counts against success but is not a fall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rotations import quat_apply_inverse, quat_error_magnitude

ERROR_KEYS = (
    "mpkpe_m",
    "mpkpe_root_relative_m",
    "joint_pos_error_rad",
    "joint_vel_error_rad_s",
    "ee_pos_error_m",
    "anchor_pos_error_m",
    "anchor_ori_error_rad",
)
"""Per-step errors averaged over each episode (the order eval.json lists them in)."""

FAILURE_KINDS = ("anchor_height", "anchor_ori", "ee_height")
FALL_KINDS = ("anchor_height", "anchor_ori")
PHYSICS_FAULT = "physics_fault"
"""An episode the simulator ended (NaN/Inf state, instability): a failure, not a fall."""

_DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class FailureThresholds:
    """When a tracking episode has failed (DESIGN §5 terminations; mjlab's values)."""

    anchor_height: float = 0.25
    """m: |z_anchor − z_ref| above this is a failure."""
    anchor_ori: float = 0.8
    """|z of gravity in the anchor frame − the same in the reference anchor frame| above this is a failure."""
    ee_height: float = 0.25
    """m: any end effector's |z − z_ref| above this is a failure."""


@dataclass
class TrackingSnapshot:
    """The robot and its reference at one control step, for N episodes. Arrays are float64."""

    joint_pos: np.ndarray
    """[N, J] rad, policy joint order."""
    joint_vel: np.ndarray
    """[N, J] rad/s."""
    body_pos_w: np.ndarray
    """[N, K, 3] tracked bodies."""
    root_pos_w: np.ndarray
    """[N, 3] the floating base body."""
    ee_pos_w: np.ndarray
    """[N, E, 3] end effectors."""
    anchor_pos_w: np.ndarray
    """[N, 3]"""
    anchor_quat_w: np.ndarray
    """[N, 4] w x y z."""
    ref_joint_pos: np.ndarray
    ref_joint_vel: np.ndarray
    ref_body_pos_w: np.ndarray
    ref_root_pos_w: np.ndarray
    ref_ee_pos_w: np.ndarray
    ref_anchor_pos_w: np.ndarray
    ref_anchor_quat_w: np.ndarray


def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a - b, axis=-1)


def step_errors(s: TrackingSnapshot) -> dict[str, np.ndarray]:
    """The ``ERROR_KEYS`` errors of each of the N episodes at this step, each [N]."""
    robot_rel = s.body_pos_w - s.root_pos_w[:, None, :]
    ref_rel = s.ref_body_pos_w - s.ref_root_pos_w[:, None, :]
    return {
        "mpkpe_m": _distance(s.body_pos_w, s.ref_body_pos_w).mean(axis=-1),
        "mpkpe_root_relative_m": _distance(robot_rel, ref_rel).mean(axis=-1),
        "joint_pos_error_rad": np.abs(s.joint_pos - s.ref_joint_pos).mean(axis=-1),
        "joint_vel_error_rad_s": np.abs(s.joint_vel - s.ref_joint_vel).mean(axis=-1),
        "ee_pos_error_m": _distance(s.ee_pos_w, s.ref_ee_pos_w).mean(axis=-1),
        "anchor_pos_error_m": _distance(s.anchor_pos_w, s.ref_anchor_pos_w),
        "anchor_ori_error_rad": quat_error_magnitude(s.anchor_quat_w, s.ref_anchor_quat_w),
    }


def failure_checks(s: TrackingSnapshot, thresholds: FailureThresholds) -> dict[str, np.ndarray]:
    """Which episodes fail each check at this step: ``FAILURE_KINDS`` → bool [N]."""
    gravity_z = quat_apply_inverse(s.anchor_quat_w, _DOWN)[..., 2]
    ref_gravity_z = quat_apply_inverse(s.ref_anchor_quat_w, _DOWN)[..., 2]
    ee_dz = np.abs(s.ee_pos_w[..., 2] - s.ref_ee_pos_w[..., 2])
    return {
        "anchor_height": np.abs(s.anchor_pos_w[:, 2] - s.ref_anchor_pos_w[:, 2]) > thresholds.anchor_height,
        "anchor_ori": np.abs(gravity_z - ref_gravity_z) > thresholds.anchor_ori,
        "ee_height": (ee_dz > thresholds.ee_height).any(axis=-1) if ee_dz.size else np.zeros(len(ee_dz), bool),
    }


def first_failure(checks: dict[str, np.ndarray]) -> list[str | None]:
    """Per episode, the first failed check in ``FAILURE_KINDS`` order (None when none failed)."""
    n = len(next(iter(checks.values())))
    out: list[str | None] = [None] * n
    for kind in reversed(FAILURE_KINDS):
        for i in np.flatnonzero(checks.get(kind, np.zeros(n, bool))):
            out[i] = kind
    return out


@dataclass
class EpisodeMetrics:
    """Accumulates N parallel episodes' errors step by step, then summarises finished episodes.

    Call ``add_step`` once per control step for the episodes still running,
    and ``finish`` when episodes end (with the failure that ended them, or
    none for a completed episode). ``summary`` averages each error over an
    episode's steps, then over episodes, so short failed episodes weigh as
    much as long ones.
    """

    num_envs: int
    step_dt: float
    sums: dict[str, np.ndarray] = field(init=False)
    steps: np.ndarray = field(init=False)
    episodes: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sums = {key: np.zeros(self.num_envs) for key in ERROR_KEYS}
        self.steps = np.zeros(self.num_envs, dtype=np.int64)

    def add_step(self, errors: dict[str, np.ndarray], running: np.ndarray | None = None) -> None:
        """Add one step's [N] errors for the episodes where ``running`` (all when None)."""
        mask = np.ones(self.num_envs, bool) if running is None else np.asarray(running, bool)
        for key in ERROR_KEYS:
            self.sums[key][mask] += np.asarray(errors[key], dtype=np.float64)[mask]
        self.steps[mask] += 1

    def finish(self, ids, failure: str | None | list, start_steps=None) -> None:
        """Close the episodes ``ids``; ``failure`` is one of ``FAILURE_KINDS`` or None, per id or for all.

        Their accumulators restart at zero, ready for the next episode in that slot.
        """
        ids = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        failures = failure if isinstance(failure, list) else [failure] * len(ids)
        starts = [None] * len(ids) if start_steps is None else list(np.atleast_1d(start_steps))
        for i, why, start in zip(ids, failures, starts, strict=True):
            n = int(self.steps[i])
            record = {key: float(self.sums[key][i] / max(n, 1)) for key in ERROR_KEYS}
            record.update(length=n, failure=why, start_step=None if start is None else int(start))
            self.episodes.append(record)
            for key in ERROR_KEYS:
                self.sums[key][i] = 0.0
            self.steps[i] = 0

    def summary(self) -> dict:
        """Success/fall rates, episode length and mean errors over the finished episodes."""
        return summarise(self.episodes, self.step_dt)


def summarise(episodes: list[dict], step_dt: float) -> dict:
    """The metrics dictionary of a list of episode records (see ``EpisodeMetrics.finish``)."""
    count = len(episodes)
    if count == 0:
        return {"episodes": 0}
    failures = [e["failure"] for e in episodes]
    lengths = np.array([e["length"] for e in episodes], dtype=np.float64)
    out: dict = {
        "episodes": count,
        "success_rate": sum(f is None for f in failures) / count,
        "fall_rate": sum(f in FALL_KINDS for f in failures) / count,
        "mean_episode_length": float(lengths.mean()),
        "mean_episode_length_s": float(lengths.mean() * step_dt),
    }
    for key in ERROR_KEYS:
        out[key] = float(np.mean([e[key] for e in episodes]))
    out["failures"] = {kind: sum(f == kind for f in failures) for kind in (*FAILURE_KINDS, PHYSICS_FAULT)}
    return out


COMPARED_KEYS = ("success_rate", "fall_rate", "mean_episode_length", *ERROR_KEYS)


def metric_gaps(reference: dict, other: dict) -> dict[str, float]:
    """``other − reference`` for every compared metric both dictionaries hold."""
    return {
        key: float(other[key]) - float(reference[key])
        for key in COMPARED_KEYS
        if key in reference and key in other and reference[key] is not None and other[key] is not None
    }
