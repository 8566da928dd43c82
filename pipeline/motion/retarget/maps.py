"""The joint map: which human joint pulls which robot body, and how hard (docs/motions.md, "Maps").

A map is a YAML file per robot and skeleton::

    skeleton: smplh
    joints:
      Pelvis:  {body: pelvis, position: 1.0, orientation: 1.0}
      L_Ankle: {body: left_ankle_roll_link, position: 10.0, orientation: 2.0}
      ...
    roles: {}        # only for a skeleton primebot does not know: role → joint (skeletons.ROLES)

``position`` and ``orientation`` are the IK costs of the body's position and orientation targets
(0 leaves that part free). Orientation targets exist for the joints whose frame a skeleton of
positions defines: the pelvis (hips and spine), the chest (shoulders and neck) and the ankles (the
foot's heading, flat). A robot's built-in maps are ``<skeleton>.yaml`` files in the folder its spec
names in ``extra["retarget_maps"]``, else in ``retarget/`` beside its MJCF; ``guess_map`` pairs the
skeleton's roles with a model's bodies when there is none (``robots new`` writes those, marked
REVIEW).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from ..yaml_file import read_yaml
from .human import RetargetError
from .skeletons import ROLES, SKELETONS, Skeleton

ORIENTED_ROLES = ("pelvis", "chest", "left_ankle", "right_ankle")
"""Roles whose orientation a skeleton of positions defines (targets.segment_frames)."""
MAP_KEYS = {"skeleton", "robot", "joints", "roles", "description"}
ENTRY_KEYS = {"body", "position", "orientation"}

GUESS_WEIGHTS = {
    "pelvis": (1.0, 2.0), "chest": (0.0, 1.0),
    "hip": (0.5, 0.0), "knee": (1.0, 0.0), "ankle": (10.0, 2.0),
    "shoulder": (0.5, 0.0), "elbow": (1.0, 0.0), "wrist": (2.0, 0.0),
}  # fmt: skip
"""(position, orientation) cost per role kind in a guessed map: the feet weigh most (they must
stay planted), the hands next, the pelvis and chest set the body's orientation."""


@dataclass(frozen=True)
class MapEntry:
    joint: str
    body: str
    position: float
    orientation: float


@dataclass
class RetargetMap:
    skeleton: str
    entries: list[MapEntry]
    roles: dict[str, str] = field(default_factory=dict)
    source: str = "<guessed>"

    def entry(self, joint: str) -> MapEntry | None:
        return next((e for e in self.entries if e.joint == joint), None)


def _weight(source: str, where: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not np.isfinite(value)
        or value < 0
    ):
        raise RetargetError(f"{source}: {where} must be a number ≥ 0, got {value!r}",
                            fix="give costs such as position: 1.0, orientation: 0.5 (0 leaves it "
                                "free)")
    return float(value)


def load_map(path: str | Path) -> RetargetMap:
    """Parse a map file; every problem names the file and the key."""
    path = Path(path)
    raw = read_yaml(path, "joint map", RetargetError, "check the path given to --map")
    if not isinstance(raw, dict) or not isinstance(raw.get("joints"), dict) or not raw["joints"]:
        raise RetargetError(f"{path}: expected a mapping with 'joints' (human joint → {{body, "
                            "position, orientation})",
                            fix="see docs/motions.md, \"Maps\"")
    unknown = set(raw) - MAP_KEYS
    if unknown:
        raise RetargetError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}",
                            fix=f"allowed: {', '.join(sorted(MAP_KEYS))}")
    entries = []
    for joint, spec in raw["joints"].items():
        where = f"joints.{joint}"
        if isinstance(spec, str):
            spec = {"body": spec}
        if not isinstance(spec, dict) or "body" not in spec or set(spec) - ENTRY_KEYS:
            raise RetargetError(f"{path}: {where} must be {{body: NAME, position: COST, "
                                f"orientation: COST}}, got {spec!r}",
                                fix="see docs/motions.md, \"Maps\"")
        entries.append(MapEntry(str(joint), str(spec["body"]),
                                _weight(str(path), f"{where}.position", spec.get("position", 1.0)),
                                _weight(str(path), f"{where}.orientation",
                                        spec.get("orientation", 0.0))))
    roles = raw.get("roles") or {}
    bad_roles = sorted(set(roles) - set(ROLES)) if isinstance(roles, dict) else ["(not a mapping)"]
    if bad_roles:
        raise RetargetError(f"{path}: roles has unknown role(s) {', '.join(bad_roles)}",
                            fix=f"roles: {', '.join(ROLES)}")
    return RetargetMap(str(raw.get("skeleton", "")), entries,
                       {str(k): str(v) for k, v in roles.items()}, str(path))


