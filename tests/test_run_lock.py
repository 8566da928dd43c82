"""One writer per run directory: a second process is refused by name; a stale lock file never
blocks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.errors import ConfigError
from primebot.pipeline.run_lock import LOCK_FILE, run_dir_lock

HOLD = textwrap.dedent("""
    import sys
    from primebot.pipeline.run_lock import run_dir_lock
    with run_dir_lock(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.read()
""")


@pytest.fixture
def held(tmp_path):
    """tmp_path locked by another process until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield tmp_path, proc.pid
    proc.communicate("")


def test_a_second_process_is_refused_naming_the_holder(held):
    run_dir, pid = held
    with pytest.raises(ConfigError,
                       match=f"in use by another primebot process \\(pid {pid}") as info, \
            run_dir_lock(run_dir):
        pass
    assert f"kill -INT {pid}" in info.value.fix


@pytest.mark.parametrize("command", [
    ["train", "--resume", "{run}", "--no-progress"],
    ["pipeline", "run", "--resume", "{run}"],
    ["eval", "{run}"],
    ["export", "{run}"],
    ["sim2sim", "{run}"],
])
def test_every_command_that_writes_a_run_directory_is_refused_while_another_holds_it(
    held, capsys, command
):
    run_dir, pid = held
    code = main([arg.format(run=run_dir) for arg in command])
    assert code == 2, capsys.readouterr()
    assert f"pid {pid}" in capsys.readouterr().err


def test_a_lock_file_left_by_a_dead_process_or_naming_a_live_pid_does_not_block(tmp_path):
    # a live, unrelated process
    (tmp_path / LOCK_FILE).write_text(f"pid {os.getppid()}: primebot train\n")
    # re-entrant within a process (the pipeline's train stage)
    with run_dir_lock(tmp_path), run_dir_lock(tmp_path):
        assert "pid" in (tmp_path / LOCK_FILE).read_text()
    assert not (tmp_path / LOCK_FILE).exists()
