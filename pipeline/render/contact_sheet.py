"""Contact sheets: a few stills per motion or policy in one PNG, to see at a glance what each one
does.

A row per item (a motion's replay, a policy's sim2sim video), a few frames
evenly spread over it, the row's label above it (the motion, and for a
policy its verdict). Stills come from a rendered video (``video_stills``) or
straight from a motion (``motion_stills``). Matplotlib composes the sheet,
so it needs no OpenGL once the stills exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..atomic import atomic_path


def _spread(count: int, total: int) -> list[int]:
    """``count`` indices evenly spread over ``total`` items, first and last included."""
    if total <= 0:
        return []
    return sorted({int(round(i)) for i in np.linspace(0, total - 1, max(1, min(count, total)))})


def video_stills(path: str | Path, count: int = 5) -> list[np.ndarray]:
    """``count`` RGB frames evenly spread over the video at ``path`` (empty if it cannot be
    read)."""
    import imageio_ffmpeg

    try:
        reader = imageio_ffmpeg.read_frames(str(path))
        meta = next(reader)
        width, height = meta["size"]
        frames = [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader]
    except (OSError, RuntimeError, StopIteration):
        return []
    return [frames[i] for i in _spread(count, len(frames))]


def motion_stills(motion, spec, count: int = 5, *, width: int = 320,
                  height: int = 240) -> list[np.ndarray]:
    """``count`` replay frames of ``motion`` on ``spec``'s robot, evenly spread (needs OpenGL)."""
    from ..motion.replay import MotionRenderer
    from ..robot.model import load_robot_model, robot_indices

    model = load_robot_model(spec)
    renderer = MotionRenderer(model, robot_indices(model, spec), width, height)
    keep = set(_spread(count, motion.num_frames))
    try:
        return [frame.copy() for frame in renderer.frames(motion, only=keep)]
    finally:
        renderer.close()


def write_contact_sheet(rows: Sequence[tuple[str, Sequence[np.ndarray]]], output: str | Path,
                        *, title: str = "") -> Path:
    """One PNG: a row of stills per ``(label, stills)``, the label above the row; written
    atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = max((len(stills) for _, stills in rows), default=1) or 1
    fig, axes = plt.subplots(len(rows), columns,
                             figsize=(3.2 * columns, 2.75 * len(rows) + (0.8 if title else 0.1)),
                             squeeze=False)
    for r, (label, stills) in enumerate(rows):
        for c in range(columns):
            ax = axes[r][c]
            ax.axis("off")
            if c < len(stills):
                ax.imshow(stills[c])
            elif c == 0:
                ax.text(0.5, 0.5, "no video", ha="center", va="center", transform=ax.transAxes)
        axes[r][0].set_title(label, loc="left", fontsize=10, fontweight="bold")
    if title:
        fig.suptitle(title, fontsize=11, y=1 - 0.12 / fig.get_figheight())
    fig.subplots_adjust(left=0.005, right=0.995, bottom=0.005,
                        top=1 - (0.75 if title else 0.35) / fig.get_figheight(),
                        wspace=0.02, hspace=0.18)
    with atomic_path(output, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=72)
    plt.close(fig)
    return Path(output)
