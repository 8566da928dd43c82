"""One resource budget for untrusted files: what a motion, CSV or ONNX file may make primebot
allocate.

Files come from users and from the internet. A 1 MB zip can declare
gigabytes of arrays, a CSV can hold millions of rows, and ``resample --fps
1e7`` asks for millions of frames. Every reader checks the size it is about
to allocate against these limits *before* allocating it, and refuses with
the error type of its file (``MotionError``, ``ExportError``) naming the
file and the limit. The limits are far above any real motion (an hour of
a 30-body humanoid at 50 fps).
"""

from __future__ import annotations

MAX_DECODED_BYTES = 256 << 20
"""Bytes of array data one motion file may decode to (float32 on disk; an hour of q1 is ~110
MiB)."""
MAX_MOTION_FRAMES = 180_000
"""Frames of one motion (an hour at 50 fps); also caps what resample and convert may produce."""
MAX_TEXT_BYTES = 256 << 20
"""Bytes of a CSV read into memory."""
MAX_ONNX_BYTES = 512 << 20
"""Bytes of an ONNX policy file handed to sim2sim."""
MAX_CHECKPOINT_BYTES = 4 << 30
"""Bytes a checkpoint may declare (torch.save stores entries uncompressed; 1024 envs x 8 ranks is
~100 MiB)."""


def mib(nbytes: float) -> str:
    """``nbytes`` for a message: ``12.3 MiB``."""
    return f"{nbytes / (1 << 20):.1f} MiB"


def over_budget(what: str, amount: float, limit: float, unit: str = "bytes") -> str | None:
    """A sentence saying ``what`` exceeds ``limit``, or None when it fits (callers raise their own
    error type)."""
    if amount <= limit:
        return None
    if unit == "bytes":
        return (
            f"{what} would take {mib(amount)}, over primebot's limit of {mib(limit)} for an "
            "untrusted file"
        )
    return f"{what} would be {amount:,.0f} {unit}, over primebot's limit of {limit:,.0f}"
