"""Foot contact from height and speed, and foot-skate removal while a foot is in contact.

A foot is in contact where it is near its resting height (its lowest level in the clip) and
moves slowly horizontally; runs shorter than a few frames are noise and are merged away. While in
contact a foot must not slide: ``lock_contacts`` holds it at one place per contact phase (the
phase's median), blending in and out over a few frames so that nothing jumps. ``skate`` measures
what is left: per contact phase, how far the foot moves horizontally from where it landed.
"""

from __future__ import annotations

import numpy as np

from ..frame_runs import runs

CONTACT_HEIGHT = 0.03
"""m (in the person's size) above the foot's resting level that still counts as on the floor."""
CONTACT_SPEED = 0.35
"""m/s (the person's): a foot moving faster horizontally is swinging, not planted."""
MIN_RUN_S = 0.08
"""Contact or swing runs shorter than this are merged into their neighbours."""
BLEND_S = 0.1
"""Each lock blends in over this long before touchdown and out after lift-off."""


def _merge_short(flags: np.ndarray, shortest: int) -> np.ndarray:
    """Fill gaps, then drop runs, shorter than ``shortest`` frames."""
    out = np.asarray(flags, bool).copy()
    for value in (False, True):
        for start, end in runs(out == value):
            if end - start < shortest and start > 0 and end < len(out):
                out[start:end] = not value
    for start, end in runs(out):
        if end - start < shortest:
            out[start:end] = False
    return out


def detect_contacts(heights: np.ndarray, speeds: np.ndarray, fps: float, *,
                    height_tol: float = CONTACT_HEIGHT,
                    speed_tol: float = CONTACT_SPEED) -> np.ndarray:
    """[T] bool: the foot rests on the floor (``heights`` above its resting level, horizontal
    ``speeds``)."""
    raw = (np.asarray(heights) < height_tol) & (np.asarray(speeds) < speed_tol)
    return _merge_short(raw, max(2, int(round(MIN_RUN_S * fps))))


def horizontal_speed(track: np.ndarray, fps: float) -> np.ndarray:
    """[T] m/s of a [T, 3] track in x and y."""
    return np.linalg.norm(np.gradient(track[:, :2], 1.0 / fps, axis=0), axis=-1)


def lock_contacts(track: np.ndarray, contact: np.ndarray, fps: float, *,
                  rest_z: float | None = None) -> np.ndarray:
    """``track`` [T, 3] held still while in ``contact``: x and y at each contact phase's median, z
    at ``rest_z`` (left alone when None); blended in over ``BLEND_S`` before touchdown and out over
    ``BLEND_S`` after lift-off, so the held track never jumps."""
    out = np.array(track, dtype=float)
    frames = len(out)
    axes = 3 if rest_z is not None else 2
    blend = max(1, int(round(BLEND_S * fps)))
    held = np.zeros((frames, axes))
    weight = np.zeros(frames)
    for start, end in runs(contact):
        value = np.median(track[start:end, :axes], axis=0)
        if rest_z is not None:
            value[2] = rest_z
        ramp = np.zeros(frames)
        ramp[start:end] = 1.0
        before = np.arange(max(0, start - blend), start)
        after = np.arange(end, min(frames, end + blend))
        ramp[before] = (before - (start - blend - 1)) / (blend + 1)
        ramp[after] = ((end + blend) - after) / (blend + 1)
        take = ramp > weight  # where two phases' ramps overlap, the nearer phase wins
        held[take] = value
        weight[take] = ramp[take]
    s = weight[:, None]
    out[:, :axes] = (1.0 - s) * out[:, :axes] + s * held
    return out


def skate(track: np.ndarray, contact: np.ndarray) -> np.ndarray:
    """Per contact phase, the largest horizontal distance (m) of ``track`` [T, 3] from where it
    landed."""
    return np.array([
        float(np.linalg.norm(track[start:end, :2] - track[start, :2], axis=-1).max())
        for start, end in runs(contact)
    ])
