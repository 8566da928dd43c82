"""tools/bench_randomization.py: the variants it plays (each part of the training randomisation
removed in turn) and the table it prints for a real, tiny trained run."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
from tracking_run import tracking_host, train_tiny_run


def test_each_part_is_removed_alone_and_everything_else_stays_at_full_strength(import_tool):
    bench = import_tool("bench_randomization")
    defaults = copy.deepcopy(tracking_host().registry.get("tasks", "tracking").default_config)
    defaults["randomization"]["calm_envs"] = 0.5  # a run that trained some envs calm
    variants = bench.variants(defaults)
    parts = [k for k, v in defaults["randomization"].items()
             if k not in bench.NOT_PARTS and v is not None]
    assert list(variants) == ["full", *[f"without {p}" for p in parts], "none"]
    assert "without reset_velocity" in variants and "without push" in variants
    full = variants["full"]["randomization"]
    assert full["curriculum"] is None and full["enabled"]  # full strength, no curriculum
    assert full["calm_envs"] == 0.0  # in every env
    for part in parts:
        changed = variants[f"without {part}"]["randomization"]
        assert all(changed[k] == full[k] for k in full if k != part)
        assert changed["curriculum"] is None
    assert variants["without reset_velocity"]["randomization"]["reset_velocity"] == {
        axis: [0.0, 0.0] for axis in full["reset_velocity"]}
    assert variants["without reset_joint_pos"]["randomization"]["reset_joint_pos"] == [0.0, 0.0]
    assert variants["without push"]["randomization"]["push"] is None
    assert variants["without friction"]["randomization"]["friction"] is None
    assert variants["none"]["randomization"]["enabled"] is False
    assert defaults["randomization"]["curriculum"] is not None  # the input is left as it was


@pytest.mark.slow
def test_the_bench_plays_every_variant_of_a_trained_run(repo_root, tmp_path):
    run_dir = train_tiny_run(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(repo_root / "tools" / "bench_randomization.py"), str(run_dir),
         "--envs", "2", "--seconds", "0.5", "--action-std", "0.3",
         "--set", "task.randomization.push.speed=[0.1,0.25]"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "exploration noise 0.3" in lines[0]
    rows = {line.split("  ")[0].strip(): line for line in lines[2:]}
    assert {"full", "without reset_velocity", "without push", "none"} <= set(rows)
    assert "%" in rows["without push"] and "%" not in rows["full"].split("(")[0]
