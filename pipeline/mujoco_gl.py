"""``MUJOCO_GL``: the OpenGL that MuJoCo renders offscreen with, and what each needs installed.

MuJoCo loads the backend that ``MUJOCO_GL`` names when it is *imported*, not when it first renders:
a value it does not know, or a backend whose library is missing (``egl`` on a machine without
libEGL, as on a GPU server whose image has no OpenGL loader), makes ``import mujoco`` itself fail,
so every command would fail, videos or not, naming whichever module happened to import MuJoCo
first. ``check_mujoco_gl`` turns that into one typed error that names the variable.
"""

from __future__ import annotations

import os

from .errors import ConfigError

GL_PACKAGES = {
    "egl": "libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 libglvnd0",
    "osmesa": "libosmesa6",
}
"""Debian/Ubuntu packages of each headless backend (Mesa's; an NVIDIA driver brings its own EGL)."""


def check_mujoco_gl() -> None:
    """Import MuJoCo; when that fails while ``MUJOCO_GL`` is set, a ``ConfigError`` naming the
    variable, its value and the fix (without the variable set, the failure is left as it is)."""
    chosen = os.environ.get("MUJOCO_GL")
    try:
        import mujoco  # noqa: F401 - imported for its side effect: loading the GL backend
    except Exception as exc:  # noqa: BLE001 - reported with the variable that caused it
        if not chosen:
            raise
        packages = GL_PACKAGES.get(chosen.strip().lower())
        install = (f"install what it needs (Debian/Ubuntu: apt-get install {packages}), "
                   if packages else "")
        raise ConfigError(
            f"MuJoCo cannot be imported with MUJOCO_GL={chosen!r}: {type(exc).__name__}: {exc} "
            "(MuJoCo loads that OpenGL backend on import)",
            fix=f"{install}choose another backend (MUJOCO_GL=egl or osmesa), or unset it: primebot "
                "then tries EGL, then OSMesa, for its videos, and runs every other stage without "
                "them",
        ) from exc
