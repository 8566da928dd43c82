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
- ``joint_pos_error_rad`` / ``joint_vel_error_rad_s``: mean over joints of |q − q_ref| /
  |q̇ − q̇_ref|.
- ``ee_pos_error_m``: mean over end effectors of ‖p − p_ref‖.
- ``anchor_pos_error_m`` / ``anchor_ori_error_rad``: distance and rotation angle between anchors.
- ``success_rate``: episodes that reached their last step without a failure.
- ``fall_rate``: episodes ended by the anchor height or anchor orientation check (the robot went
  down); an end-effector-only failure counts against success but is not a fall.
- ``statue_mpkpe_m``: the MPKPE a statue would score over the same steps: the robot frozen in the
  reference pose of the episode's start step while the reference moves on (a per-motion baseline).
- ``fraction_removed``: 1 − mpkpe / statue_mpkpe, how much of the statue's error the policy removes.
- ``body_mpkpe_m`` / ``worst_body``: mean error of each tracked body, and the body that tracks
  worst; ``worst_step_mpkpe_m`` / ``worst_step``: the largest MPKPE at any step of any episode
  and its step.
- ``verdict``: whether the policy *tracks* the motion (``tracking_verdict``; docs/tasks.md explains
  the rule): no success rate or error alone can say so, since a policy that holds still passes both
  on most motions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..rotations import quat_apply_inverse, quat_error_magnitude
from ..success_rates import rate_text

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
    """When a tracking episode has failed (docs/architecture.md §5 terminations; mjlab's values)."""

    anchor_height: float = 0.25
    """m: |z_anchor − z_ref| above this is a failure."""
    anchor_ori: float = 0.8
    """|z of gravity in the anchor frame − the same in the reference anchor frame| above this is a
    failure."""
    ee_height: float = 0.25
    """m: any end effector's |z − z_ref| above this is a failure."""


