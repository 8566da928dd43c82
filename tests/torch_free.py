"""Run a command that must not need torch (sim2sim, the bundle runner, the fast CLI) in a subprocess
where importing torch fails (tests' shared helper)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCK_TORCH_AND_RUN = """
import sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch must not be imported by the deploy loop")

sys.meta_path.insert(0, NoTorch())
from primebot.pipeline.{module} import main
code = main({args!r})
leaked = sorted(m for m in sys.modules
                if m.split(".")[0] == "torch"
                or {forbid_plugins} and m.startswith("primebot.plugins"))
print("LEAKED", leaked)
sys.exit(code)
"""


def run_sim2sim_without_torch(args: list[str], module: str = "deploy.sim2sim", *,
                              plugins: bool = False,
                              cwd=None,
                              returncodes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    """``python -m primebot.pipeline.<module> ARGS`` with torch unimportable; asserts success and no
    leak.

    ``plugins``: the command loads plugins (the ``primebot`` CLI), so only torch counts as a leak.
    ``returncodes``: the exit codes that count as success.
    """
    script = textwrap.dedent(BLOCK_TORCH_AND_RUN.format(args=[str(a) for a in args], module=module,
                                                        forbid_plugins=not plugins))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    assert done.returncode in returncodes, done.stderr[-2000:]
    assert "LEAKED []" in done.stdout, done.stdout[-2000:]
    return done