def _did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_map(retarget_map: RetargetMap, model: mujoco.MjModel, names: tuple[str, ...],
              roles: dict[str, str],
              feet: tuple[str, ...], source: Path) -> None:
    """The map fits the file and the robot: its joints are in the file, its bodies in the model, the
    robot's feet are pulled by a foot joint, and orientation costs are only on oriented roles."""
    for entry in retarget_map.entries:
        if entry.joint not in names:
            raise RetargetError(
                f"{retarget_map.source}: joint {entry.joint!r} is not in "
                f"{source}{_did_you_mean(entry.joint, names)}; "
                f"its joints: {', '.join(names[:30])}{' …' if len(names) > 30 else ''}",
                fix="use the file's joint names in the map (or pass --map with the map for this "
                    "skeleton)",
            )
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, entry.body) < 0:
            bodies = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
                      for b in range(1, model.nbody)]
            raise RetargetError(
                f"{retarget_map.source}: joints.{entry.joint}: the robot has no body {entry.body!r}"
                f"{_did_you_mean(entry.body, bodies)}",
                fix="use a body name from `primebot robots show`",
            )
        role = next((r for r, j in roles.items() if j == entry.joint), None)
        if entry.orientation > 0 and role not in ORIENTED_ROLES:
            raise RetargetError(
                f"{retarget_map.source}: joints.{entry.joint} has an orientation cost, but a "
                "skeleton of positions "
                f"defines no orientation for it",
                fix="set orientation: 0, or map the joint of one of the roles "
                    f"{', '.join(ORIENTED_ROLES)}",
            )
    mapped = {e.body for e in retarget_map.entries if e.position > 0}
    unpulled = [f for f in feet if f not in mapped]
    if unpulled:
        raise RetargetError(
            f"{retarget_map.source}: no human joint pulls the robot's foot {', '.join(unpulled)}",
            fix="map each side's ankle joint to the robot's foot body with a position cost",
        )


def map_folder(spec) -> Path:
    """Where a robot keeps its built-in maps: ``extra["retarget_maps"]``, else ``retarget/`` beside
    the MJCF."""
    folder = spec.extra.get("retarget_maps")
    return Path(folder) if folder else Path(spec.mjcf).parent / "retarget"


def find_map(spec, skeleton: Skeleton | None) -> Path | None:
    """The robot's built-in map for ``skeleton``, or None."""
    if skeleton is None:
        return None
    path = map_folder(spec) / f"{skeleton.name}.yaml"
    return path if path.is_file() else None


# -- guessing a map from a model ----------------------------------------------------------------


def _body(model: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)


def _chain(model: mujoco.MjModel, top: int, end: int) -> list[int]:
    """Bodies from just below ``top`` down to ``end`` (empty when ``end`` is not below ``top``)."""
    path = []
    while end not in (top, 0):
        path.append(end)
        end = int(model.body_parentid[end])
    return path[::-1] if end == top else []


def _limb(model: mujoco.MjModel, data: mujoco.MjData, top: int, end: int) -> tuple[int, int, int]:
    """(first, middle, end) bodies of the limb from ``top`` to ``end``: the middle is the body
    furthest from both the limb's first body and its end (the knee, the elbow: the middle of a
    straight limb, the corner of a bent one)."""
    chain = _chain(model, top, end) or [end]
    first = chain[0]
    inner = chain[1:-1] or chain
    middle = max(inner, key=lambda b: min(np.linalg.norm(data.xpos[b] - data.xpos[first]),
                                          np.linalg.norm(data.xpos[b] - data.xpos[end])))
    return first, middle, end


