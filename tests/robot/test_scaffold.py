"""``primebot robots new`` → pip install → registered → ``primebot robots check`` passes; and
check's failures."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from meshbot import JOINTS, write_meshbot

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import load_plugins, reset_host
from primebot.pipeline.robot.checks import check_robot


def run(capsys, *args):
    reset_host()
    code = main(list(args))
    out = capsys.readouterr()
    reset_host()
    return code, out.out, out.err


def test_scaffold_installs_registers_and_passes_robots_check(tmp_path, capsys, clean_env,
                                                             monkeypatch):
    # a bare model: meshes, no actuators, no floor, no keyframe, no armature
    mjcf = write_meshbot(tmp_path / "src", actuators=None, floor=False, keyframe=False,
                         armature=0.0, timestep=0.002)
    code, out, err = run(capsys, "robots", "new", "meshbot", "--mjcf", str(mjcf), "-o",
                         str(tmp_path / "pkg"))
    assert code == 0, err
    assert "a floor" in out and "actuators added" in out and "'stand' keyframe" in out
    assert "timestep 0.005 s (was 0.002)" in out
    spec_py = (tmp_path / "pkg" / "primebot_meshbot" / "spec.py").read_text()
    assert (
        spec_py.count("# REVIEW") >= 4
        and "[project.entry-points.primebot]" in (tmp_path / "pkg" / "pyproject.toml").read_text()
    )

    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index",
         "--target", str(site), str(tmp_path / "pkg")],
        check=True, capture_output=True, text=True,
    )
    # the model's folders install as data: no setuptools warning per folder
    assert "is absent from the `packages` configuration" not in installed.stdout + installed.stderr
    installed = site / "primebot_meshbot" / "model"
    # package data
    assert (installed / "meshbot.xml").is_file() and (installed / "meshes" / "foot.stl").is_file()
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("primebot_meshbot", None)
    sys.modules.pop("primebot_meshbot.spec", None)

    host = load_plugins()
    assert host.registry.registration("robots", "meshbot").plugin == "meshbot"
    spec = host.registry.get("robots", "meshbot")
    assert spec.mjcf.is_relative_to(site) and spec.joint_names == JOINTS
    assert (
        spec.feet == ("left_foot", "right_foot")
        and spec.root_body == "pelvis"
        and spec.anchor_body == "torso"
    )
    # mjlab's rule, at each joint's frequency: kp = armature·ω², kd = 2·ζ·armature·ω, scale =
    # 0.25·effort/kp mjlab's, or raised until the servos hold it standing
    assert (spec.extra["natural_frequency_hz"] >= 10.0).all()
    omega = 2 * np.pi * spec.extra["natural_frequency_hz"]
    np.testing.assert_allclose(spec.stiffness, spec.extra["armature"] * omega**2)
    np.testing.assert_allclose(spec.damping, 4.0 * spec.extra["armature"] * omega)
    np.testing.assert_allclose(spec.action_scale, 0.25 * spec.effort_limit / spec.stiffness)
    assert not [f for f in check_robot(spec) if f.status == "error"]
    code, out, err = run(capsys, "robots", "check", "meshbot", "--json")
    assert code == 0, err
    checks = {f["check"]: f["status"] for f in json.loads(out)}
    assert (
        checks["stand_on_floor"] == "ok"
        and checks["actuators"] == "ok"
        and checks["camera"] == "info"
    )
    # it moves at 10 ms as at 5 (robot/training_step.py), so it trains at 10 ms, and says why
    assert spec.training_overrides == ("task.physics_dt=0.01", "task.decimation=2")
    assert "# REVIEW training physics step: 10 ms physics" in spec_py
    assert checks["training_step"] == "ok"
    mirror = next(f["detail"] for f in json.loads(out) if f["check"] == "mirror")
    assert mirror.startswith("left-right symmetric from its geometry"), mirror


def test_robots_new_refuses_a_non_empty_folder_and_a_bad_name(tmp_path, capsys, clean_env):
    mjcf = write_meshbot(tmp_path / "src")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    code, _, err = run(capsys, "robots", "new", "meshbot", "--mjcf", str(mjcf), "-o",
                       str(tmp_path / "taken"))
    assert code == 2 and "not empty" in err
    code, _, err = run(capsys, "robots", "new", "Mesh-Bot", "--mjcf", str(mjcf), "-o",
                       str(tmp_path / "x"))
    assert code == 2 and "lower-case" in err


TYPO_PLUGIN = """
import sys
sys.path.insert(0, {tests!r})
from meshbot import meshbot_spec, JOINTS
from primebot.pipeline.hooks.specs import hookimpl


@hookimpl
def register_robots(register):
    register(meshbot_spec({mjcf!r}, name="meshbot_typo",
                          joint_names=("left_hip_jiont", *JOINTS[1:])))
