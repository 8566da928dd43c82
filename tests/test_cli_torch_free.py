"""The fast commands never import torch: ``--help``, ``--version``, ``plugins``, ``robots``,
``motion …``.

Loading plugins must not import the training stack (docs/architecture.md §1, "Heavy imports are
late"); each command runs in a subprocess where importing torch fails.
"""

from __future__ import annotations

import pytest
from torch_free import run_sim2sim_without_torch


@pytest.mark.parametrize("args", [
    ["--help"],
    ["--version"],
    ["plugins"],
    ["robots"],
    ["robots", "show", "q1"],
    ["motion", "--help"],
    ["motion", "validate", "motions/wave.npz"],
], ids=lambda args: " ".join(args))
def test_fast_commands_never_import_torch(repo_root, args):
    run_sim2sim_without_torch(args, module="cli", plugins=True, cwd=repo_root)


def test_motion_author_and_convert_never_import_torch(repo_root, tmp_path):
    authored = tmp_path / "wave.npz"
    run_sim2sim_without_torch(["motion", "author", repo_root / "motions" / "wave.yaml", "-o",
                               authored],
                              module="cli", plugins=True)
    csv = tmp_path / "wave.csv"
    run_sim2sim_without_torch(["motion", "convert", authored, "-o", csv], module="cli",
                              plugins=True)
    run_sim2sim_without_torch(["motion", "convert", csv, "--input-fps", "50", "-o",
                               tmp_path / "back.npz"],
                              module="cli", plugins=True)
