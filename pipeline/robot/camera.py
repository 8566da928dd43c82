"""The camera that frames a robot in videos: a fixed distance and angle, scaled to its standing
height."""

from __future__ import annotations

from dataclasses import dataclass, replace

import mujoco

from .kinematics import standing_height

DISTANCE_PER_HEIGHT = 2.5
"""Camera distance over the robot's standing height: the whole robot with room for arms and steps
(MuJoCo's 45° field of view shows ±1.04 robot heights at that distance)."""


LOOKAT_PER_HEIGHT = 0.51
"""Look-at height over the robot's standing height (about its centre)."""


@dataclass
class CameraConfig:
    """A camera that trails the robot's root at a fixed distance and angle.

    ``distance`` and ``height`` left at None are framed from the robot's standing
    height (``framed``): 2.2 m and 0.45 m for the 0.88 m q1, 3.2 m and 0.66 m for a 1.29 m G1.
    """

    distance: float | None = None
    """m; None: ``DISTANCE_PER_HEIGHT`` × the robot's height."""
    azimuth: float = 135.0
    """Degrees; 180 looks at the robot's front when it faces +x."""
    elevation: float = -15.0
    height: float | None = None
    """Look-at height above the floor, m; None: ``LOOKAT_PER_HEIGHT`` × the robot's height."""
    smoothing: float = 0.15
    """Share of the way the look-at point moves toward the root each frame (1 = rigid)."""
    shadows: bool = False
    """Shadows and reflections triple the cost of a frame on software (Mesa) OpenGL."""

    def framed(self, model: mujoco.MjModel) -> CameraConfig:
        """This camera with ``distance``/``height`` set from ``model``'s standing height where
        None."""
        if self.distance is not None and self.height is not None:
            return self
        robot_height = standing_height(model)
        return replace(
            self,
            distance=DISTANCE_PER_HEIGHT * robot_height if self.distance is None else self.distance,
            height=LOOKAT_PER_HEIGHT * robot_height if self.height is None else self.height,
        )