"""


def test_robots_check_lists_every_failure_with_a_did_you_mean(tmp_path, capsys, clean_env,
                                                              make_distribution, repo_root):
    mjcf = write_meshbot(tmp_path / "src", floor=False)
    make_distribution("primebot-meshbot-typo", "primebot_meshbot_typo",
                      TYPO_PLUGIN.format(tests=str(repo_root / "tests"), mjcf=str(mjcf)),
                      entry_name="meshbot_typo")
    code, out, err = run(capsys, "robots", "check", "meshbot_typo")
    assert code == 5
    assert (
        "missing joint(s): left_hip_jiont" in out
        and "did you mean 'left_hip_jiont' → 'left_hip_joint'?" in out
    )
    assert "no floor" in out and "<geom name=\"floor\" type=\"plane\"" in out
    assert "fails 2 check(s): names, floor" in err and "robots show" not in out + err


@pytest.mark.parametrize("kind", ["position", "motor"])
def test_robots_check_passes_position_and_motor_models(tmp_path, kind):
    from meshbot import meshbot_spec

    spec = meshbot_spec(write_meshbot(tmp_path, actuators=kind))
    findings = {f.check: f for f in check_robot(spec)}
    assert findings["actuators"].status == "ok" and findings["stand_on_floor"].status == "ok"
    assert findings["stands_under_pd"].status == "info"


def test_robots_check_refuses_a_timestep_the_50_hz_policy_cannot_use(tmp_path):
    from meshbot import meshbot_spec

    findings = {f.check: f
                for f in check_robot(meshbot_spec(write_meshbot(tmp_path, timestep=0.002)),
                                     simulate=False)}
    assert findings["timestep"].status == "error" and "125 Hz" in findings["timestep"].detail
    assert (
        'timestep="0.005"' in findings["timestep"].fix
        and "task.decimation=10" in findings["timestep"].fix
    )


def test_scaffold_of_a_motor_model_keeps_the_motors_and_reads_their_effort(tmp_path):
    import importlib.util

    from primebot.pipeline.robot.scaffold import scaffold_robot

    made = scaffold_robot("motorbot", write_meshbot(tmp_path / "src", actuators="motor"),
                          tmp_path / "pkg")
    assert made.guess.effort == dict.fromkeys(JOINTS, 20.0)  # the motors' ctrlrange x gear
    assert not any("actuator" in change for change in made.model_changes)
    module_spec = importlib.util.spec_from_file_location("motorbot_spec",
                                                         made.folder / made.package / "spec.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    findings = {f.check: f for f in check_robot(module.motorbot_spec(), simulate=False)}
    assert all(f.status != "error" for f in findings.values()), findings


def test_robots_check_finds_self_collision_in_the_standing_pose(tmp_path):
    from meshbot import meshbot_spec

    mjcf = write_meshbot(tmp_path)
    # thighs 0.2 m apart, 0.11 m thick: they touch each other
    text = mjcf.read_text().replace('_thigh" type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03"',
                                    '_thigh" type="capsule" fromto="0 0 0 0 0 -0.25" size="0.11"')
    mjcf.write_text(text, encoding="utf-8")
    finding = {f.check: f
               for f in check_robot(meshbot_spec(mjcf), simulate=False)}["self_collision"]
    assert (
        finding.status == "error"
        and "left_thigh–right_thigh" in finding.detail
        and "exclude" in finding.fix
    )


def test_scaffold_raises_each_servo_frequency_just_enough_to_hold_the_robot_standing(tmp_path):
    import math

    import mujoco
    from capsulebot import write_capsulebot

    from primebot.pipeline.robot.scaffold import scaffold_robot
    from primebot.pipeline.robot.servo_gains import (
        FREQUENCY_STEP_HZ,
        NATURAL_FREQUENCY_HZ,
        STANCE_STIFFNESS_SAFETY,
    )
    from primebot.pipeline.robot.stance import MAX_SAG, standing_torques
    from primebot.pipeline.robot.statics import gravity_stiffness

    made = scaffold_robot("softbot", write_capsulebot(tmp_path / "src"), tmp_path / "pkg")
    guess = made.guess
    model = mujoco.MjModel.from_xml_path(str(made.folder / made.package / "model" / "softbot.xml"))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data,
                                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "stand"))
    mujoco.mj_kinematics(model, data)
    joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
              for name in guess.joint_names]
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, guess.root_body)
    feet = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name) for name in guess.feet}
    needed = np.maximum(STANCE_STIFFNESS_SAFETY * gravity_stiffness(model, data, joints, root,
                                                                    feet),
                        standing_torques(model, data, joints, root, feet) / MAX_SAG)
    armature = np.array([guess.armature[name] for name in guess.joint_names])
    hz = np.array([guess.frequency_hz[name] for name in guess.joint_names])

    def stiffness(f):
        return armature * (2 * math.pi * f) ** 2

    raised = hz > NATURAL_FREQUENCY_HZ
    assert raised.any() and not raised.all()  # its legs needed more, its arms did not
    assert (stiffness(hz) >= needed * (1 - 1e-9)).all()
    # and no more than that
    assert not (stiffness(hz - FREQUENCY_STEP_HZ)[raised] >= needed[raised]).any()
    assert "raised on" in guess.notes["gains"]
    spec_py = (made.folder / made.package / "spec.py").read_text()
    for name in guess.joint_names:
        assert f"    {name!r}: {guess.frequency_hz[name]!r},\n" in spec_py


def test_robots_check_names_the_servos_that_give_on_one_foot(spec):
    """q1 stands on both feet with every servo within MAX_SAG; on one foot its hip rolls carry the
    robot sideways and give more, which a stepping motion's policy has to hold."""
    import dataclasses
    import re

    from primebot.pipeline.robot.stance import MAX_SAG

    found = {f.check: f for f in check_robot(spec, simulate=False)}["one_foot"]
    assert found.status == "info" and "servo(s) give more than 0.05 rad" in found.detail
    first = re.search(r"give more than [\d.]+ rad: (\w+) ([\d.]+) rad \(([\d.]+) N·m at kp (\d+); "
                      r"kp (\d+) holds", found.detail)
    joint, sag, torque, kp, needed = first.groups()
    assert joint.endswith("hip_roll_joint") and float(sag) > MAX_SAG
    assert float(sag) == pytest.approx(float(torque) / float(kp), abs=0.01)
    assert float(needed) == pytest.approx(float(torque) / MAX_SAG, abs=1)
    assert "--set task.actions.offset=servo_target" in found.detail  # a remedy needing no motor
    stiff = dataclasses.replace(spec, stiffness=tuple(10 * float(k) for k in spec.stiffness))
    found = {f.check: f for f in check_robot(stiff, simulate=False)}["one_foot"]
    assert found.status == "info" and "no servo gives more than 0.05 rad" in found.detail


