"""pipeline/motion/recording.py: keyframe servo targets played through the servos, recorded.
The shipped getup regenerating from its source (tests/motion/test_author.py) is the end-to-end
check; these are its settings' errors and its command."""

from __future__ import annotations

import pytest

from primebot.pipeline.errors import MotionError
from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.recording import record, record_settings

BALANCE = {"from_s": 1.0, "joints": ["left_ankle_pitch_joint"], "gain": 0.3, "damping": 0.01}


@pytest.mark.parametrize("settings, named", [
    ({"max_step": 0.3}, "max_step"),
    ({"balance": {**BALANCE, "gains": 1}}, "balance.gains"),
    ({"balance": {"from_s": 1.0}}, "record.balance needs"),
    ({"joints": "commanded"}, "record.joints must be one of simulated, targets"),
    ("targets", "record must be a mapping"),
    ({"balance": [1.0]}, "record.balance must be a mapping"),
])
def test_a_bad_record_setting_is_a_motion_error_naming_it(settings, named):
    with pytest.raises(MotionError) as err:
        record_settings({"record": settings}, "src.yaml")
    assert named in str(err.value) and "src.yaml" in str(err.value)


def test_a_balance_joint_the_robot_lacks_is_named_with_the_robots_joints(tmp_path):
    source = tmp_path / "src.yaml"
    source.write_text(
        "robot: q1\nrecord:\n"
        "  balance: {from_s: 0.0, joints: [left_ankel_pitch_joint], gain: 0.3, damping: 0.0}\n"
        "keyframes:\n  - {time: 0.0}\n  - {time: 0.2}\n", encoding="utf-8")
    registry = load_plugins().registry
    with pytest.raises(MotionError) as err:
        record(source, registry.get("robots", "q1"), registry, tmp_path / "out.npz")
    assert "left_ankel_pitch_joint" in str(err.value) and "left_ankle_pitch_joint" in err.value.fix
    assert not (tmp_path / "out.npz").exists()


def test_motion_record_command_writes_a_valid_motion_and_refuses_a_bad_source(tmp_path, capsys):
    from primebot.pipeline.cli import main

    source = tmp_path / "crouch.yaml"
    source.write_text("robot: q1\nrecord: {joints: simulated, max_step_rad: 0.3}\n"
                      "keyframes:\n  - {time: 0.0}\n  - {time: 0.3}\n", encoding="utf-8")
    out = tmp_path / "crouch.npz"
    assert main(["motion", "record", str(source), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert main(["motion", "validate", str(out)]) == 0
    source.write_text("record: {joints: commanded}\nkeyframes: []\n", encoding="utf-8")
    assert main(["motion", "record", str(source), "-o", str(tmp_path / "bad.npz")]) == 5
    err = capsys.readouterr().err
    assert "record.joints must be one of" in err and "Traceback" not in err
    assert not (tmp_path / "bad.npz").exists()
