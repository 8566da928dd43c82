"""Reference motions: the mjlab/BeyondMimic ``.npz`` format (docs/architecture.md §2), loaded
safely."""

from __future__ import annotations

import hashlib
import io
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_path
from ..errors import MotionError
from ..limits import MAX_DECODED_BYTES, MAX_MOTION_FRAMES, over_budget

ARRAY_KEYS = (
    "joint_pos",
    "joint_vel",
    "body_pos_w",
    "body_quat_w",
    "body_lin_vel_w",
    "body_ang_vel_w",
)
REQUIRED_KEYS = ("fps", *ARRAY_KEYS)
NAME_KEYS = ("joint_names", "body_names")
TRAINING_KEY = "training_overrides"
"""Optional: the ``--set KEY=VALUE`` training overrides a motion needs (docs/architecture.md §2);
mjlab's loader, which reads only the keys above, ignores it."""


@dataclass
class Motion:
    """A reference motion. T frames, J joints, B bodies; quaternions are w x y z."""

    fps: float
    joint_pos: np.ndarray  # [T, J]
    joint_vel: np.ndarray  # [T, J]
    body_pos_w: np.ndarray  # [T, B, 3]
    body_quat_w: np.ndarray  # [T, B, 4]
    body_lin_vel_w: np.ndarray  # [T, B, 3]
    body_ang_vel_w: np.ndarray  # [T, B, 3]
    joint_names: tuple[str, ...] | None = None
    body_names: tuple[str, ...] | None = None
    training_overrides: tuple[str, ...] = ()
    """``KEY=VALUE`` training settings this motion needs; training applies them first, so any
    ``--set`` (a preset's or the user's) overrides them."""
    source: Path | None = None
    sha256: str = ""

    @property
    def num_frames(self) -> int:
        return int(self.joint_pos.shape[0])

    @property
    def duration(self) -> float:
        return (self.num_frames - 1) / self.fps

    def arrays(self) -> dict[str, np.ndarray]:
        return {key: getattr(self, key) for key in ARRAY_KEYS}

    def first_non_finite(self) -> tuple[str, int] | None:
        """(key, frame) of the first NaN/Inf value, or None when every value is finite."""
        for key in ARRAY_KEYS:
            values = getattr(self, key)
            bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
            if bad.any():
                return key, int(np.argmax(bad))
        return None


SAME_MOTION_ATOL = 1e-6
"""Largest difference (m, rad, per second) two builds of one motion may show: authoring the same
source with another numpy or MuJoCo build changes the last bits of a few values (about 1e-16)."""


def motion_difference(a: Motion, b: Motion) -> float:
    """The largest absolute difference between two motions' arrays; inf when their fps, names or
    shapes differ. Two builds are the same motion when this is at most ``SAME_MOTION_ATOL``."""
    if a.fps != b.fps or a.joint_names != b.joint_names or a.body_names != b.body_names:
        return math.inf
    worst = 0.0
    for key in ARRAY_KEYS:
        x, y = getattr(a, key), getattr(b, key)
        if x.shape != y.shape:
            return math.inf
        if x.size:
            worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))))
    return worst


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _motion_error(message: str, key: str | None = None, fix: str | None = None) -> MotionError:
    """A ``MotionError`` that also records which key it is about (``.key``, for validation
    reports)."""
    error = MotionError(message, fix=fix)
    error.key = key
    return error


def load_motion(path: str | Path) -> Motion:
    """Load a motion without pickle; structural problems raise ``MotionError`` naming file and key.

    Only the format is checked here; ``primebot motion validate`` checks content.
    The error's ``key`` attribute names the offending key when there is one.
    """
    path = Path(path)
    if not path.is_file():
        raise _motion_error(f"motion file {path} does not exist", fix="check the path")
    _check_archive(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in REQUIRED_KEYS if key not in data.files]
            if missing:
                raise _motion_error(
                    f"{path}: missing key(s) {', '.join(missing)}",
                    key=",".join(missing),
                    fix="write every key of docs/architecture.md §2 (see docs/motions.md); "
                    "`primebot motion convert` builds them from a CSV",
                )
            arrays = {}
            for key in (*REQUIRED_KEYS, *NAME_KEYS, TRAINING_KEY):
                if key not in data.files:
                    continue
                try:
                    arrays[key] = data[key]
                except ValueError as exc:
                    if "allow_pickle" in str(exc):  # object arrays need pickle, which we refuse
                        raise _motion_error(
                            f"{path}: key {key!r} holds Python objects (a pickled array); refusing "
                            "to unpickle",
                            key=key,
                            fix="save names as a unicode array, e.g. np.array(names, dtype=str)",
                        ) from exc
                    raise _motion_error(
                        f"{path}: key {key!r} is unreadable ({exc})",
                        key=key,
                        fix="the file is truncated or corrupt; regenerate it",
                    ) from exc
    except MotionError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise _motion_error(
            f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})",
            fix="the file is truncated or not an npz; regenerate it",
        ) from exc

    fps = np.asarray(arrays["fps"]).reshape(-1)
    if fps.size != 1 or not np.issubdtype(fps.dtype, np.number):
        raise _motion_error(
            f"{path}: key 'fps' must be one number, got shape {np.shape(arrays['fps'])}", key="fps"
        )
    for key in ARRAY_KEYS:
        dtype = arrays[key].dtype
        if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
            raise _motion_error(
                f"{path}: key {key!r} has dtype {dtype}, expected floating point", key=key
            )
    names = {
        key: tuple(str(n) for n in arrays[key]) if key in arrays else None for key in NAME_KEYS
    }
    return Motion(
        fps=float(fps[0]),
        **{key: np.asarray(arrays[key], dtype=np.float64) for key in ARRAY_KEYS},
        **names,
        training_overrides=_training_overrides(path, arrays.get(TRAINING_KEY)),
        source=path,
        sha256=file_sha256(path),
    )


