"""The files a robot's MJCF includes or loads (included XML, meshes, textures): what a bundle
carries with it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ..errors import ExportError

_ASSET_FILE_ATTRIBUTES = {
    "mesh": ("file",),
    "texture": ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback"),
    "hfield": ("file",),
    "skin": ("file",),
}


_ASSET_DIRS = {"mesh": "meshdir", "texture": "texturedir"}


def model_files(mjcf: Path) -> list[Path]:
    """Every file ``mjcf`` includes or loads, as paths relative to its folder (MuJoCo's resolution
    rules)."""
    root_dir = mjcf.parent
    compiler: dict[str, str] = {}
    found: list[tuple[str, str]] = []  # (tag, file)
    pending, seen = [mjcf], set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            tree = ET.parse(path)
        except ET.ParseError as exc:
            raise ExportError(f"robot model {path} is not readable XML: {exc}") from exc
        for element in tree.iter():
            if element.tag == "compiler":
                compiler.update({k: v for k, v in element.attrib.items()
                                 if k in ("meshdir", "texturedir", "assetdir")})
            elif element.tag == "include" and element.get("file"):
                found.append(("include", element.get("file")))
                pending.append(root_dir / element.get("file"))
            for attribute in _ASSET_FILE_ATTRIBUTES.get(element.tag, ()):
                if element.get(attribute):
                    found.append((element.tag, element.get(attribute)))
    out = []
    for tag, name in found:
        folder = (
            compiler.get(_ASSET_DIRS.get(tag, ""), compiler.get("assetdir", ""))
            if tag != "include"
            else ""
        )
        relative = Path(folder) / name
        if relative.is_absolute() or ".." in relative.parts:
            raise ExportError(
                f"robot model {mjcf} loads {relative}, outside its folder: the bundle cannot carry "
                "it",
                fix="keep included files and assets under the MJCF's folder, with relative paths",
            )
        out.append(relative)
    return sorted(set(out))
