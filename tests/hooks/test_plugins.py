"""Plugin loading through real entry-point discovery (a *.dist-info on sys.path)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from import_graph import imports, source_files
from subprocess_env import pythonpath_with

from primebot.pipeline.errors import PluginError
from primebot.pipeline.hooks.host import DEFAULT_PLUGINS, load_plugins

BACKEND_PLUGIN = """
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.devices.backend import Availability, Backend


class FpgaBackend(Backend):
    name = "fpga"
    collective = "gloo"

    def availability(self):
        return Availability(False, "no FPGA here")

    def device_count(self):
        return 0

    def device_name(self, index=0):
        return "none"

    def autocast_dtype(self):
        return None

    def synchronize(self):
        pass


@hookimpl
def register_backends(register):
    register(FpgaBackend())
"""


def test_builtins_load_through_the_same_hooks(clean_env):
    host = load_plugins(entry_points_=[])
    assert set(DEFAULT_PLUGINS) <= set(host.plugins)
    assert all(host.plugins[name].source == "built-in" for name in DEFAULT_PLUGINS)
    assert host.registry.registration("backends", "cpu").plugin == "backends.cpu"


def test_entry_point_plugin_is_discovered_with_its_distribution(clean_env, make_distribution):
    make_distribution("primebot-fpga", "primebot_fpga", BACKEND_PLUGIN, version="0.3.1",
                      entry_name="fpga")
    host = load_plugins()
    assert host.plugins["fpga"].source == "primebot-fpga 0.3.1"
    assert host.registry.registration("backends", "fpga").plugin == "fpga"


def test_disable_plugins_skips_builtins_and_entry_points(clean_env, make_distribution):
    make_distribution("primebot-fpga", "primebot_fpga", BACKEND_PLUGIN, entry_name="fpga")
    clean_env.setenv("PRIMEBOT_DISABLE_PLUGINS", "fpga, backends.npu")
    host = load_plugins()
    assert "fpga" not in host.plugins and "backends.npu" not in host.plugins
    assert "npu" not in host.registry.names("backends")


def test_import_failure_names_plugin_distribution_and_cause(clean_env, make_distribution):
    make_distribution("primebot-broken", "primebot_broken", "import does_not_exist_anywhere\n",
                      version="2.0", entry_name="broken")
    with pytest.raises(PluginError) as err:
        load_plugins()
    text = str(err.value)
    assert "'broken'" in text and "primebot-broken 2.0" in text
    assert "ModuleNotFoundError" in text and "does_not_exist_anywhere" in text
    assert "PRIMEBOT_DISABLE_PLUGINS=broken" in text


def _run_cli(args: list[str], site, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": pythonpath_with(site), **env}
    environ.pop("PRIMEBOT_DISABLE_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "primebot.pipeline", *args], capture_output=True, text=True,
        env=environ, timeout=120
    )


def test_cli_reports_a_broken_plugin_without_a_traceback_wall(make_distribution):
    site = make_distribution("primebot-broken", "primebot_broken", "raise RuntimeError('boom')\n",
                             entry_name="broken")
    plain = _run_cli(["plugins"], site)
    assert plain.returncode != 0
    assert "plugin 'broken'" in plain.stderr and "RuntimeError: boom" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = _run_cli(["--debug", "plugins"], site)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_plugins_command_lists_source_and_registrations(make_distribution):
    site = make_distribution("primebot-fpga", "primebot_fpga", BACKEND_PLUGIN, version="0.3.1",
                             entry_name="fpga")
    result = _run_cli(["plugins"], site)
    assert result.returncode == 0, result.stderr
    assert "primebot-fpga 0.3.1" in result.stdout
    assert "backends: fpga" in result.stdout
    assert "backends.cpu" in result.stdout and "built-in" in result.stdout


def test_core_never_imports_plugins(repo_root):
    offenders = [
        f"{i.path.name}:{i.line} imports {i.module}"
        for path in source_files("pipeline")
        for i in imports(path)
        if i.module == "primebot.plugins" or i.module.startswith("primebot.plugins.")
    ]
    assert not offenders, f"the core imports primebot.plugins: {offenders}"


@pytest.mark.parametrize("source", [
    "import sys\nsys.exit(0)\n",
    "import sys\nfrom primebot.pipeline.hooks.specs import hookimpl\n\n@hookimpl\ndef "
    "register_robots(register):\n"
    "    sys.exit(0)\n",
], ids=["at-import", "in-a-hook"])
def test_a_plugin_calling_sys_exit_fails_every_command_loudly(make_distribution, source):
    site = make_distribution("primebot-quitter", "primebot_quitter", source, entry_name="quitter")
    result = _run_cli(["motion", "validate", "motions/wave.npz"], site)
    assert result.returncode == 3, result.stderr
    assert "plugin 'quitter'" in result.stderr and "sys.exit(0)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_misspelt_hook_name_is_refused_with_the_right_name(clean_env, make_distribution):
    make_distribution("primebot-typo", "primebot_typo", (
        "from primebot.pipeline.hooks.specs import hookimpl\n\n@hookimpl\ndef "
        "register_robot(register):\n    pass\n"
    ), entry_name="typo")
    with pytest.raises(PluginError, match="'register_robot', which is not a primebot hook") as err:
        load_plugins()
    assert "did you mean 'register_robots'" in str(err.value)


SPEC_MISSING_A_FIELD = """
from pathlib import Path

import numpy as np

from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.robot.spec import RobotSpec


@hookimpl
def register_robots(register):
    register(RobotSpec(name="halfbot", mjcf=Path("halfbot.xml"), joint_names=("a",),
                       default_joint_pos=np.zeros(1), stiffness=np.ones(1), damping=np.ones(1),
                       effort_limit=np.ones(1), action_scale=np.ones(1)))
"""


def test_a_plugin_failing_to_register_is_marked_and_the_others_still_listed(capsys, clean_env,
                                                                            make_distribution):
    from primebot.pipeline.cli import main
    from primebot.pipeline.hooks.host import reset_host

    make_distribution("primebot-halfbot", "primebot_halfbot", SPEC_MISSING_A_FIELD,
                      entry_name="halfbot")
    reset_host()
    code = main(["plugins"])
    out = capsys.readouterr().out
    assert code == 0
    assert "robots.q1" in out and "robots: q1" in out  # every other plugin is still listed
    halfbot = out[out.index("primebot-halfbot 1.0.0"):]
    assert (
        "FAILED:" in halfbot
        and "missing field(s): anchor_body, tracked_bodies, end_effector_bodies, feet" in halfbot
    )
    assert "1 plugin(s) failed to register: halfbot" in out
    reset_host()
    code = main(["robots", "show", "q1"])  # any other command names the failing plugin
    err = capsys.readouterr().err
    assert code == 3 and "plugin 'halfbot'" in err and "PRIMEBOT_DISABLE_PLUGINS=halfbot" in err
    assert "Traceback" not in err
    reset_host()
