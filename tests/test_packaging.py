"""A built wheel contains every sub-package and data file of pipeline/ and plugins/."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

SHIPPED_SUFFIXES = {".py", ".xml", ".yaml", ".html"}


@pytest.mark.slow
def test_wheel_contains_the_whole_source_tree(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
         str(tmp_path), str(repo_root)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("primebot-*.whl")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for root in ("pipeline", "plugins"):
        for path in (repo_root / root).rglob("*"):
            if (
                path.is_file()
                and path.suffix in SHIPPED_SUFFIXES
                and "__pycache__" not in path.parts
            ):
                expected.add("primebot/" + path.relative_to(repo_root).as_posix())
    missing = sorted(expected - in_wheel)
    assert not missing, f"missing from the wheel: {missing}"
    assert any(name.endswith("entry_points.txt") for name in in_wheel)
