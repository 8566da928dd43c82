"""Run a deploy-side command (sim2sim, the bundle runner) in a subprocess where importing torch fails (tests' shared helper)."""

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
leaked = sorted(m for m in sys.modules if m.split(".")[0] == "torch" or m.startswith("primebot.plugins"))
print("LEAKED", leaked)
sys.exit(code)
"""


def run_sim2sim_without_torch(args: list[str], module: str = "deploy.sim2sim") -> subprocess.CompletedProcess:
    """``python -m primebot.pipeline.<module> ARGS`` with torch unimportable; asserts success and no leak."""
    script = textwrap.dedent(BLOCK_TORCH_AND_RUN.format(args=[str(a) for a in args], module=module))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LEAKED []" in done.stdout, done.stdout[-2000:]
    return done
