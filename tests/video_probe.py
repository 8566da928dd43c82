"""What a written video is: codec, size, fps, frame count (tests' shared helper)."""

from __future__ import annotations

import re
import subprocess

import imageio_ffmpeg


def probe(path) -> dict:
    """Codec, size and fps from ffmpeg's stream line; frame count by decoding."""
    result = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
        capture_output=True,
        text=True,
    )
    stream = next(line for line in result.stderr.splitlines() if "Video:" in line)
    codec = re.search(r"Video: (\w+)", stream).group(1)
    width, height = map(int, re.search(r", (\d+)x(\d+)", stream).groups())
    fps = float(re.search(r"([\d.]+) fps", stream).group(1))
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    return {
        "codec": codec,
        "size": (width, height),
        "fps": fps,
        "frames": frames,
        "pix_fmt": "yuv420p" in stream,
    }
