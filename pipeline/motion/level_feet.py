"""Planted feet stay flat on the floor: each one's two lowest joints turn its sole level.

An authored pose fixes the hips and knees; where the body also yaws over a
leg whose thigh is not vertical (turning on one foot, with its hip rolled to
carry the weight), the hip's yaw tips the foot as well: 9° in an early turn,
enough that only an edge of the sole touched and no policy could balance on
it. ``motion author`` therefore levels every planted foot (docs/motions.md,
"Authoring motions from keyframes"): it solves the foot's two nearest hinge
joints (the ankle pitch and roll) so that the sole is as level as it is in the
robot's default pose on a level root. Feet that already are (symmetric poses) are unchanged.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..robot.kinematics import set_qpos
from ..robot.model import RobotIndices

ANKLE_JOINTS = 2
"""Hinge joints nearest each foot that level it (pitch and roll)."""
ITERATIONS = 6
STEP = 1e-5
"""rad: finite-difference step of the Jacobian."""


class FootLeveller:
    """Levels planted feet of one robot model, one pose at a time."""

    def __init__(self, model: mujoco.MjModel, indices: RobotIndices,
                 default_joint_pos: np.ndarray) -> None:
        self.model, self.indices = model, indices
        self.data = mujoco.MjData(model)
        self.lo, self.hi = indices.joint_range.T
        column = {int(j): k for k, j in enumerate(indices.joint_ids)}
        self.ankles = [self._nearest_hinges(int(foot), column) for foot in indices.feet_body_ids]
        # The world's up axis in each foot's frame in the default pose on a level root: "level" for
        # that sole.
        self._pose(np.array([1.0, 0.0, 0.0, 0.0]), default_joint_pos)
        self.sole_up = [self.data.xmat[int(foot)].reshape(3, 3).T[:, 2].copy()
                        for foot in indices.feet_body_ids]

    def _nearest_hinges(self, body: int, column: dict[int, int]) -> list[int]:
        """Columns (in the spec's joint order) of the ``ANKLE_JOINTS`` hinges nearest ``body`` up
        its chain."""
        found: list[int] = []
        while body > 0 and len(found) < ANKLE_JOINTS:
            first, count = self.model.body_jntadr[body], self.model.body_jntnum[body]
            for j in range(first + count - 1, first - 1, -1):
                if self.model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE and j in column:
                    found.append(column[j])
            body = int(self.model.body_parentid[body])
        return found[:ANKLE_JOINTS]

    def _pose(self, root_quat: np.ndarray, joint_pos: np.ndarray) -> None:
        set_qpos(self.data.qpos, self.indices, np.zeros(3), root_quat, joint_pos)
        mujoco.mj_kinematics(self.model, self.data)

    def _tilt(self, foot: int, root_quat: np.ndarray, joint_pos: np.ndarray) -> np.ndarray:
        """The horizontal part of the sole's "up" in the world: zero when the foot is level."""
        self._pose(root_quat, joint_pos)
        body = int(self.indices.feet_body_ids[foot])
        return (self.data.xmat[body].reshape(3, 3) @ self.sole_up[foot])[:2]

    def level(self, root_quat: np.ndarray, joint_pos: np.ndarray, feet: list[int]) -> np.ndarray:
        """``joint_pos`` [J] with the ankles of ``feet`` (indices into the spec's feet) turned
        level."""
        q = np.array(joint_pos, dtype=float)
        for foot in feet:
            columns = self.ankles[foot]
            if len(columns) < ANKLE_JOINTS:
                # a foot without two hinges of its own cannot be levelled; leave it as authored
                continue
            for _ in range(ITERATIONS):
                tilt = self._tilt(foot, root_quat, q)
                if np.abs(tilt).max() < 1e-9:
                    break
                jac = np.empty((2, ANKLE_JOINTS))
                for k, c in enumerate(columns):
                    probe = q.copy()
                    probe[c] += STEP
                    jac[:, k] = (self._tilt(foot, root_quat, probe) - tilt) / STEP
                q[columns] -= np.linalg.lstsq(jac, tilt, rcond=None)[0]
                q[columns] = np.clip(q[columns], self.lo[columns], self.hi[columns])
        return q
