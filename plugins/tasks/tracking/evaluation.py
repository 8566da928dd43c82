"""How motion-tracking evaluation reads the tracking env (the ``evaluation_view`` of the tracking
TaskSpec).

``primebot eval`` and training's verdict probe score episodes with the
core's metrics (``evaluate.metrics``, the same numbers sim2sim computes);
what they need of this task's environment (robot and reference snapshots,
each env's reference step, the tracked bodies, the ghost video) is read
here, so the core names none of ``TrackingEnv``'s attributes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from primebot.pipeline.api import TrackingSnapshot, TrackingView


def env_snapshot(env: Any, rows: np.ndarray) -> TrackingSnapshot:
    """Robot and reference of envs ``rows`` from the tracking env's state (copies)."""
    s, tm, ref = env.state, env.model_info, env.reference
    k, ee = tm.num_tracked, tm.end_effector_index
    root = slice(tm.indices.root_qpos_adr, tm.indices.root_qpos_adr + 3)
    t = s.time_steps[rows]
    return TrackingSnapshot(
        joint_pos=s.joint_pos[rows].copy(), joint_vel=s.joint_vel[rows].copy(),
        body_pos_w=s.all_body_pos_w[rows, :k].copy(), root_pos_w=env.sim.qpos[rows, root].copy(),
        ee_pos_w=s.all_body_pos_w[rows][:, ee].copy(), anchor_pos_w=s.anchor_pos_w[rows].copy(),
        anchor_quat_w=s.anchor_quat_w[rows].copy(),
        ref_joint_pos=s.ref_joint_pos[rows].copy(), ref_joint_vel=s.ref_joint_vel[rows].copy(),
        ref_body_pos_w=s.all_ref_body_pos_w[rows, :k].copy(),
        ref_root_pos_w=ref.root_pos_w[t].copy(),
        ref_ee_pos_w=s.all_ref_body_pos_w[rows][:, ee].copy(),
        ref_anchor_pos_w=s.ref_anchor_pos_w[rows].copy(),
        ref_anchor_quat_w=s.ref_anchor_quat_w[rows].copy(),
    )


def tracked_body_names(env: Any) -> tuple[str, ...]:
    """Names of the tracking env's tracked bodies, in the order of the metrics' body axis."""
    tm = env.model_info
    return tuple(tm.indices.body_names[int(b) - 1] for b in tm.body_ids[: tm.num_tracked])


def render_video(env: Any, qpos: list, steps: list, path: Path, title: str = "eval"
                 ) -> Path | None:
    """The robot at ``qpos`` with the reference at ``steps`` as a ghost (``render.ghost``),
    ``title`` in the caption; None without OpenGL."""
    from primebot.pipeline.api import reference_ghosts, render_ghost_video

    ref, idx = env.reference, env.model_info.indices
    ghosts = reference_ghosts(qpos, steps, idx, ref.root_pos_w, ref.root_quat_w, ref.joint_pos)
    return render_ghost_video(env.model_info.model, qpos, ghosts, idx.root_body_id, path,
                              1.0 / env.step_dt,
                              title=title)


def tracking_view(env: Any) -> TrackingView:
    """The tracking env as motion-tracking evaluation reads it."""
    return TrackingView(
        env=env,
        snapshot=lambda rows: env_snapshot(env, rows),
        reference_steps=lambda: env.time_steps,
        episode_steps=lambda: env.episode_length,
        reference_body_pos=env.reference.body_pos_w[:, : env.model_info.num_tracked],
        body_names=tracked_body_names(env),
        render=lambda qpos, steps, path, title="eval": render_video(env, qpos, steps, path, title),
        push_sides=None if env.pusher is None else (lambda: env.pusher.side),
    )
