"""Names read from a model never become code: ``robots new`` refuses unprintable names and writes
every other name as a Python literal, so installing and importing the plugin it writes runs nothing
of the model's."""

from __future__ import annotations

import io
import subprocess
import sys
import tokenize

from capsulebot import JOINTS, write_capsulebot
from test_scaffold import run

from primebot.pipeline.hooks.host import load_plugins, reset_host
from primebot.pipeline.robot.checks import check_robot
from primebot.pipeline.robot.model_guess import Guess
from primebot.pipeline.robot.scaffold import spec_source


def _payload(sentinel) -> str:
    return f"open({str(sentinel)!r}, 'w').write('the model ran code')"


def _names(source: str) -> set[str]:
    """The identifiers of a Python source: what it could call (string literals and comments are
    not)."""
    return {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.NAME}


def test_a_keyframe_name_with_a_line_break_is_refused_naming_the_element(tmp_path, capsys,
                                                                         clean_env):
    sentinel = tmp_path / "ran"
    # MuJoCo keeps a line break in a name (&#10; in the XML); written into a spec.py comment it
    # would start code
    mjcf = write_capsulebot(tmp_path / "src", keyframe_name="k\n" + _payload(sentinel))
    code, _, err = run(capsys, "robots", "new", "evilbot", "--mjcf", str(mjcf), "-o",
                       str(tmp_path / "pkg"))
    assert code == 5  # RobotError
    assert "the keyframe #0 is named \"k\\nopen(" in err and "U+000A (LINE FEED" in err
    assert "rename the keyframe in the MJCF" in err
    assert not (tmp_path / "pkg").exists() and not sentinel.exists()


def test_a_bidirectional_override_in_a_joint_name_is_refused(tmp_path, capsys, clean_env):
    mjcf = write_capsulebot(tmp_path / "src", names={"left_knee": "left_knee\u202e"})
    code, _, err = run(capsys, "robots", "new", "evilbot", "--mjcf", str(mjcf), "-o",
                       str(tmp_path / "pkg"))
    assert (
        code == 5
        and "the joint #7 is named 'left_knee\\u202e'" in err
        and "RIGHT-TO-LEFT OVERRIDE" in err
    )
    assert not (tmp_path / "pkg").exists()


def test_printable_hostile_names_are_written_as_literals_and_the_installed_plugin_runs_none_of_them(
    tmp_path, capsys, clean_env, monkeypatch
):
    sentinel = tmp_path / "ran"
    payload = _payload(sentinel)
    hostile = {
        "left_knee": f"knee'''\"\"\"); {payload} #\\",
        "torso": f'torso"); {payload}; ("',
        "left_foot": f"foot{{{payload}}}",
    }
    keyframe = f"k'); {payload}; #"
    # a file name with a line break: the README quotes it
    mjcf = write_capsulebot(tmp_path / "src", names=hostile, keyframe_name=keyframe,
                            name="cap\nbot.xml")
    code, out, err = run(capsys, "robots", "new", "namebot", "--mjcf", str(mjcf), "-o",
                         str(tmp_path / "pkg"))
    assert code == 0, err
    package = tmp_path / "pkg"
    spec_py = (package / "primebot_namebot" / "spec.py").read_text()
    # the payload is only ever inside strings and comments
    assert not {"open", "write"} & _names(spec_py)
    readme = (package / "README.md").read_text()
    assert "cap\\nbot.xml" in readme and "cap\nbot" not in readme

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation",
                    "--no-index", "--target", str(site), str(package)], check=True,
                    capture_output=True, text=True)
    monkeypatch.syspath_prepend(str(site))
    for module in ("primebot_namebot", "primebot_namebot.spec"):
        sys.modules.pop(module, None)
    reset_host()
    spec = load_plugins().registry.get("robots", "namebot")  # imports the installed spec.py
    reset_host()
    assert not sentinel.exists()
    # every name round-trips exactly, through spec.py and through the XML copy MuJoCo wrote
    expected = tuple(hostile.get(j, j) for j in JOINTS)
    assert spec.joint_names == expected and spec.extra["keyframe"] == keyframe
    assert spec.anchor_body == hostile["torso"] and hostile["left_foot"] in spec.feet
    assert not [f for f in check_robot(spec, simulate=False) if f.status == "error"]
    assert not sentinel.exists()


def test_spec_source_escapes_names_even_when_nothing_refused_them(tmp_path):
    """Escaping does not rely on the refusal: a name with line breaks stays inside its literal or
    comment."""
    sentinel = tmp_path / "ran"
    evil = f"x\n{_payload(sentinel)}\n#"
    joints = (evil, "y\r\n" + _payload(sentinel))
    guess = Guess(
        name="escbot", joint_names=joints, default_pose=dict.fromkeys(joints, 0.0),
        armature=dict.fromkeys(joints, 0.01),
        effort=dict.fromkeys(joints, 10.0), frequency_hz=dict.fromkeys(joints, 10.0),
        root_body=evil, anchor_body=evil,
        feet=(evil,), hands=(), tracked_bodies=(evil,), keyframe=evil, height=1.0, mass=10.0,
        notes={"default_pose": f"the model's first keyframe {evil}", "gains": evil,
               "armature": evil, "effort": evil},
    )
    source = spec_source(guess, "escbot.xml")
    assert not {"open", "write"} & _names(source)
    namespace: dict = {"__file__": str(tmp_path / "spec.py"), "__name__": "escbot_spec"}
    exec(compile(source, "spec.py", "exec"), namespace)  # noqa: S102 - the point of the test
    assert not sentinel.exists()
    assert namespace["JOINT_NAMES"] == joints and namespace["ANCHOR_BODY"] == evil
    assert namespace["escbot_spec"]().extra["keyframe"] == evil
