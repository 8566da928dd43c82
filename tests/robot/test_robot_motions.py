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
