"""The figures a retarget is judged by (docs/motions.md, "From human motion", what each one means).

* foot skate: per contact phase of the person's feet, how far the robot's foot slides horizontally
  from where it landed (cm); the worst phase and the mean are reported;
* penetration: how deep any robot collision geom goes below the floor at worst (cm);
* joint-limit violations: joint samples outside their range (the IK keeps them in; smoothing must
  too);
* IK residual: per mapped body, how far it ends from its target (mean and worst, cm);
* seconds: the wall time of the retarget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .foot_contacts import skate

SKATE_TARGET_CM = 2.0
PENETRATION_TARGET_CM = 1.0


@dataclass
class Quality:
    skate_cm: dict[str, np.ndarray]
    """side → per contact phase, the robot foot's largest slide (cm)."""
    penetration_cm: float
    """The deepest any collision geom goes below z = 0 (cm; 0 when nothing does)."""
    limit_violations: int
    """Joint samples (frames × joints) outside the joint's range."""
    residual_cm: dict[str, tuple[float, float]]
    """body → (mean, worst) distance from its target (cm)."""
    seconds: float
    frames: int
    scale: float
    """Robot height / the person's: the body around the pelvis."""
    leg_scale: float
    """The pelvis and the legs' scale: the height ratio, or robot leg length / the person's
    (``--scale legs``)."""
    stature: float
    notes: list[str] = field(default_factory=list)

    @property
    def worst_skate_cm(self) -> float:
        phases = [v for v in self.skate_cm.values() if len(v)]
        return float(max((v.max() for v in phases), default=0.0))

    @property
    def mean_skate_cm(self) -> float:
        phases = np.concatenate([v for v in self.skate_cm.values()] or [np.zeros(0)])
        return float(phases.mean()) if len(phases) else 0.0

    @property
    def contact_phases(self) -> int:
        return int(sum(len(v) for v in self.skate_cm.values()))

    def lines(self) -> list[str]:
        ok = lambda good: "ok " if good else "BAD"  # noqa: E731
        out = [
            f"  {ok(self.worst_skate_cm <= SKATE_TARGET_CM)} foot skate      worst "
            f"{self.worst_skate_cm:.2f} cm, mean "
            f"{self.mean_skate_cm:.2f} cm over {self.contact_phases} contact phase(s) (target ≤ "
            f"{SKATE_TARGET_CM:g} cm)",
            f"  {ok(self.penetration_cm <= PENETRATION_TARGET_CM)} penetration     worst "
            f"{self.penetration_cm:.2f} cm "
            f"below the floor (target ≤ {PENETRATION_TARGET_CM:g} cm)",
            f"  {ok(self.limit_violations == 0)} joint limits    {self.limit_violations} joint "
            "sample(s) outside their range",
            "      IK residual  "
            + ", ".join(f"{b} {m:.1f}/{w:.1f}" for b, (m, w) in self.residual_cm.items())
            + " cm (mean/worst)",
            f"      {self.frames} frames at 50 fps, scale {self.scale:.3f} (height: person "
            f"{self.stature:.2f} m)"
            + (f" around the pelvis, {self.leg_scale:.3f} for the pelvis and legs (leg length)"
               if self.leg_scale != self.scale else "")
            + f", {self.seconds:.1f} s",
        ]
        return out + [f"      note: {n}" for n in self.notes]

    def to_dict(self) -> dict:
        return {
            "worst_skate_cm": self.worst_skate_cm, "mean_skate_cm": self.mean_skate_cm,
            "contact_phases": self.contact_phases, "penetration_cm": self.penetration_cm,
            "limit_violations": self.limit_violations,
            "residual_cm": {b: {"mean": m, "worst": w} for b, (m, w) in self.residual_cm.items()},
            "seconds": self.seconds, "frames": self.frames, "scale": self.scale,
            "leg_scale": self.leg_scale, "stature_m": self.stature,
            "notes": list(self.notes),
        }


def measure(foot_tracks: dict[str, np.ndarray], contact: dict[str, np.ndarray], lowest: np.ndarray,
            joint_pos: np.ndarray, joint_range: np.ndarray, body_pos: dict[str, np.ndarray],
            target_pos: dict[str, np.ndarray], **info) -> Quality:
    """``foot_tracks``/``contact``: side → [T, 3] robot foot positions and [T] the person's contact;
    ``lowest`` [T] the lowest collision point; ``body_pos``/``target_pos``: body → [T, 3]."""
    outside = (joint_pos < joint_range[:, 0]) | (joint_pos > joint_range[:, 1])
    residual = {}
    for body, target in target_pos.items():
        gap = np.linalg.norm(body_pos[body] - target, axis=-1) * 100
        residual[body] = (float(gap.mean()), float(gap.max()))
    return Quality(
        skate_cm={side: skate(track, contact[side]) * 100 for side, track in foot_tracks.items()},
        penetration_cm=float(max(0.0, -lowest.min()) * 100),
        limit_violations=int(outside.sum()),
        residual_cm=residual,
        **info,
    )
