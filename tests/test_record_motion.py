"""tools/record_motion.py: keyframe servo targets played through the robot's servos and recorded.
The shipped getup regenerating from its source (tests/motion/test_author.py) is the end-to-end
check; these are its settings' errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from primebot.pipeline.errors import MotionError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from record_motion import record, record_settings  # noqa: E402

BALANCE = {"from_s": 1.0, "joints": ["left_ankle_pitch_joint"], "gain": 0.3, "damping": 0.01}


@pytest.mark.parametrize("settings, named", [
    ({"max_step": 0.3}, "max_step"),
    ({"balance": {**BALANCE, "gains": 1}}, "balance.gains"),
    ({"balance": {"from_s": 1.0}}, "record.balance needs"),
    ({"joints": "commanded"}, "record.joints must be one of simulated, targets"),
])
def test_a_bad_record_setting_is_a_motion_error_naming_it(settings, named):
    with pytest.raises(MotionError) as err:
        record_settings({"record": settings}, "src.yaml")
    assert named in str(err.value) and "src.yaml" in str(err.value)


def test_a_balance_joint_the_robot_lacks_is_named_with_the_robots_joints(tmp_path):
    source = tmp_path / "src.yaml"
    source.write_text(
        "robot: q1\nrecord:\n  balance: {from_s: 0.0, joints: [left_ankel_pitch_joint], gain: 0.3, "
        "damping: 0.0}\n"
        "keyframes:\n  - {time: 0.0}\n  - {time: 0.2}\n", encoding="utf-8")
    with pytest.raises(MotionError) as err:
        record(source, tmp_path / "out.npz")
    assert "left_ankel_pitch_joint" in str(err.value) and "left_ankle_pitch_joint" in err.value.fix
    assert not (tmp_path / "out.npz").exists()
