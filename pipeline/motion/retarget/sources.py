"""Readers of human motion files: each returns a ``HumanMotion`` (metres, z up) or raises a typed
error.

* ``.bvh`` (LAFAN1, CMU and other Biovision files): parsed by **bvhio** (PyPI, MIT, maintained),
  whose forward kinematics gives each joint's world position per frame; the frame time comes from
  the file. BVH is y up; units are the file's (LAFAN1: cm), found from the skeleton's size unless
  ``units``.
* ``.npz`` holding ``global_joint_positions`` (T, J, 3) and ``height`` (m), the convention
  SMPL-X/AMASS retargeting tools prepare (z up, metres; 22 SMPL-X body joints unless
  ``joint_names`` is stored; the rate is not stored: ``fps`` is needed, 30 as those tools write).
  Read without pickle.
* ``.pt``: SMPL-H joint positions in a torch tensor, only where ``torch.load(weights_only=True)``
  gives a plain tensor (never an unpickled object): (T, 52, 3), or the OMOMO/InterMimic rows
  (T, ≥ 318) whose columns 162–317 hold the 52 joints. torch is imported in ``read_pt`` only
  (docs/architecture.md §1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...rotations import quat_apply, quat_mul
from .human import UNIT_SCALES, HumanMotion, RetargetError, check_fps, y_up_to_z_up
from .skeletons import SMPLH, SMPLX, detect_skeleton

FORMATS = ("bvh", "npz", "pt")
INTERMIMIC_JOINT_COLUMNS = slice(162, 162 + 52 * 3)
"""Where the OMOMO/InterMimic rows keep the 52 SMPL-H joint positions (x y z each, z up, metres)."""


def detect_format(path: Path, given: str | None = None) -> str:
    """``bvh``, ``npz`` or ``pt``: the option, else the extension, else the file's first bytes."""
    if given:
        if given not in FORMATS:
            raise RetargetError(f"unknown source format {given!r}",
                                fix=f"use one of {', '.join(FORMATS)}")
        return given
    suffix = path.suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    try:
        head = path.read_bytes()[:64]
    except OSError as exc:
        raise RetargetError(f"{path}: cannot be read ({exc})", fix="check the path") from None
    if head.lstrip().upper().startswith(b"HIERARCHY"):
        return "bvh"
    if head.startswith(b"PK\x03\x04"):
        # torch's files are zip archives too; an npz holds .npy members
        import zipfile

        with zipfile.ZipFile(path) as archive:
            return "npz" if any(n.endswith(".npy") for n in archive.namelist()) else "pt"
    raise RetargetError(f"{path}: not a BVH, .npz or .pt file that can be recognised",
                        fix="pass --format bvh|npz|pt")


def _scaled(positions: np.ndarray, units: str | None,
            source: Path) -> tuple[np.ndarray, str | None]:
    if units in (None, "m", "auto"):
        return positions, None
    if units not in UNIT_SCALES:
        raise RetargetError(f"unknown units {units!r}", fix=f"use one of {', '.join(UNIT_SCALES)}")
    return positions * UNIT_SCALES[units], f"positions in {units}, converted to metres"


def read_bvh(path: Path, *, units: str | None = None) -> HumanMotion:
    """World positions of every joint of a BVH file, converted to metres and z up.

    bvhio parses the file: each joint's offset, channels (in their order) and, per frame, its local
    translation and rotation. The forward kinematics is done here, vectorised over frames (bvhio's
    own per-frame hierarchy is about ten times slower on a long clip)."""
    import bvhio

    try:
        container = bvhio.readAsBvh(str(path))
    # bvhio raises plain exceptions for every kind of bad file
    except Exception as exc:  # noqa: BLE001
        raise RetargetError(f"{path}: not a readable BVH file ({type(exc).__name__}: {exc})",
                            fix="check that HIERARCHY and MOTION sections are complete") from None
    frame_time = float(container.FrameTime)
    fps = check_fps(1.0 / frame_time if frame_time > 0 else 0.0, path)
    joints, parents = [], []
    pending = [(container.Root, -1)]
    while pending:  # depth first, children in file order: the file's joint order
        joint, parent = pending.pop()
        parents.append(parent)
        joints.append(joint)
        pending.extend((child, len(joints) - 1) for child in reversed(joint.Children))
    frames = int(container.FrameCount)
    positions = np.empty((frames, len(joints), 3))
    rotations = np.empty((frames, len(joints), 4))
    for j, joint in enumerate(joints):
        local_pos = np.array([(k.Position.x, k.Position.y, k.Position.z)
                              for k in joint.Keyframes[:frames]])
        local_rot = np.array([(k.Rotation.w, k.Rotation.x, k.Rotation.y, k.Rotation.z)
                              for k in joint.Keyframes[:frames]])
        if parents[j] < 0:
            positions[:, j], rotations[:, j] = local_pos, local_rot
        else:
            p = parents[j]
            positions[:, j] = positions[:, p] + quat_apply(rotations[:, p], local_pos)
            rotations[:, j] = quat_mul(rotations[:, p], local_rot)
    names = tuple(joint.Name for joint in joints)
    positions = y_up_to_z_up(positions)
    notes = ["BVH: y up, turned z up"]
    if units in (None, "auto"):
        units = _bvh_units(positions, names)
        notes.append(f"units taken to be {units} from the skeleton's size (--units to say "
                     "otherwise)")
    positions, note = _scaled(positions, units, path)
    if note:
        notes.append(note)
    return HumanMotion(names, positions, fps, path, detect_skeleton(names), notes=notes)