def malformed_overrides(items) -> list:
    """The items that are not ``KEY=VALUE`` strings with a key (the shape ``--set`` takes)."""
    return [item for item in items
            if not isinstance(item, str) or "=" not in item or not item.partition("=")[0].strip()]


def _training_overrides(path: Path, stored: np.ndarray | None) -> tuple[str, ...]:
    """The stored training overrides, each ``KEY=VALUE`` (what training then checks is the key's
    business)."""
    if stored is None:
        return ()
    if stored.ndim != 1 or stored.dtype.kind != "U":
        raise _motion_error(
            f"{path}: key {TRAINING_KEY!r} must be a 1-D array of strings, got {stored.dtype} "
            f"{stored.shape}",
            key=TRAINING_KEY, fix='save it as np.array(["task.some.key=value", ...], dtype=str)',
        )
    overrides = tuple(str(item) for item in stored)
    malformed = malformed_overrides(overrides)
    if malformed:
        raise _motion_error(
            f"{path}: {TRAINING_KEY} entries must read KEY=VALUE, as --set does: "
            f"{', '.join(map(repr, malformed))}",
            key=TRAINING_KEY,
            fix="fix the motion source's `training:` list and regenerate the file",
        )
    return overrides


_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


def _check_archive(path: Path) -> None:
    """Refuse, before decoding anything, a file that is no .npz or would decode past the budget
    (``limits``).

    Reads only the zip directory and each member's .npy header: a zip bomb
    declares its sizes there, and no array is allocated before they fit.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_NPY_MAGIC))
    except OSError as exc:
        raise _motion_error(
            f"{path}: cannot be read ({exc})", fix="check the file's permissions"
        ) from None
    if head.startswith(_NPY_MAGIC):
        raise _motion_error(
            f"{path}: holds a single array (an .npy file), not an .npz archive of keys",
            fix="save every key of docs/motions.md with np.savez",
        )
    if not head.startswith(_ZIP_MAGIC):
        raise _motion_error(
            f"{path}: not an .npz file (no zip header)",
            fix="the file is truncated or not an npz; regenerate it"
        )
    total = 0
    frames = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                total += info.file_size  # what the member declares it decompresses to
                if info.file_size > MAX_DECODED_BYTES:
                    break
                with archive.open(info) as member:
                    try:
                        version = np.lib.format.read_magic(member)
                        header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                  else np.lib.format.read_array_header_2_0)
                        shape, _, dtype = header(member)
                    except ValueError:
                        continue  # not an array: load_motion names the key if it matters
                declared = int(np.prod(shape, dtype=np.float64) * max(dtype.itemsize, 1))
                if declared > info.file_size:
                    raise _motion_error(
                        f"{path}: key {info.filename.removesuffix('.npy')!r} declares shape "
                        f"{shape} "
                        f"({declared:,} bytes) in a {info.file_size:,}-byte entry",
                        key=info.filename.removesuffix(".npy"),
                        fix="the file is corrupt; regenerate it",
                    )
                if shape and info.filename.removesuffix(".npy") in ARRAY_KEYS:
                    frames = max(frames, int(shape[0]))
    except MotionError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
    ) as exc:
        raise _motion_error(
            f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})",
            fix="the file is truncated or not an npz; regenerate it",
        ) from None
    problem = over_budget(f"{path}: its arrays", total, MAX_DECODED_BYTES) or over_budget(
        f"{path}: the motion", frames, MAX_MOTION_FRAMES, "frames")
    if problem:
        raise _motion_error(problem,
                            fix="split the motion into shorter clips; a file this size is refused "
                                "unread")


def save_motion(motion: Motion, path: str | Path) -> None:
    """Write ``motion`` atomically in the docs/architecture.md §2 layout (float32 arrays, like
    mjlab's tools).

    The archive is byte-for-byte reproducible: entries are stored uncompressed,
    in a fixed order, with a fixed timestamp (``np.savez`` stamps the current
    time, so regenerating a shipped motion would change its hash).
    """
    payload: dict[str, np.ndarray] = {"fps": np.array([motion.fps], dtype=np.float64)}
    payload.update(
        {key: np.asarray(value, dtype=np.float32) for key, value in motion.arrays().items()}
    )
    if motion.joint_names is not None:
        payload["joint_names"] = np.array(motion.joint_names, dtype=str)
    if motion.body_names is not None:
        payload["body_names"] = np.array(motion.body_names, dtype=str)
    if motion.training_overrides:
        payload[TRAINING_KEY] = np.array(motion.training_overrides, dtype=str)
    with atomic_path(path, suffix=".npz") as tmp:
        write_npz(tmp, payload)


_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """An ``.npz`` that ``np.load`` reads like ``np.savez``'s, but deterministic (no timestamps, no
    pickle)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(value), allow_pickle=False)
            archive.writestr(info, buffer.getvalue())
