"""Running ``primebot`` as a user does, in fresh processes, for the fault cases (tests/faults/)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from subprocess_env import pythonpath_with

REPO = Path(__file__).resolve().parents[2]
WAVE = REPO / "motions" / "wave.npz"
TINY_SETS = ["--set", "policy.actor_hidden=[16,16]", "--set", "policy.critic_hidden=[16,16]",
             "--set", "ppo.num_steps_per_env=8", "--set", "ppo.num_mini_batches=2",
             "--set", "ppo.num_learning_epochs=1"]
TINY = ["--num-envs", "8", "--device", "cpu", "--no-progress", *TINY_SETS]
"""8 environments, 16-unit networks, 8 steps: a real run that takes seconds."""
TINY_PIPELINE = ["--preset", "quick", "--iterations", "2", "--num-envs", "8", "--eval-episodes",
                 "1", "--no-video",
                 "--skip", "smoke", *TINY_SETS]
"""The smallest real pipeline: every stage but the smoke test (which trains in a scratch
directory)."""
EXIT = {"config": 2, "plugin": 3, "motion": 5, "checkpoint": 6, "export": 8, "disk": 11}
VERDICT_EXITS = (0, 10, 12)
"""What a finished ``pipeline run`` exits with: tracked and robust, not tracked, tracked only."""


class Result:
    """A finished ``primebot`` process: exit code, output, peak memory."""

    def __init__(self, rc: int | None, out: str, err: str, rss_mb: float = 0.0,
                 hung: bool = False) -> None:
        self.rc, self.out, self.err, self.rss_mb, self.hung = rc, out, err, rss_mb, hung

    @property
    def text(self) -> str:
        return self.err + self.out

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.text

    def assert_typed(self, code: int, *words: str) -> None:
        """Exit ``code``, no traceback, no hang, and every word in the output."""
        assert not self.hung, "hung: " + self.text[-1500:]
        assert self.rc == code, f"exit {self.rc}, expected {code}: " + self.text[-1500:]
        assert not self.traceback, "a traceback: " + self.text[-2500:]
        missing = [w for w in words if w not in self.text]
        assert not missing, f"missing {missing} in: " + self.text[-1500:]


def environ(site: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRIMEBOT_DEVICE", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                        "PRIMEBOT_DISABLE_PLUGINS", "PYTEST_CURRENT_TEST")}
    env.update(MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), PRIMEBOT_DEVICE="cpu",
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    if site is not None:
        env["PYTHONPATH"] = pythonpath_with(site, environ=env)
    env.update(extra)
    return env


MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:])
    print(f"@@rss_kb {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=sys.stderr)
    sys.exit(proc.returncode)
""")


def command(*args: object) -> list[str]:
    return [sys.executable, "-m", "primebot.pipeline", *map(str, args)]


def primebot(*args: object, timeout: float = 600, site: Path | None = None, measure: bool = False,
             env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
    """``primebot ARGS`` in a fresh process; ``measure`` also reports its peak memory (MB)."""
    cmd = command(*args)
    if measure:
        cmd = [sys.executable, "-c", MEASURE, *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=env or environ(site),
                              cwd=cwd or REPO)
    except subprocess.TimeoutExpired as exc:
        out = [s.decode(errors="replace") if isinstance(s, bytes) else (s or "")
               for s in (exc.stdout, exc.stderr)]
        return Result(None, *out, hung=True)
    err, rss = proc.stderr, 0.0
    if measure:
        lines = err.splitlines()
        rss = (
            float(next((line.split()[1] for line in lines if line.startswith("@@rss_kb")), 0))
            / 1024
        )
        err = "\n".join(line for line in lines if not line.startswith("@@rss_kb"))
    return Result(proc.returncode, proc.stdout, err, rss)


def start(*args: object, site: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen:
    """``primebot ARGS`` in the background; Ctrl-C reaches it as at a terminal (a shell's background
    jobs would otherwise start with SIGINT ignored)."""
    return subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True,
                            env=env or environ(site), cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(predicate: Callable[[], bool], proc: subprocess.Popen | None = None,
             timeout: float = 600,
             step: float = 0.05) -> bool:
    """Poll ``predicate`` until it holds (True), ``proc`` ends or ``timeout`` passes (then one last
    look)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except (OSError, ValueError, KeyError, IndexError):
            pass  # a file being replaced, or not there yet
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(step)
    try:
        return bool(predicate())
    except (OSError, ValueError, KeyError, IndexError):
        return False


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 300) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def stage_status(run_dir: Path, name: str) -> str:
    doc = json.loads((run_dir / "pipeline.json").read_text(encoding="utf-8"))
    return next(s["status"] for s in doc["stages"] if s["name"] == name)


def pipeline_doc(run_dir: Path) -> dict:
    return json.loads((run_dir / "pipeline.json").read_text(encoding="utf-8"))


def copy_run(run: Path, target: Path) -> Path:
    shutil.copytree(run, target, symlinks=True)
    (target / ".primebot.lock").unlink(missing_ok=True)
    return target


def plugin_site(folder: Path, name: str, source: str) -> Path:
    """A folder holding an installed-looking plugin distribution (module + dist-info with an entry
    point)."""
    site = folder / f"site-{name}"
    site.mkdir(parents=True)
    (site / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[primebot]\n{name} = {name}\n", encoding="utf-8")
    return site


def intact(run_dir: Path, killed: bool = False) -> list[str]:
    """What is damaged in a run directory (empty: nothing): pipeline.json parses, every checkpoint
    loads and belongs to the run, train.csv has complete rows only, the export bundle (when there)
    verifies, no half-written file is left (``killed``: a process killed -9 mid-write leaves its
    temporary file, which the next attempt removes), and report.html shows no result of another
    policy."""
    from primebot.pipeline.deploy.deploy_bundle import verify_bundle
    from primebot.pipeline.errors import PrimebotError
    from primebot.pipeline.rundir import read_run_id
    from primebot.pipeline.train.checkpoints import load_checkpoint, require_same_run
    from primebot.pipeline.train.log import complete_rows, read_csv_rows
    from primebot.pipeline.train.provenance import stale_results

    problems = []
    try:
        pipeline_doc(run_dir)
    except (OSError, ValueError) as exc:
        problems.append(f"pipeline.json: {exc}")
    for path in sorted(run_dir.glob("model_*.pt")):
        try:
            require_same_run(load_checkpoint(path), read_run_id(run_dir), path)
        except PrimebotError as exc:
            problems.append(str(exc).splitlines()[0])
    if (run_dir / "train.csv").is_file() and complete_rows(run_dir / "train.csv")[1] != \
            read_csv_rows(run_dir / "train.csv")[1]:
        problems.append("train.csv holds a torn row")
    if (run_dir / "export" / "deploy.yaml").is_file():
        try:
            verify_bundle(run_dir / "export")
        except PrimebotError as exc:
            problems.append(str(exc).splitlines()[0])
    leftovers = [p.name for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
    if leftovers and not killed:
        problems.append(f"half-written files left: {leftovers}")
    stale = stale_results(run_dir).stale
    page = (
        (run_dir / "report.html").read_text(encoding="utf-8")
        if (run_dir / "report.html").is_file()
        else ""
    )
    shown = [path for path in stale
             if path.endswith(".json") and f"<li><code>{path}</code>:" not in page]
    if shown:
        problems.append(f"report.html shows stale results as current: {shown}")
    return problems