def test_scaffold_stiffens_the_legs_together_when_the_robot_falls_under_its_servos(tmp_path):
    """Joints in series give more than each alone: a robot whose servos each hold their own joint
    may still fold over. The scaffold tries its standing pose under its servos and raises the legs'
    frequencies together until it holds."""
    import mujoco
    from capsulebot import write_capsulebot

    from primebot.pipeline.robot import model_guess, servo_gains
    from primebot.pipeline.robot.spec import pd_gains

    source = write_capsulebot(tmp_path / "src")
    spec = mujoco.MjSpec.from_file(str(source))
    model_guess.add_floor(spec, spec.compile())
    model = spec.compile()
    guess = model_guess.guess_robot("softbot", model, source)
    model_guess.complete_model(spec, model, guess)
    as_guessed = dict(guess.frequency_hz)
    assert servo_gains.stiffen_legs(spec, guess) == "" and guess.frequency_hz == as_guessed

    # servos at 0.6 × the guessed frequencies (a third of the stiffness) let it fall
    soft = {name: 0.6 * hz for name, hz in as_guessed.items()}
    guess.frequency_hz = dict(soft)
    assert not servo_gains.stands_under_servos(spec.compile(), guess, soft)
    note = servo_gains.stiffen_legs(spec, guess)
    factor = float(note.split("then ")[1].split(" ×")[0])
    legs = [n for n in guess.joint_names if n.split("_", 1)[1] in ("hip_pitch", "hip_roll",
                                                                   "knee", "ankle_pitch")]
    assert "leg joints then" in note and factor * 1.1 >= 1 / 0.6 and factor <= 2.0
    for name in guess.joint_names:
        expected = soft[name] * (factor if name in legs else 1.0)
        assert expected <= guess.frequency_hz[name] < expected + servo_gains.FREQUENCY_STEP_HZ
    compiled = spec.compile()
    assert servo_gains.stands_under_servos(compiled, guess, guess.frequency_hz)
    # the copy's servos carry the raised gains (the gains contract of docs/robots.md: the XML
    # keeps 6 digits)
    fresh = mujoco.MjSpec.from_string(spec.to_xml()).compile()
    armature = np.array([guess.armature[n] for n in guess.joint_names])
    kp, _ = pd_gains(armature, np.array([guess.frequency_hz[n] for n in guess.joint_names]),
                     servo_gains.DAMPING_RATIO)
    for name, k in zip(guess.joint_names, kp, strict=True):
        act = next(a for a in range(fresh.nu)
                   if fresh.actuator_trnid[a, 0] == fresh.joint(name).id)
        assert fresh.actuator_gainprm[act, 0] == pytest.approx(k, rel=1e-5)
