"""BatchSim: the vectorised engine against plain MuJoCo, thread counts, resets and faults."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from primebot.pipeline.sim.physics import BatchSim

# A small floating body with two actuated hinges that hits the floor: enough
# for contacts, position actuators and a free joint.
WALKER_XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="torso" pos="0 0 0.6">
      <freejoint/>
      <geom type="capsule" size=".08 .15"/>
      <body name="leg_l" pos="0 0.1 -0.15">
        <joint name="hip_l" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.35" size=".04"/>
      </body>
      <body name="leg_r" pos="0 -0.1 -0.15">
        <joint name="hip_r" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.35" size=".04"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="hip_l" kp="40" kv="1"/>
    <position joint="hip_r" kp="40" kv="1"/>
  </actuator>
</mujoco>
"""


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(WALKER_XML)


def _controls(num_envs: int, steps: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-0.5, 0.5, size=(steps, num_envs, 2))


@pytest.mark.parametrize("persistent", [True, False])
def test_step_matches_a_loop_of_mj_step_per_env(model, persistent):
    num_envs, steps, decimation = 3, 5, 4
    sim = BatchSim(model, num_envs, num_threads=2, decimation=decimation, persistent=persistent)
    sim.reset()
    xpos = sim.bind("xpos")
    controls = _controls(num_envs, steps)
    for k in range(steps):
        sim.ctrl[:] = controls[k]
        assert not sim.step().any()
    for env in range(num_envs):
        data = mujoco.MjData(model)
        for k in range(steps):
            data.ctrl[:] = controls[k, env]
            for _ in range(decimation):
                mujoco.mj_step(model, data)
        np.testing.assert_array_equal(sim.qpos[env], data.qpos)
        np.testing.assert_array_equal(sim.qvel[env], data.qvel)
        mujoco.mj_forward(model, data)  # step leaves derived fields at the new state
        np.testing.assert_allclose(xpos[env], data.xpos, atol=1e-12)
    assert sim.control_dt == pytest.approx(0.02)


@pytest.mark.parametrize("num_envs", [1, 5])
def test_rollouts_are_identical_for_any_thread_count(model, num_envs):
    finals = []
    for threads in (1, 2):
        sim = BatchSim(model, num_envs, num_threads=threads, decimation=2)
        sim.reset()
        for controls in _controls(num_envs, 10):
            sim.ctrl[:] = controls
            sim.step()
        finals.append(sim.qpos.copy())
    np.testing.assert_array_equal(finals[0], finals[1])


@pytest.mark.parametrize("persistent", [True, False])
def test_reset_of_a_subset_sets_state_and_derived_fields(model, persistent):
    sim = BatchSim(model, 4, num_threads=2, decimation=4, persistent=persistent)
    sim.reset()
    xpos = sim.bind("xpos")
    sim.ctrl[:] = 0.3
    sim.step()
    before = sim.qpos.copy()
    target = np.array(model.qpos0)
    target[:3] = [1.0, 2.0, 0.7]
    target[7:] = [0.2, -0.2]
    sim.reset(np.array([1, 3]), qpos=np.stack([target, target]), qvel=np.zeros((2, model.nv)))
    np.testing.assert_array_equal(sim.qpos[[1, 3]], [target, target])
    np.testing.assert_array_equal(sim.qpos[[0, 2]], before[[0, 2]])
    np.testing.assert_allclose(xpos[1, 1], [1.0, 2.0, 0.7])
    np.testing.assert_array_equal(sim.ctrl[1], 0.0)
    np.testing.assert_array_equal(sim.bind("qacc_warmstart")[1], 0.0)
    # the reset env then steps exactly like a fresh MjData from that state
    data = mujoco.MjData(model)
    data.qpos[:] = target
    data.time = sim.time[1]
    sim.step()
    for _ in range(4):
        mujoco.mj_step(model, data)
    np.testing.assert_array_equal(sim.qpos[1], data.qpos)


def test_non_finite_state_is_flagged_for_that_env_only(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to ./MUJOCO_LOG.TXT
    sim = BatchSim(model, 3, num_threads=2, decimation=2)
    sim.reset()
    sim.qvel[1, 0] = np.nan
    faults = sim.step()
    assert faults.tolist() == [False, True, False]
    assert sim.total_faults == 1
    sim.reset(np.array([1]), qpos=model.qpos0[None])
    assert not sim.step().any()
    assert np.isfinite(sim.qpos).all()


def test_instability_warning_is_a_fault(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sim = BatchSim(model, 2, num_threads=1, decimation=2)
    sim.reset()
    sim.qvel[0, 6] = 1e30  # huge joint velocity: MuJoCo warns and resets that data
    faults = sim.step()
    assert faults.tolist() == [True, False]


def test_expanded_friction_is_per_env(model):
    sim = BatchSim(model, 2, num_threads=1)
    friction = sim.expand("geom_friction")
    friction[1, :, 0] = 0.1
    assert friction.shape == (2, model.ngeom, 3)
    assert friction[0, 0, 0] == model.geom_friction[0, 0]
