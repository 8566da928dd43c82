"""A MUJOCO_GL that MuJoCo cannot load breaks ``import mujoco`` itself: every command then says so
once, naming the variable, instead of blaming whichever plugin imported MuJoCo first (seen on a GPU
machine whose image had no libEGL, with the test suite's MUJOCO_GL=egl)."""

from __future__ import annotations

import os
import subprocess
import sys

from subprocess_env import pythonpath_with


def test_a_mujoco_gl_that_mujoco_cannot_load_is_a_config_error_naming_the_variable(tmp_path):
    env = {**os.environ, "MUJOCO_GL": "bogus", "PYTHONPATH": pythonpath_with()}
    # a fresh interpreter: this one imported MuJoCo long ago
    result = subprocess.run([sys.executable, "-m", "primebot.pipeline", "devices"],
                            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "MuJoCo cannot be imported with MUJOCO_GL='bogus': RuntimeError" in result.stderr
    assert "fix: choose another backend (MUJOCO_GL=egl or osmesa), or unset it" in result.stderr
    assert "plugin" not in result.stderr
