"""tools/robot_motions.py writes a wave and a squat for a robot from its structure alone (no network
here: the models are made in the test), or says why a robot cannot have one."""

from __future__ import annotations

import importlib.util

import numpy as np
import yaml
from capsulebot import write_capsulebot

from primebot.pipeline.motion.author import author_file
from primebot.pipeline.robot.model import load_robot_model
from primebot.pipeline.robot.scaffold import scaffold_robot


def _scaffolded_spec(tmp_path, name, mjcf):
    made = scaffold_robot(name, mjcf, tmp_path / f"pkg_{name}")
    found = importlib.util.spec_from_file_location(f"{name}_bench_spec",
                                                   made.folder / made.package / "spec.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return getattr(module, f"{name}_spec")()


def test_a_wave_and_a_squat_from_the_robots_structure_author_and_do_what_they_say(
    import_tool, tmp_path
):
    tool = import_tool("robot_motions")
    spec = _scaffolded_spec(tmp_path, "capbot", write_capsulebot(tmp_path / "src"))
    model = load_robot_model(spec)
    motions = {}
    for name, source in tool.motion_sources(spec, model).items():
        assert isinstance(source, dict), source
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"robot": "capbot", "fps": 50, **source}), encoding="utf-8")
        motions[name] = author_file(path, spec, tmp_path / f"{name}.npz")
    body = {n: i for i, n in enumerate(motions["wave"].body_names)}
    hand, foot = body["right_hand"], body["left_foot"]
    wave_hand = motions["wave"].body_pos_w[:, hand, 2]
    assert wave_hand.max() > wave_hand[0] + 0.15  # the right hand goes up …
    # … the left one does not
    assert np.ptp(motions["wave"].body_pos_w[:, body["left_hand"], 2]) < 1e-3
    squat = motions["squat"]
    pelvis = squat.body_pos_w[:, body["pelvis"], 2]
    # down and back up
    assert pelvis.min() < pelvis[0] - 0.03 and abs(pelvis[-1] - pelvis[0]) < 1e-3
    assert np.ptp(squat.body_pos_w[:, foot, :2], axis=0).max() < 0.01  # the feet stay planted …
    _, fx, fy, _ = squat.body_quat_w[:, foot].T
    assert (1 - 2 * (fx**2 + fy**2)).min() > np.cos(np.radians(0.5))  # … and flat
    _, x, y, _ = squat.body_quat_w[:, body["torso"]].T
    # the trunk stays upright over the feet
    assert (1 - 2 * (x**2 + y**2)).min() > np.cos(np.radians(15))


def test_a_robot_without_arms_or_knees_gets_the_reason_instead(import_tool, tmp_path):
    from meshbot import write_meshbot

    tool = import_tool("robot_motions")
    # meshbot: legs of a hip and a knee (no ankle pitch between knee and foot), no arms
    spec = _scaffolded_spec(tmp_path, "legbot",
                            write_meshbot(tmp_path / "src", actuators=None, keyframe=False))
    sources = tool.motion_sources(spec, load_robot_model(spec))
    assert sources["wave"].startswith("no wave: the robot has no arms")
    assert sources["squat"].startswith("no squat:")


def test_an_ankle_that_cannot_keep_the_feet_flat_gets_the_reason_instead(import_tool, tmp_path):
    tool = import_tool("robot_motions")
    mjcf = write_capsulebot(tmp_path / "src")
    # ankle pitch that barely bends toes-up: the squat's shins cannot tilt forward over flat feet
    mjcf.write_text(mjcf.read_text(encoding="utf-8").replace('range="-0.8 0.8"',
                                                             'range="-0.05 0.8"'),
                    encoding="utf-8")
    spec = _scaffolded_spec(tmp_path, "stiffbot", mjcf)
    squat = tool.motion_sources(spec, load_robot_model(spec))["squat"]
    assert isinstance(squat, str) and squat.startswith("no squat: the feet cannot stay flat: "), (
        squat
    )
    assert "ankle_pitch reaches the end of its range" in squat


def _down_balance(model, spec, down: dict):
    """The balance of the squat's ``down`` pose, standing on the floor."""
    import mujoco

    from primebot.pipeline.robot.checks import stand_key
    from primebot.pipeline.robot.model import robot_indices
    from primebot.pipeline.robot.stance import on_floor, standing_balance

    ix = robot_indices(model, spec)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, max(stand_key(model, spec), 0))
    joint = dict(zip(spec.joint_names, ix.joint_ids, strict=True))
    qpos = data.qpos.copy()
    for name, angle in down.items():
        qpos[model.jnt_qposadr[joint[name]]] = angle
    data.qpos[:] = on_floor(model, qpos, int(model.body_jntadr[ix.root_body_id]))
    mujoco.mj_kinematics(model, data)
    return standing_balance(model, data, ix.root_body_id, ix.feet_body_ids.tolist())


def test_the_squat_leans_until_its_centre_of_mass_is_over_the_middle_of_the_feet(
    import_tool, tmp_path, monkeypatch
):
    # the H1's squat, leaned at most the standing pose's 0.35 rad, had its centre of mass on the
    # edge of its toes: its policy squatted 7 cm behind the reference and never tracked
    tool = import_tool("robot_motions")
    spec = _scaffolded_spec(tmp_path, "leanbot", write_capsulebot(tmp_path / "src"))
    model = load_robot_model(spec)
    down = tool.squat_source(spec, model)["poses"]["down"]
    assert down["left_knee"] == 1.0  # the whole bend, ...
    balance = _down_balance(model, spec, down)
    assert balance.stands and abs(balance.com - balance.centroid)[0] < 0.002  # ... centred
    # capsulebot needs more than 0.35 rad for that bend: limited to it, the squat bends less
    monkeypatch.setattr(tool, "SQUAT_MAX_LEAN", 0.35)
    down = tool.squat_source(spec, model)["poses"]["down"]
    assert down["left_knee"] < 1.0 and _down_balance(model, spec, down).stands
    # and with no lean at all no bend stands: the reason, not a squat on the edge of the feet
    monkeypatch.setattr(tool, "SQUAT_MAX_LEAN", 0.0)
    reason = tool.squat_source(spec, model)
    assert reason.startswith("no squat: no knee bend leaves the centre of mass over the middle "
                             "of the feet (the nearest: ")
