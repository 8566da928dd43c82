"""``primebot robots`` and ``primebot robots show``."""

from __future__ import annotations

import json

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import reset_host


def run(capsys, *args):
    reset_host()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_robots_lists_q1(capsys, clean_env):
    code, out, _ = run(capsys, "robots")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("q1 "))
    assert "22 joints" in line and "not the vendor model" in line


def test_robots_show_prints_joints_bodies_mass_and_height(capsys, clean_env):
    code, out, _ = run(capsys, "robots", "show", "q1")
    assert code == 0
    assert "left_knee_joint" in out and "kp" in out and "effort" in out
    assert "16.30 kg" in out and "height 0.88" in out
    assert "trains with  task.physics_dt=0.01 task.decimation=2" in out
    code, out, _ = run(capsys, "robots", "show", "q1", "--json")
    info = json.loads(out)
    assert len(info["joints"]) == 22 and info["anchor_body"] == "torso_link"
    assert info["training_overrides"] == ["task.physics_dt=0.01", "task.decimation=2"]
    knee = next(j for j in info["joints"] if j["name"] == "left_knee_joint")
    assert knee["lower"] < 0 < knee["default"] < knee["upper"]


def test_robots_show_with_a_broken_xml_exits_with_the_robot_error(capsys, clean_env, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text(
        "<mujoco><worldbody><body name='pelvis'><freejoint/><geom "
        "size='0.1'/></body></worldbody></mujoco>"
    )
    code, _, err = run(capsys, "robots", "show", "q1", "--robot-xml", str(bad))
    assert code == 5
    assert (
        "missing joint(s): left_hip_pitch_joint" in err
        and "joint(s) without an actuator" not in err
    )


def test_unknown_robot_lists_the_registered_ones(capsys, clean_env):
    code, _, err = run(capsys, "robots", "show", "q2")
    assert code == 2 and "no robot named 'q2'" in err and "q1" in err.split("registered:")[1]