def threshold(settings: Mapping[str, Any], key: str, default: float,
              disabled: float = math.inf) -> float:
    """A threshold from a task's settings or an ONNX's metadata: ``default`` when ``key`` is absent,
    ``disabled`` when it is ``None`` or ``"none"`` (the check is off), else the number."""
    if key not in settings:
        return default
    value = settings[key]
    return disabled if value is None or value == "none" else float(value)


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
    """The ``ERROR_KEYS`` errors of each of the N episodes at this step, each [N], and
    ``body_errors_m`` [N, K]."""
    robot_rel = s.body_pos_w - s.root_pos_w[:, None, :]
    ref_rel = s.ref_body_pos_w - s.ref_root_pos_w[:, None, :]
    body_errors = _distance(s.body_pos_w, s.ref_body_pos_w)
    return {
        "body_errors_m": body_errors,
        "mpkpe_m": body_errors.mean(axis=-1),
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
        "anchor_height": np.abs(s.anchor_pos_w[:, 2] - s.ref_anchor_pos_w[:, 2])
        > thresholds.anchor_height,
        "anchor_ori": np.abs(gravity_z - ref_gravity_z) > thresholds.anchor_ori,
        "ee_height": (ee_dz > thresholds.ee_height).any(axis=-1) if ee_dz.size
        else np.zeros(len(ee_dz), bool),
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

    With ``reference_body_pos`` (the tracked bodies' reference positions per
    control step, [T, K, 3]) each finished episode also gets the statue
    baseline (``statue_mpkpe``) over the steps a full episode from its start
    would play (up to ``max_episode_steps``, or to the motion's end), so the
    baseline is the motion's, whatever the policy did; ``summary`` then gives
    the verdict. ``body_names`` names the K bodies in the per-body errors.
    """

    num_envs: int
    step_dt: float
    reference_body_pos: np.ndarray | None = None
    max_episode_steps: int | None = None
    body_names: tuple[str, ...] | None = None
    sums: dict[str, np.ndarray] = field(init=False)
    steps: np.ndarray = field(init=False)
    episodes: list[dict] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    """The env slot each of ``episodes`` was played in."""

    def __post_init__(self) -> None:
        self.sums = {key: np.zeros(self.num_envs) for key in ERROR_KEYS}
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self.body_sums: np.ndarray | None = None
        self.worst = np.full(self.num_envs, -1.0)
        self.worst_at = np.zeros(self.num_envs, dtype=np.int64)

    def add_step(self, errors: dict[str, np.ndarray], running: np.ndarray | None = None) -> None:
        """Add one step's [N] errors for the episodes where ``running`` (all when None)."""
        mask = np.ones(self.num_envs, bool) if running is None else np.asarray(running, bool)
        for key in ERROR_KEYS:
            self.sums[key][mask] += np.asarray(errors[key], dtype=np.float64)[mask]
        self.steps[mask] += 1
        bodies = errors.get("body_errors_m")
        if bodies is not None:
            bodies = np.asarray(bodies, dtype=np.float64)
            if self.body_sums is None:
                self.body_sums = np.zeros((self.num_envs, bodies.shape[-1]))
            self.body_sums[mask] += bodies[mask]
        mpkpe = np.asarray(errors["mpkpe_m"], dtype=np.float64)
        worse = mask & (mpkpe > self.worst)
        self.worst[worse] = mpkpe[worse]
        self.worst_at[worse] = self.steps[worse]

    def finish(self, ids, failure: str | None | list, start_steps=None) -> None:
        """Close the episodes ``ids``; ``failure`` is one of ``FAILURE_KINDS`` or None, per id or
        for all.

        Their accumulators restart at zero, ready for the next episode in that slot.
        """
        ids = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        failures = failure if isinstance(failure, list) else [failure] * len(ids)
        starts = [None] * len(ids) if start_steps is None else list(np.atleast_1d(start_steps))
        for i, why, start in zip(ids, failures, starts, strict=True):
            n = int(self.steps[i])
            record = {key: float(self.sums[key][i] / max(n, 1)) for key in ERROR_KEYS}
            record.update(length=n, failure=why, start_step=None if start is None else int(start))
            if self.body_sums is not None:
                record["body_mpkpe_m"] = [float(v) for v in self.body_sums[i] / max(n, 1)]
                self.body_sums[i] = 0.0
            if n:
                first = 0 if start is None else int(start)
                record.update(worst_step_mpkpe_m=float(self.worst[i]),
                              worst_step=first + int(self.worst_at[i]))
                if self.reference_body_pos is not None:
                    record["statue_mpkpe_m"] = statue_mpkpe(self.reference_body_pos, first,
                                                            self.max_episode_steps)
            self.episodes.append(record)
            self.slots.append(int(i))
            for key in ERROR_KEYS:
                self.sums[key][i] = 0.0
            self.steps[i] = 0
            self.worst[i], self.worst_at[i] = -1.0, 0

    def summary(self) -> dict:
        """Success/fall rates, episode length, mean errors and the verdict over the finished
        episodes."""
        return summarise(self.episodes, self.step_dt, self.body_names)


def statue_mpkpe(reference_body_pos: np.ndarray, start: int, max_steps: int | None = None) -> float:
    """MPKPE of a statue frozen in the reference pose of step ``start``, over a full episode from
    there.

    The steps are those a successful episode from ``start`` is scored on
    (errors are taken after each policy step, at reference steps
    ``start + 1`` … up to the motion's last step, at most ``max_steps`` of
    them), so statue and policy are compared on the same frames.
    ``reference_body_pos`` is [T, K, 3] (world frame).
    """
    last = len(reference_body_pos) - 1
    start = int(min(max(start, 0), last))
    steps = max(1, last - start)
    if max_steps is not None:
        steps = min(steps, int(max_steps))
    t = np.minimum(start + np.arange(1, steps + 1), last)
    frozen = reference_body_pos[start][None]
    return float(_distance(reference_body_pos[t], frozen).mean())


@dataclass(frozen=True)
class VerdictRule:
    """When a policy counts as *tracking* its motion (docs/tasks.md, "What tracked means")."""

    min_success_rate: float = 0.9
    """Episodes must reach their end without a failed termination check."""
    statue_fraction: float = 0.35
    """MPKPE at most this fraction of the statue's: the policy removes ≥ 65 % of a statue's
    error."""
    floor_m: float = 0.02
    """… or at most this many metres, whichever is larger (a nearly still motion cannot demand less)
    …"""
    min_fraction_removed: float = 0.5
    """… and in every case at least half the statue's error removed, so holding still never
    passes."""

    def limit(self, statue_mpkpe: float) -> float:
        """The largest MPKPE that tracks a motion whose statue baseline is ``statue_mpkpe``."""
        return min((1.0 - self.min_fraction_removed) * statue_mpkpe,
                   max(self.floor_m, self.statue_fraction * statue_mpkpe))


TRACKING_RULE = VerdictRule()

def tracking_verdict(metrics: dict, rule: VerdictRule = TRACKING_RULE) -> dict:
    """The verdict of a metrics summary: ``tracked`` (bool) with the figures and the reason.

    A policy tracks its motion when its success rate is at least
    ``min_success_rate`` *and* its MPKPE is at most ``rule.limit(statue)``:
    max(``floor_m``, ``statue_fraction`` × statue MPKPE), but never more than
    (1 − ``min_fraction_removed``) × statue MPKPE. A policy that holds still
    scores the statue's MPKPE and so never passes the second test. Where the
    metrics carry ``first_frame_episode`` (``pooled_summary``), that episode
    must also reach its end.
    """
    success, mpkpe, statue = (metrics.get(k) for k in ("success_rate", "mpkpe_m", "statue_mpkpe_m"))
    if success is None or mpkpe is None or statue is None:
        return {"tracked": None, "reason": "no tracking metrics with a statue baseline"}
    limit = rule.limit(statue)
    removed = 1.0 - mpkpe / statue if statue > 0 else None
    reasons = []
    if success < rule.min_success_rate:
        reasons.append(f"success {rate_text(success, rule.min_success_rate)} < "
                       f"{rule.min_success_rate:.2f}"
                       + where_episodes_fail(metrics))
    if not mpkpe <= limit:
        worst = (f"; the largest error on {metrics['worst_body']}" if metrics.get("worst_body")
                 else "")
        if worst and metrics.get("worst_step_s") is not None:
            worst += f", worst at {metrics['worst_step_s']:.1f} s of the motion"
        reasons.append(f"MPKPE {mpkpe:.3f} m > {limit:.3f} m (the limit for a statue MPKPE of "
                       f"{statue:.3f} m{worst})")
    first = metrics.get("first_frame_episode")
    if first and first.get("failure") is not None:
        reasons.append(f"the episode from the motion's first frame, the one a deployment plays, "
                       f"ends at {first['length_s']:.1f} s ({first['failure']})")
    tracked = not reasons
    return {
        "tracked": tracked,
        "label": "tracked" if tracked else "not tracked",
        "success_rate": success, "mpkpe_m": mpkpe, "statue_mpkpe_m": statue, "mpkpe_limit_m": limit,
        "fraction_removed": removed,
        "rule": {"min_success_rate": rule.min_success_rate, "statue_fraction": rule.statue_fraction,
                 "floor_m": rule.floor_m, "min_fraction_removed": rule.min_fraction_removed},
        "reason": "; ".join(reasons) if reasons else
                  f"success {success:.2f} and MPKPE {mpkpe:.3f} m ≤ {limit:.3f} m"
                  + (f" ({removed:.0%} of the statue's error removed)" if removed is not None
                     else ""),
    }


def where_episodes_fail(metrics: dict) -> str:
    """`` (N of M episodes fail, at a–b s of the motion …)``: where the reference is too hard to
    follow, or not learnt yet, or where a perturbation costs most (``failure_times_s``, beside
    ``episodes``); empty without it."""
    times = metrics.get("failure_times_s")
    if not times:
        return ""
    count = f"{len(times)} of {metrics['episodes']} episodes fail"
    if len(times) == 1:
        return f" ({count}, at {times[0]:.1f} s of the motion)"
    low, high = times[0], times[-1]
    if len(times) < 4:
        return f" ({count}, at {low:.1f}–{high:.1f} s of the motion)"
    q1, q3 = np.percentile(times, [25, 75])
    return (f" ({count}, at {low:.1f}–{high:.1f} s of the motion, half of them at "
            f"{q1:.1f}–{q3:.1f} s)")


def summarise(episodes: list[dict], step_dt: float, body_names=None,
              means: Sequence[str] = ()) -> dict:
    """The metrics dictionary of a list of episode records, for every task and both loops.

    Motion-tracking records (``EpisodeMetrics.finish``) carry ``failure`` and
    the errors, and give the success rate, errors, statue baseline and
    verdict. A record without ``failure`` (a policy that tracks no motion,
    ``deploy.planar``) says a fall by ``terminated``. Every record gives the
    fall rate and episode length; ``means`` names further per-episode values
    averaged as ``mean_<key>`` (walk: ``forward_speed_m_s``, ``distance_m``).
    """
    count = len(episodes)
    if count == 0:
        return {"episodes": 0}
    tracking = all("failure" in e for e in episodes)
    failures = [e["failure"] for e in episodes] if tracking else []
    lengths = np.array([e["length"] for e in episodes], dtype=np.float64)
    out: dict = {"episodes": count}
    if tracking:
        out["success_rate"] = sum(f is None for f in failures) / count
    out.update({f"mean_{key}": float(np.mean([e[key] for e in episodes])) for key in means})
    fell = [f in FALL_KINDS for f in failures] if tracking else [bool(e["terminated"])
                                                                 for e in episodes]
    out.update(fall_rate=sum(fell) / count, mean_episode_length=float(lengths.mean()),
               mean_episode_length_s=float(lengths.mean() * step_dt))
    if not tracking:
        return out
    for key in ERROR_KEYS:
        out[key] = float(np.mean([e[key] for e in episodes]))
    out["failures"] = {kind: sum(f == kind for f in failures)
                       for kind in (*FAILURE_KINDS, PHYSICS_FAULT)}
    if all("statue_mpkpe_m" in e for e in episodes):
        out["statue_mpkpe_m"] = float(np.mean([e["statue_mpkpe_m"] for e in episodes]))
        out["fraction_removed"] = (
            (1.0 - out["mpkpe_m"] / out["statue_mpkpe_m"]) if out["statue_mpkpe_m"] > 0 else None
        )
    per_body = [e["body_mpkpe_m"] for e in episodes if "body_mpkpe_m" in e]
    if per_body and len({len(b) for b in per_body}) == 1:
        means = np.mean(per_body, axis=0)
        names = list(body_names) if body_names is not None and len(body_names) == len(means) \
            else [str(i) for i in range(len(means))]
        out["body_mpkpe_m"] = {name: float(v) for name, v in zip(names, means, strict=True)}
        out["worst_body"] = names[int(np.argmax(means))]
    worst = [e for e in episodes if "worst_step_mpkpe_m" in e]
    if worst:
        top = max(worst, key=lambda e: e["worst_step_mpkpe_m"])
        out["worst_step_mpkpe_m"], out["worst_step"] = top["worst_step_mpkpe_m"], top["worst_step"]
        out["worst_step_s"] = top["worst_step"] * step_dt
    if all(e.get("start_step") is not None for e in episodes):
        # where in the motion each failed episode ended (s): what a NOT TRACKED verdict points at
        out["failure_times_s"] = sorted((e["start_step"] + e["length"]) * step_dt
                                        for e in episodes if e["failure"] is not None)
    if "statue_mpkpe_m" in out:
        out["verdict"] = tracking_verdict(out)
    return out


def pooled_summary(groups: Mapping[str, dict], step_dt: float, body_names=None) -> dict:
    """The summary of every group's ``episode_records`` together (eval.json's and sim2sim.json's
    ``overall``).

    When a ``from_start`` group is among them, its episode (the one a
    deployment plays: from the motion's first frame, docs/deploy.md) is
    named in ``first_frame_episode`` and the verdict also needs it to reach
    its end: a policy that falls there is not tracked, however many of the
    sampled starts succeed.
    """
    records = [r for group in groups.values() for r in group.get("episode_records", [])]
    out = summarise(records, step_dt, body_names)
    first = (groups.get("from_start") or {}).get("episode_records") or []
    if first and "verdict" in out:
        out["first_frame_episode"] = {"failure": first[0]["failure"],
                                      "length_s": first[0]["length"] * step_dt}
        out["verdict"] = tracking_verdict(out)
    return out


COMPARED_KEYS = ("success_rate", "fall_rate", "mean_episode_length", *ERROR_KEYS)


def metric_gaps(reference: dict, other: dict,
                keys: Sequence[str] = COMPARED_KEYS) -> dict[str, float]:
    """``other − reference`` for every metric of ``keys`` both dictionaries hold."""
    return {
        key: float(other[key]) - float(reference[key])
        for key in keys
        if key in reference and key in other and reference[key] is not None
        and other[key] is not None
    }
