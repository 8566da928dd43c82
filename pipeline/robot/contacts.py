"""Which geoms of a model take part in contacts, and which two can touch.

MuJoCo makes a contact between two geoms when their contact bits allow it
(``contype`` of one and ``conaffinity`` of the other share a bit) or when an
explicit ``<contact><pair>`` names them: the Menagerie's Apollo, for one,
turns every geom's bits off and lists its contacts as pairs in a scene file.
Floor contact, a robot's height and the feet's support (robot/kinematics.py,
robot/stance.py) and the floor requirement (robot/model_checks.py) all read this.
"""

from __future__ import annotations

import mujoco
import numpy as np


def pair_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Boolean mask of the geoms an explicit ``<pair>`` names."""
    mask = np.zeros(model.ngeom, dtype=bool)
    mask[model.pair_geom1] = True
    mask[model.pair_geom2] = True
    return mask


def collision_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Geoms that take part in contacts (contype or conaffinity set, or named by a pair), as a
    boolean mask."""
    return (model.geom_contype != 0) | (model.geom_conaffinity != 0) | pair_geoms(model)


def can_touch(model: mujoco.MjModel, a: int, b: int) -> bool:
    """Whether geoms ``a`` and ``b`` can make a contact: an explicit pair, or their contact bits."""
    pairs = {frozenset(p)
             for p in zip(model.pair_geom1.tolist(), model.pair_geom2.tolist(), strict=True)}
    if frozenset((a, b)) in pairs:
        return True
    return bool((model.geom_contype[a] & model.geom_conaffinity[b])
                or (model.geom_contype[b] & model.geom_conaffinity[a]))


def floor_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Indices of the planes on the world body (the floor)."""
    return np.flatnonzero(
        (model.geom_bodyid == 0) & (model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)
    )
