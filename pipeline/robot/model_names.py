"""Names read from a model never become code (``primebot robots new``).

A name with a character that is not printable (a line break, a tab, a
bidirectional override…) is refused with an error naming the element, since
MuJoCo accepts a line break inside a name and a name written into a comment of
a generated spec.py could end the comment and start code. What the generated
files quote from a model goes through ``printable``; names in code are Python
literals (``repr``, robot/scaffold.py).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import mujoco

from ..errors import ConfigError, RobotError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")

_NAMED = {
    "body": ("nbody", mujoco.mjtObj.mjOBJ_BODY), "joint": ("njnt", mujoco.mjtObj.mjOBJ_JOINT),
    "geom": ("ngeom", mujoco.mjtObj.mjOBJ_GEOM), "site": ("nsite", mujoco.mjtObj.mjOBJ_SITE),
    "camera": ("ncam", mujoco.mjtObj.mjOBJ_CAMERA), "light": ("nlight", mujoco.mjtObj.mjOBJ_LIGHT),
    "mesh": ("nmesh", mujoco.mjtObj.mjOBJ_MESH), "skin": ("nskin", mujoco.mjtObj.mjOBJ_SKIN),
    "hfield": ("nhfield", mujoco.mjtObj.mjOBJ_HFIELD),
    "texture": ("ntex", mujoco.mjtObj.mjOBJ_TEXTURE),
    "material": ("nmat", mujoco.mjtObj.mjOBJ_MATERIAL), "pair": ("npair", mujoco.mjtObj.mjOBJ_PAIR),
    "exclude": ("nexclude", mujoco.mjtObj.mjOBJ_EXCLUDE),
    "equality": ("neq", mujoco.mjtObj.mjOBJ_EQUALITY),
    "tendon": ("ntendon", mujoco.mjtObj.mjOBJ_TENDON),
    "actuator": ("nu", mujoco.mjtObj.mjOBJ_ACTUATOR),
    "sensor": ("nsensor", mujoco.mjtObj.mjOBJ_SENSOR),
    "numeric": ("nnumeric", mujoco.mjtObj.mjOBJ_NUMERIC),
    "text": ("ntext", mujoco.mjtObj.mjOBJ_TEXT), "tuple": ("ntuple", mujoco.mjtObj.mjOBJ_TUPLE),
    "keyframe": ("nkey", mujoco.mjtObj.mjOBJ_KEY), "flex": ("nflex", mujoco.mjtObj.mjOBJ_FLEX),
}
"""Every kind of named MJCF element: its count in MjModel and its object type."""


def element_name(model, obj, index) -> str:
    """The name of element ``index`` of type ``obj`` ('' when it has none)."""
    return mujoco.mj_id2name(model, obj, index) or ""


def check_robot_name(name: str) -> None:
    """A ``ConfigError`` unless ``name`` can be a registry entry, a package and a Python name."""
    if not NAME_PATTERN.match(name):
        raise ConfigError(
            f"robot name {name!r} is not usable as a registry and package name",
            fix="use lower-case letters, digits and underscores, starting with a letter (e.g. g1)",
        )


def printable(text: str) -> str:
    """``text`` with every character that is not printable written as its escape (``\\n``,
    ``\\u202e``): what a comment, a docstring or the README may quote from a model, on one line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


_CONTROL_NAMES = {"\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\t": "TAB", "\x00": "NUL",
                  "\x0b": "LINE TABULATION",
                  "\x0c": "FORM FEED", "\x1b": "ESCAPE", "\x85": "NEXT LINE"}


def _describe(char: str) -> str:
    kind = _CONTROL_NAMES.get(char) or unicodedata.name(char,
                                                        f"category {unicodedata.category(char)}")
    return f"U+{ord(char):04X} ({kind})"


def refuse_unsafe_names(model: mujoco.MjModel, path: Path) -> None:
    """A ``RobotError`` naming the first element whose name (or the model's) holds a character that
    is not printable: a line break in a name could end a comment of the generated spec.py and start
    code."""
    found = []
    for kind, (count, obj) in _NAMED.items():
        for index in range(int(getattr(model, count, 0))):
            name = element_name(model, obj, index)
            if not name.isprintable():
                found.append((f"{kind} #{index}", name))
    model_name = bytes(model.names).split(b"\0", 1)[0].decode("utf-8", "replace")
    if not model_name.isprintable():
        found.append(("<mujoco model=…>", model_name))
    if not found:
        return
    element, name = found[0]
    bad = next(c for c in name if not c.isprintable())
    more = (
        f" (and {len(found) - 1} more: {', '.join(e for e, _ in found[1:4])})"
        if len(found) > 1
        else ""
    )
    raise RobotError(
        f"{printable(str(path))}: the {element} is named {name!r}, which holds "
        f"{_describe(bad)}{more}; "
        "names are written into the generated plugin, so `robots new` refuses names that are not "
        "printable",
        fix=f"rename the {element.split(' #')[0]} in the MJCF with printable characters only "
        "(letters, digits, _ - . and spaces: no line breaks, tabs or other control characters)",
    )
