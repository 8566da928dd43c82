"""The robot model as the tracking task needs it: the MJCF plus self-collision sensors, and its
indices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from primebot.pipeline.api import (
    ConfigError,
    RobotError,
    RobotIndices,
    RobotSpec,
    apply_spec_actuators,
    check_robot_model,
    compile_mjcf,
    robot_indices,
)

SELF_COLLISION_SENSOR_PREFIX = "primebot_self_collision"
_FOUND = 1  # contact sensor data bit: number of matching contacts


@dataclass(frozen=True)
class TrackingModel:
    """A compiled robot model with everything the tracking task indexes."""

    model: mujoco.MjModel
    indices: RobotIndices
    body_ids: np.ndarray
    """[B'] MuJoCo body ids the task tracks: the spec's tracked bodies, then end effectors not among
    them."""
    num_tracked: int
    """The first ``num_tracked`` of ``body_ids`` are the tracked bodies the rewards average over."""
    end_effector_index: np.ndarray
    """Positions of the end-effector bodies within ``body_ids``."""
    self_collision_adr: np.ndarray
    """sensordata columns whose sum is the number of robot-robot contacts."""
    soft_joint_pos_limits: np.ndarray
    """[J, 2] joint range shrunk about its middle by the soft-limit factor."""

    # The free root joint's columns: qpos holds (pos, quat), qvel (linear, angular).
    @property
    def root_pos_qpos(self) -> slice:
        """qpos columns of the root position (world)."""
        return slice(self.indices.root_qpos_adr, self.indices.root_qpos_adr + 3)

    @property
    def root_quat_qpos(self) -> slice:
        """qpos columns of the root quaternion (w x y z)."""
        return slice(self.indices.root_qpos_adr + 3, self.indices.root_qpos_adr + 7)

    @property
    def root_lin_vel_qvel(self) -> slice:
        """qvel columns of the root linear velocity (world frame)."""
        return slice(self.indices.root_dof_adr, self.indices.root_dof_adr + 3)

    @property
    def root_ang_vel_qvel(self) -> slice:
        """qvel columns of the root angular velocity (body frame)."""
        return slice(self.indices.root_dof_adr + 3, self.indices.root_dof_adr + 6)


def _add_self_collision_sensors(spec: mujoco.MjSpec, robot: RobotSpec, root_body: str) -> None:
    """One contact sensor ('found') per self-collision geom pair, or one for the whole robot
    subtree."""
    if robot.self_collision_geoms:
        pairs = [(mujoco.mjtObj.mjOBJ_GEOM, a, b) for a, b in robot.self_collision_geoms]
    else:  # any contact between two geoms of the robot's tree
        pairs = [(mujoco.mjtObj.mjOBJ_XBODY, root_body, root_body)]
    for k, (objtype, a, b) in enumerate(pairs):
        spec.add_sensor(
            name=f"{SELF_COLLISION_SENSOR_PREFIX}_{k}",
            type=mujoco.mjtSensor.mjSENS_CONTACT,
            objtype=objtype,
            objname=a,
            reftype=objtype,
            refname=b,
            intprm=[_FOUND, 0, 1],
        )


def physics_step(value: Any) -> float:
    """``physics_dt`` as seconds: a positive, finite number (a typed error otherwise)."""
    try:
        dt = float(value)
    except (TypeError, ValueError):
        dt = float("nan")
    if not (np.isfinite(dt) and 0.0 < dt <= 0.05):
        raise ConfigError(f"task.physics_dt must be a step in seconds in (0, 0.05], got {value!r}",
                          fix="--set task.physics_dt=0.01 --set task.decimation=2 (100 Hz physics, "
                              "50 Hz control), or null for the MJCF's own step")
    return dt


def build_tracking_model(robot: RobotSpec, soft_limit_factor: float = 0.9,
                         physics_dt: Any = None) -> TrackingModel:
    """Compile ``robot.mjcf`` with self-collision sensors added, check it and apply the spec's PD
    gains; ``physics_dt`` (seconds; None: the MJCF's) replaces the physics step."""
    plain = compile_mjcf(robot.mjcf, robot.name)  # typed errors for a missing or broken file
    check_robot_model(plain, robot)
    root = robot.root_body or mujoco.mj_id2name(
        plain, mujoco.mjtObj.mjOBJ_BODY, robot_indices(plain, robot).root_body_id
    )
    spec = mujoco.MjSpec.from_file(str(robot.mjcf))
    _add_self_collision_sensors(spec, robot, root)
    try:
        model = spec.compile()
    except ValueError as exc:
        raise RobotError(
            f"robot {robot.name!r}: adding self-collision sensors failed: {exc}"
        ) from exc
    indices = robot_indices(model, robot)
    apply_spec_actuators(model, robot, indices)
    if physics_dt is not None:
        model.opt.timestep = physics_step(physics_dt)

    tracked = [int(b) for b in indices.tracked_body_ids]
    extra = [int(b) for b in indices.end_effector_body_ids if int(b) not in tracked]
    body_ids = np.array(tracked + extra, dtype=np.int64)
    ee_index = np.array(
        [list(body_ids).index(int(b)) for b in indices.end_effector_body_ids], dtype=np.int64
    )

    sensors = [
        s
        for s in range(model.nsensor)
        if (model.sensor(s).name or "").startswith(SELF_COLLISION_SENSOR_PREFIX)
    ]
    adr = np.array([model.sensor_adr[s] for s in sensors], dtype=np.int64)

    lo, hi = indices.joint_range[:, 0], indices.joint_range[:, 1]
    middle, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * soft_limit_factor
    soft = np.stack((middle - half, middle + half), axis=-1)
    return TrackingModel(model, indices, body_ids, len(tracked), ee_index, adr, soft)