def _bvh_units(positions: np.ndarray, names: tuple[str, ...]) -> str:
    """The unit that makes the figure's vertical extent a person's (1–2.5 m); metres when
    unclear."""
    extent = float(np.median(positions[..., 2].max(axis=1) - positions[..., 2].min(axis=1)))
    for unit in ("m", "cm", "in", "mm"):
        if 0.8 <= extent * UNIT_SCALES[unit] <= 2.5:
            return unit
    return "m"


def read_npz(path: Path, *, fps: float | None, units: str | None = None) -> HumanMotion:
    """The ``global_joint_positions`` + ``height`` convention (z up, metres), without pickle."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "global_joint_positions" not in data.files:
                raise RetargetError(
                    f"{path}: no key 'global_joint_positions' (keys: {', '.join(data.files)})",
                    fix="save the joints' world positions as global_joint_positions (T, J, 3) in "
                        "metres, "
                    "with height (m); a robot motion .npz is not a human motion",
                )
            positions = np.asarray(data["global_joint_positions"], dtype=np.float64)
            height = (
                float(np.asarray(data["height"]).reshape(-1)[0]) if "height" in data.files else None
            )
            names = (
                tuple(str(n) for n in data["joint_names"]) if "joint_names" in data.files else None
            )
            stored_fps = (
                float(np.asarray(data["fps"]).reshape(-1)[0]) if "fps" in data.files else None
            )
    except RetargetError:
        raise
    except ValueError as exc:
        raise RetargetError(f"{path}: a key needs pickle or is unreadable ({exc})",
                            fix="save plain numeric arrays (names as a unicode array)") from None
    except (OSError, EOFError) as exc:
        raise RetargetError(
            f"{path}: not a readable .npz ({exc})", fix="regenerate the file"
        ) from None
    if positions.ndim != 3 or positions.shape[-1] != 3:
        raise RetargetError(f"{path}: global_joint_positions has shape {positions.shape}, expected "
                            "(T, J, 3)",
                            fix="store frames × joints × xyz")
    if names is None:
        if positions.shape[1] != len(SMPLX.joints):
            raise RetargetError(
                f"{path}: {positions.shape[1]} joints and no joint_names; without names only the "
                "22 SMPL-X "
                "body joints are understood",
                fix="store joint_names (a unicode array, one name per joint) beside the positions",
            )
        names = SMPLX.joints
    rate = fps if fps is not None else stored_fps
    if rate is None:
        raise RetargetError(f"{path}: the file does not store its frame rate",
                            fix="pass --fps (30 for AMASS prepared by the usual SMPL-X tools)")
    positions, note = _scaled(positions, units, path)
    notes = ["z up, metres (the .npz convention)"] + ([note] if note else [])
    return HumanMotion(names, positions, check_fps(rate, path), path, detect_skeleton(names),
                       height=height,
                       notes=notes)


def read_pt(path: Path, *, fps: float | None, units: str | None = None) -> HumanMotion:
    """SMPL-H joint positions from a torch file holding one plain tensor (never unpickled
    objects)."""
    import pickle

    import torch  # only here: the motion package is torch-free (docs/architecture.md §1)

    try:
        value = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        raise RetargetError(
            f"{path}: does not load as plain tensors with torch.load(weights_only=True) "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
            fix="save the joint positions as one tensor (torch.save(positions_tensor, path)) or as "
                "an .npz "
            "with global_joint_positions; files that need pickle are refused",
        ) from None
    if not isinstance(value, torch.Tensor):
        raise RetargetError(f"{path}: holds a {type(value).__name__}, not a tensor",
                            fix="save one tensor of joint positions, (T, 52, 3) or OMOMO's (T, "
                                "≥318) rows")
    array = value.detach().to(torch.float64).numpy()
    if array.ndim == 3 and array.shape[1:] == (len(SMPLH.joints), 3):
        positions = array
    elif array.ndim == 2 and array.shape[1] >= INTERMIMIC_JOINT_COLUMNS.stop:
        positions = array[:, INTERMIMIC_JOINT_COLUMNS].reshape(len(array), len(SMPLH.joints), 3)
    else:
        raise RetargetError(
            f"{path}: a tensor of shape {tuple(array.shape)} is not SMPL-H joint positions",
            fix="expected (T, 52, 3), or OMOMO/InterMimic rows (T, ≥ 318) with the joints in "
                "columns 162–317",
        )
    if fps is None:
        raise RetargetError(f"{path}: a tensor does not store its frame rate",
                            fix="pass --fps (30 for the OMOMO clips)")
    positions, note = _scaled(positions, units, path)
    notes = ["SMPL-H joints, z up, metres"] + ([note] if note else [])
    return HumanMotion(SMPLH.joints, positions, check_fps(fps, path), path, SMPLH, notes=notes)


def load_human(path: str | Path, *, fmt: str | None = None, fps: float | None = None,
               units: str | None = None) -> HumanMotion:
    """Read a human motion file in any supported format (``fmt`` overrides detection)."""
    path = Path(path)
    if not path.is_file():
        raise RetargetError(f"human motion file {path} does not exist", fix="check the path")
    kind = detect_format(path, fmt)
    if kind == "bvh":
        human = read_bvh(path, units=units)
        if fps is not None:
            human.fps = check_fps(fps, path)
            human.notes.append(f"frame rate {fps:g} from --fps instead of the file's")
        return human
    if kind == "npz":
        return read_npz(path, fps=fps, units=units)
    return read_pt(path, fps=fps, units=units)
