"""``robots new`` on models built unlike q1: contacts switched off in the default class, primitives
only, no keyframe with the centre of mass behind the feet; and ``robots check``'s balance and
feet-on-floor lines."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import mujoco
import numpy as np
from capsulebot import JOINTS, write_capsulebot

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import load_plugins, reset_host
from primebot.pipeline.robot.checks import check_robot
from primebot.pipeline.robot.contacts import can_touch, floor_geoms
from primebot.pipeline.robot.scaffold import scaffold_robot


def _spec_module(made, module: str):
    found = importlib.util.spec_from_file_location(module, made.folder / made.package / "spec.py")
    loaded = importlib.util.module_from_spec(found)
    found.loader.exec_module(loaded)
    return loaded


def _copy(made) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(
        str(made.folder / made.package / "model" / f"{made.guess.name}.xml")
    )


def test_a_primitive_model_whose_default_class_disables_contacts_installs_registers_and_stands(
    tmp_path, capsys, clean_env, monkeypatch
):
    # Apollo's way: <default><geom contype="0" conaffinity="0"/>, collision geoms in group 3, no
    # pairs
    made = scaffold_robot("pairbot", write_capsulebot(tmp_path / "src", contacts_off=True),
                          tmp_path / "pkg")
    model = _copy(made)
    floor = int(floor_geoms(model)[0])
    # the added floor set its own bits: the default class's zeros would make it collide with nothing
    assert model.geom_contype[floor] and model.geom_conaffinity[floor]
    assert model.geom_condim[floor] == 3 and model.geom_friction[floor][0] == 1.0
    # no robot geom has contact bits, so the floor meets the collision geoms (group 3) through
    # explicit pairs
    collision = np.flatnonzero((model.geom_bodyid > 0) & (model.geom_group == 3))
    visual = np.flatnonzero((model.geom_bodyid > 0) & (model.geom_group == 1))
    assert model.npair == len(collision) and all(can_touch(model, int(g), floor) for g in collision)
    assert not any(can_touch(model, int(g), floor) for g in visual)
    assert any("contact pairs" in change for change in made.model_changes)

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation",
                    "--no-index", "--target", str(site), str(made.folder)], check=True,
                    capture_output=True, text=True)
    monkeypatch.syspath_prepend(str(site))
    for module in ("primebot_pairbot", "primebot_pairbot.spec"):
        sys.modules.pop(module, None)
    reset_host()
    spec = load_plugins().registry.get("robots", "pairbot")
    assert spec.mjcf.is_relative_to(site) and spec.joint_names == JOINTS
    reset_host()
    code = main(["robots", "check", "pairbot"])
    out = capsys.readouterr().out
    reset_host()
    assert code == 0, out
    assert "ok     floor" in out and "ok     balance" in out and "stayed up" in out

    # and it really stands on that floor: 1 s under its own servos, the feet stay on it
    model = _copy(made)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    for _ in range(200):
        mujoco.mj_step(model, data)
    assert data.qpos[2] > 0.9 * model.key_qpos[0][2]
    assert any(floor in (c.geom1, c.geom2) for c in data.contact[: data.ncon])


def test_the_floor_added_to_a_model_whose_default_class_disables_contacts_still_collides(tmp_path):
    # only the default class turns contacts off; the model's collision geoms set their own bits
    source = write_capsulebot(tmp_path / "src", contacts_off=True)
    # … and its options turn contacts off altogether
    source.write_text(source.read_text().replace('<default class="collision"><geom group="3"/>',
                                                 '<default class="collision"><geom group="3" '
                                                 'contype="2" conaffinity="4"/>')
                      .replace('<compiler angle="radian"/>',
                               '<compiler angle="radian"/><option><flag '
                               'contact="disable"/></option>'))
    made = scaffold_robot("bitbot", source, tmp_path / "pkg")
    model = _copy(made)
    assert not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT and any(
        "contacts enabled" in c for c in made.model_changes
    )
    floor = int(floor_geoms(model)[0])
    # the floor's bits meet the robot's (contype 4 = their conaffinity, conaffinity 2 = their
    # contype): no pairs
    assert (model.geom_contype[floor], model.geom_conaffinity[floor]) == (4, 2) and model.npair == 0
    assert not [f for f in check_robot(_spec_module(made, "bitbot_spec").bitbot_spec())
                if f.status == "error"]


def test_a_guessed_pose_is_leaned_over_the_feet_and_check_says_how_when_a_keyframe_is_not(tmp_path):
    made = scaffold_robot("leanbot", write_capsulebot(tmp_path / "src"), tmp_path / "pkg")
    pose = made.guess.default_pose
    # the trunk sits behind the hips: hip pitch and ankle pitch turned against each other, the feet
    # flat
    assert pose["left_hip_pitch"] == -pose["left_ankle_pitch"] != 0 and pose["left_knee"] == 0
    assert "leaned" in made.guess.notes["default_pose"]

    # the same model with a keyframe at the zero pose: robots check fails and names the lean
    source = write_capsulebot(tmp_path / "keyed", keyframe_name="zero")
    spec = _spec_module(made, "leanbot_spec").leanbot_spec(source)
    spec = type(spec)(**{**spec.__dict__, "default_joint_pos": np.zeros(len(JOINTS)),
                         "extra": {"keyframe": "zero"}})
    model_text = source.read_text()
    ctrl = " ".join(["0"] * len(JOINTS))
    actuators = "".join(f'<position joint="{j}" kp="{float(kp)!r}" kv="{float(kd)!r}"/>'
                        for j, kp, kd in zip(JOINTS, spec.stiffness, spec.damping, strict=True))
    source.write_text(model_text.replace("<worldbody>",
                                         '<worldbody><geom name="floor" type="plane" size="0 0 '
                                         '0.05"/>')
                      .replace("</worldbody>", f"</worldbody><actuator>{actuators}</actuator>")
                      .replace('"/></keyframe>', f'" ctrl="{ctrl}"/></keyframe>'))
    findings = {f.check: f for f in check_robot(spec, simulate=False)}
    balance = findings["balance"]
    assert balance.status == "error" and "middle half" in balance.detail
    assert "lean the standing pose" in balance.fix and "left_hip_pitch 0.000 →" in balance.fix
    assert "left_ankle_pitch 0.000 →" in balance.fix and "left_knee" not in balance.fix


def test_robots_check_fails_when_the_feet_cannot_touch_the_floor(tmp_path):
    from meshbot import meshbot_spec, write_meshbot

    mjcf = write_meshbot(tmp_path)
    text = mjcf.read_text()
    for side in ("left", "right"):
        text = text.replace(f'<geom name="{side}_foot" type="mesh"',
                            f'<geom name="{side}_foot" contype="0" conaffinity="0" type="mesh"')
    mjcf.write_text(text)
    finding = {f.check: f for f in check_robot(meshbot_spec(mjcf), simulate=False)}["floor"]
    assert finding.status == "error" and "the feet cannot touch the floor" in finding.detail
    assert "left_foot, right_foot" in finding.detail and "<pair" in finding.fix


def test_an_unlimited_hinge_gets_a_range_and_check_asks_for_one(tmp_path):
    # the Menagerie's OP3 gives its hinges no range: MuJoCo then reports [0, 0], which motion
    # authoring and the tracking task's soft joint limits would take at its word
    source = write_capsulebot(tmp_path / "src")
    source.write_text(source.read_text().replace('axis="0 1 0" range="-2.0 0.0"', 'axis="0 1 0"'))
    made = scaffold_robot("freebot", source, tmp_path / "pkg")
    model = _copy(made)
    elbow = model.joint("left_elbow").id
    assert model.jnt_limited[elbow] and np.allclose(model.jnt_range[elbow], [-np.pi, np.pi])
    assert "a ±π range on 2 hinge(s) without one" in made.model_changes

    from meshbot import meshbot_spec, write_meshbot

    mjcf = write_meshbot(tmp_path / "mesh")
    mjcf.write_text(mjcf.read_text().replace('axis="0 1 0" range="0 2.5"', 'axis="0 1 0"'))
    finding = {f.check: f for f in check_robot(meshbot_spec(mjcf), simulate=False)}["limits"]
    assert finding.status == "error" and "left_knee_joint, right_knee_joint" in finding.detail
    assert "range=" in finding.fix
