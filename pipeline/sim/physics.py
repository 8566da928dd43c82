"""The vectorised physics engine: N copies of one MuJoCo model on C threads.

``BatchSim`` wraps ``mujoco.batch.Batch`` for the tasks. One call to ``step``
advances every environment by ``decimation`` physics substeps on the batch's
C threads (the GIL is released). With ``observe_stage=STAGE_VEL`` (the
default) it then makes the position- and velocity-dependent fields (``xpos``,
``xquat``, ``cvel``, ``subtree_com``, position/velocity sensors) describe the
new state; with ``STAGE_NONE`` they are the ones ``mj_step`` computed at the
start of its last substep, which is cheaper. Arrays are live views bound once:

    sim = BatchSim(model, num_envs=1024, decimation=4)
    qpos, ctrl, xpos = sim.qpos, sim.ctrl, sim.bind("xpos")
    ctrl[:] = targets
    faults = sim.step()          # bool [N]: envs whose physics broke this step
    sim.reset(np.flatnonzero(faults), qpos=q0[faults], qvel=v0[faults])

Physics faults are never raised: an env whose state turned NaN/Inf, that
MuJoCo reset itself after an instability warning (bad qpos/qvel/qacc), or in
which MuJoCo raised an error is flagged in the returned mask, and the caller
resets it. (The batch does not expose MuJoCo's warning counters, so warnings
that leave the state alone, such as a full contact buffer, are not seen; the
instability warnings are, through the reset MuJoCo makes after them.)

Results are bit-identical for any thread count (the batch runs each
simulation on its own data), so a seed fixes a rollout.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from mujoco.batch import Batch, SimulationError

STAGE_NONE = int(mujoco.mjtStage.mjSTAGE_NONE)
STAGE_POS = int(mujoco.mjtStage.mjSTAGE_POS)
STAGE_VEL = int(mujoco.mjtStage.mjSTAGE_VEL)
STAGE_ACC = int(mujoco.mjtStage.mjSTAGE_ACC)


def available_cores() -> int:
    """CPU cores this process may run on (the default thread count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class BatchSim:
    """``num_envs`` simulations of ``model`` stepped together on ``num_threads`` C threads.

    Attributes ``qpos`` [N, nq], ``qvel`` [N, nv], ``ctrl`` [N, nu],
    ``qfrc_applied`` [N, nv] and ``xfrc_applied`` [N, nbody, 6] are writable
    live views of the state (float64); a write takes effect at the next call.
    ``bind(name)`` gives any other MjData output (``xpos``, ``xquat``,
    ``cvel``, ``subtree_com``, ``sensordata``...) as a read-only live
    [N, ...] array refreshed by every call. Bind only what you read: each bound
    output is copied out after every call.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        *,
        num_threads: int | None = None,
        decimation: int = 1,
        observe_stage: int = STAGE_VEL,
        persistent: bool = True,
    ) -> None:
        """Build the batch.

        Args:
            model: the compiled model every env copies.
            num_envs: any positive number of environments.
            num_threads: C threads; ``None`` uses every available core.
            decimation: physics substeps per ``step`` (control period = decimation · timestep).
            observe_stage: forward stage computed at the new state after each step
                (``STAGE_VEL``: kinematics, com velocities, contacts, pos/vel sensors).
                ``STAGE_NONE`` skips it: derived fields are then those mj_step
                computed at the start of its last substep (one substep old), as
                with plain MuJoCo, and the step is cheaper (no extra pass, and
                a non-persistent batch keeps its working data in cache).
            persistent: keep one MjData per env. With ``observe_stage`` above
                none, the next step then continues from those stages instead of
                recomputing them, so fresh observations cost nothing extra.
        """
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if decimation < 1:
            raise ValueError(f"decimation must be at least 1, got {decimation}")
        self.model = model
        self.num_envs = int(num_envs)
        self.num_threads = int(num_threads or available_cores())
        self.decimation = int(decimation)
        self.observe_stage = int(observe_stage)
        self.batch = Batch(model, self.num_envs, self.num_threads, persistent=persistent)
        self.persistent = bool(persistent)
        # A non-persistent env is nothing but its state row, so a reset is a
        # copy of the row MuJoCo's own reset produces (mj_resetData costs ~30 us
        # per env); a persistent env also has its own MjData to reset.
        self.batch.reset(np.array([0]), stage=STAGE_NONE)
        self._reset_row = self.batch.state[0].copy()
        self.qpos = self.batch.bind("qpos")
        self.qvel = self.batch.bind("qvel")
        self.ctrl = self.batch.bind("ctrl")
        self.qfrc_applied = self.batch.bind("qfrc_applied")
        self.xfrc_applied = self.batch.bind("xfrc_applied")
        self.time = self.batch.bind("time")
        self.total_faults = 0
        """Environments flagged as faulty since construction."""
        self.last_errors: dict[int, str] = {}
        """MuJoCo error messages of the last call that raised, by env."""

    # -- sizes and times -------------------------------------------------------
    @property
    def physics_dt(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def control_dt(self) -> float:
        """Simulated seconds per ``step``."""
        return self.physics_dt * self.decimation

    # -- fields -----------------------------------------------------------------
    def bind(self, name: str) -> np.ndarray:
        """The live [N, ...] array of MjData field ``name`` (see ``mujoco.batch.DATA_FIELDS``)."""
        return self.batch.bind(name)

    def expand(self, name: str) -> np.ndarray:
        """Give model field ``name`` per-env values (e.g. ``geom_friction``, ``body_mass``);
        writable [N, ...].

        Call ``set_const()`` after writing a field that ``mj_setConst`` reads (masses, inertias).
        """
        return self.batch.expand(name)

    def set_const(self, ids: np.ndarray | None = None) -> None:
        """Recompute the model constants derived from expanded fields (``mj_setConst``)."""
        self.batch.set_const(ids)

    # -- calls --------------------------------------------------------------------
    def step(self, ids: np.ndarray | None = None) -> np.ndarray:
        """Advance every env (or only envs ``ids``, sorted unique ints) by ``decimation`` substeps
        with the current ``ctrl``.

        Returns:
            bool [N]: envs with a physics fault in this step (never one not stepped). Their state is
            whatever MuJoCo left (possibly its reset defaults); reset them.
        """
        time_before = self.time.copy()
        raised = self._call(self.batch.step, ids, nstep=self.decimation, stage=self.observe_stage)
        # MuJoCo answers a diverging state (bad qpos/qvel/qacc) with a warning and
        # mj_resetData, which the batch does not report: the env's clock going back
        # is the trace it leaves. NaN/Inf that slipped through is the other.
        faults = self.time < time_before + (self.decimation - 0.5) * self.physics_dt
        faults |= ~np.isfinite(self.qpos).all(axis=1)
        faults |= ~np.isfinite(self.qvel).all(axis=1)
        if raised is not None:
            faults[raised] = True
        if ids is not None:
            stepped = np.zeros(self.num_envs, bool)
            stepped[ids] = True
            faults &= stepped
        self.total_faults += int(faults.sum())
        return faults

    def forward(self, ids: np.ndarray | None = None, stage: int | None = None) -> None:
        """Recompute derived fields of ``ids`` (all when ``None``) from their state.

        ``stage`` defaults to ``observe_stage``, but at least ``STAGE_VEL`` so
        that poses, velocities and position sensors describe the current state.
        """
        if stage is None:
            stage = max(self.observe_stage, STAGE_VEL)
        self._call(self.batch.forward, ids, stage=stage)

    def reset(
        self,
        ids: np.ndarray | None = None,
        qpos: np.ndarray | None = None,
        qvel: np.ndarray | None = None,
        ctrl: np.ndarray | None = None,
    ) -> None:
        """Reset envs ``ids`` (sorted unique ints, or ``None`` for all) to the given state.

        Everything else (time, warm start, activations, applied forces, warning
        counters) returns to the model's defaults; ``qpos``/``qvel``/``ctrl``
        default to the model's ``qpos0``/zeros/zeros. The env's clock ``time``
        restarts at one physics timestep, not zero, so that a reset MuJoCo makes
        on its own in the first substep is still seen. Derived fields are then
        recomputed for those envs.
        """
        if ids is not None:
            ids = np.asarray(ids, dtype=np.int64)
            if ids.size == 0:
                return
        rows = slice(None) if ids is None else ids
        if self.persistent:
            self.batch.reset(ids, stage=STAGE_NONE)
        else:
            self.batch.state[rows] = self._reset_row
        if qpos is not None:
            self.qpos[rows] = qpos
        if qvel is not None:
            self.qvel[rows] = qvel
        if ctrl is not None:
            self.ctrl[rows] = ctrl
        # A clock at zero could not show a MuJoCo reset in the first substep (see step).
        self.time[rows] = self.physics_dt
        self.forward(ids)

    def close(self) -> None:
        """Drop the batch (its threads and per-env data)."""
        self.batch = None  # type: ignore[assignment]

    # -- faults -------------------------------------------------------------------
    def _call(self, method, ids, **kwargs) -> np.ndarray | None:
        """Run a batch call; return the ids MuJoCo raised in (they kept their previous state)."""
        try:
            method(ids, **kwargs)
        except SimulationError as exc:
            self.last_errors = {int(i): self.batch.error(int(i)) for i in exc.ids[:8]}
            return np.asarray(exc.ids)
        return None