def guess_map(model: mujoco.MjModel, skeleton: Skeleton, *, root: str, anchor: str,
              feet: tuple[str, ...],
              hands: tuple[str, ...]) -> RetargetMap:
    """A map of ``skeleton``'s roles onto a model's bodies: pelvis → root, chest → anchor, each
    leg's hip, knee and ankle → the first, middle and foot body of the chain from the root to that
    foot, each arm's shoulder, elbow and wrist likewise from the anchor to that hand. Left is +y."""
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_kinematics(model, data)
    ids = {name: _body(model, name) for name in (root, anchor, *feet, *hands)}
    missing = [n for n, i in ids.items() if i < 0]
    if missing:
        raise RetargetError(f"guessing a joint map: the model has no body {', '.join(missing)}",
                            fix="name bodies of the model (the spec's root, anchor, feet, hands)")

    def by_side(names):
        ordered = sorted(names, key=lambda n: -data.xpos[ids[n], 1])
        return dict(zip(("left", "right"), ordered, strict=False))

    pulls: dict[str, str] = {"pelvis": root}
    if anchor != root:
        pulls["chest"] = anchor
    for side, foot in by_side(feet).items():
        pulls.update(zip((f"{side}_hip", f"{side}_knee", f"{side}_ankle"),
                         (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
                          for b in _limb(model, data, ids[root], ids[foot])), strict=True))
    for side, hand in by_side(hands).items():
        top = ids[anchor] if _chain(model, ids[anchor], ids[hand]) else ids[root]
        pulls.update(zip((f"{side}_shoulder", f"{side}_elbow", f"{side}_wrist"),
                         (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
                          for b in _limb(model, data, top, ids[hand])), strict=True))
    entries = []
    for role in ROLES:
        if role in pulls and role in skeleton.roles:
            kind = role.rpartition("_")[2]
            position, orientation = GUESS_WEIGHTS.get(kind, GUESS_WEIGHTS.get(role, (1.0, 0.0)))
            entries.append(MapEntry(skeleton.roles[role], pulls[role], position, orientation))
    return RetargetMap(skeleton.name, entries)


def map_yaml(retarget_map: RetargetMap, *, header: str = "", review: bool = False) -> str:
    """The map as a map file; ``review`` marks every guessed line ``# REVIEW``."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [f"skeleton: {retarget_map.skeleton}", "joints:"]
    width = max(len(e.joint) for e in retarget_map.entries) + 1
    for e in retarget_map.entries:
        line = (
            f"  {e.joint + ':':<{width}} {{body: {e.body}, position: {e.position:g}, orientation: "
            f"{e.orientation:g}}}"
        )
        lines.append(line + ("  # REVIEW" if review else ""))
    return "\n".join(lines) + "\n"


def write_guessed_maps(model: mujoco.MjModel, folder: Path, *, root: str, anchor: str,
                       feet: tuple[str, ...],
                       hands: tuple[str, ...]) -> list[Path]:
    """One guessed map per known skeleton into ``folder`` (what ``robots new`` ships beside the
    model)."""
    from ...atomic import atomic_write_text

    written = []
    for skeleton in SKELETONS.values():
        guessed = guess_map(model, skeleton, root=root, anchor=anchor, feet=feet, hands=hands)
        path = folder / f"{skeleton.name}.yaml"
        atomic_write_text(path, map_yaml(guessed, review=True, header=(
            f"Joint map {skeleton.name} → this robot for `primebot motion retarget`, guessed by "
            "`robots new`.\n"
            "REVIEW each line: the body each human joint pulls, and its position and orientation "
            "costs\n"
            "(docs/motions.md, \"Maps\"). Remove a line to leave that body free.")))
        written.append(path)
    return written
