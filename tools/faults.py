"""Fault injection: run every fault of issue #17 against the installed primebot and say whether it holds.

    python tools/faults.py                 every case (a few minutes on 2 cores)
    python tools/faults.py --only sim2sim  the cases whose name contains "sim2sim"

Each case does what a careful user or an attacker would (a full disk, a
damaged motion, a zip bomb, a killed pipeline, two processes on one run, a
plugin that calls sys.exit, hand-edited ONNX metadata …) through the
``primebot`` command line, in fresh processes, on tiny runs (8 environments,
16-unit networks, 1-2 iterations), and prints one line per case:

    <item> <case>  holds | falls short  (what was seen)

"holds" means: a typed error (the right exit code, the file or key named,
no traceback), nothing lost or corrupted, no hang, bounded memory. The
disk-full case needs root (it mounts a small tmpfs); without it the case
says so. The exit status is the number of cases that fall short.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from primebot.pipeline.errors import (
    CheckpointError,
    ConfigError,
    DiskFullError,
    ExportError,
    MotionError,
    PluginError,
)

REPO = Path(__file__).resolve().parents[1]
WAVE = REPO / "motions" / "wave.npz"
TINY = [
    "--num-envs", "8", "--device", "cpu", "--no-progress",
    "--set", "policy.actor_hidden=[16,16]", "--set", "policy.critic_hidden=[16,16]",
    "--set", "ppo.num_steps_per_env=8", "--set", "ppo.num_mini_batches=2", "--set", "ppo.num_learning_epochs=1",
]
EXIT = {kind: error.exit_code for kind, error in (
    ("config", ConfigError), ("plugin", PluginError), ("motion", MotionError), ("checkpoint", CheckpointError),
    ("export", ExportError), ("disk", DiskFullError))}
MAX_RSS_MB = 1500
"""Peak memory a refused untrusted file may cost (python + torch + mujoco alone are ~500 MB)."""

CASES: list[tuple[str, str, Callable[[Path], tuple[bool, str]]]] = []


def case(item: str, name: str):
    def register(func):
        CASES.append((item, name, func))
        return func

    return register


# -- running primebot -------------------------------------------------------------------------------
class Result:
    def __init__(self, rc: int | None, out: str, err: str, rss_mb: float = 0.0, hung: bool = False) -> None:
        self.rc, self.out, self.err, self.rss_mb, self.hung = rc, out, err, rss_mb, hung

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err + self.out

    def first_error(self) -> str:
        lines = self.err.splitlines() + self.out.splitlines()
        typed = [line for line in lines if line.startswith("primebot: error:") or "FAILED" in line]
        return (typed[0] if typed else (lines or ["(no message)"])[-1]).strip()[:160]

    def typed(self, code: int, *words: str) -> tuple[bool, str]:
        """Exit ``code``, no traceback, and every word in the error output."""
        text = self.err + self.out
        missing = [w for w in words if w not in text]
        ok = self.rc == code and not self.traceback and not missing and not self.hung
        seen = "hung" if self.hung else f"exit {self.rc}"
        detail = f"{seen}: {self.first_error()}" + (" [traceback]" if self.traceback else "")
        if missing:
            detail += f" [missing: {', '.join(missing)}]"
        return ok, detail


def env(extra_path: Path | None = None) -> dict[str, str]:
    environ = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "PRIMEBOT_DEVICE": "cpu",
               "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    environ.pop("PRIMEBOT_DISABLE_PLUGINS", None)
    if extra_path is not None:
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), environ.get("PYTHONPATH", "")]))
    return environ


MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:])
    print(f"@@rss_kb {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=sys.stderr)
    sys.exit(proc.returncode)
""")


def primebot(*args: str, timeout: float = 300, site: Path | None = None, cwd: Path | None = None,
             measure: bool = False) -> Result:
    """``primebot ARGS`` in a fresh process; ``measure`` also reports its peak memory."""
    command = [sys.executable, "-m", "primebot.pipeline", *map(str, args)]
    if measure:
        command = [sys.executable, "-c", MEASURE, *command]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env(site),
                              cwd=cwd or REPO)
    except subprocess.TimeoutExpired as exc:
        text = [s.decode(errors="replace") if isinstance(s, bytes) else (s or "") for s in (exc.stdout, exc.stderr)]
        return Result(None, *text, hung=True)
    err, rss = proc.stderr, 0.0
    if measure:
        lines = err.splitlines()
        rss = float(next((line.split()[1] for line in lines if line.startswith("@@rss_kb")), 0)) / 1024
        err = "\n".join(line for line in lines if not line.startswith("@@rss_kb"))
    return Result(proc.returncode, proc.stdout, err, rss)


def start(*args: str, site: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "primebot.pipeline", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env(site), cwd=REPO)


def wait_for(predicate: Callable[[], bool], proc: subprocess.Popen | None = None, timeout: float = 300) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc is not None and proc.poll() is not None:
            return predicate()
        time.sleep(0.1)
    return False


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


# -- shared material (made once, copied per case) --------------------------------------------------
WORK: Path = Path()


@functools.cache
def tiny_run() -> Path:
    """A real tracking run on wave.npz: 1 iteration, 8 envs, tiny networks."""
    result = primebot("train", WAVE, "--iterations", "1", "--run-name", "tiny", "--log-dir", WORK / "base", *TINY)
    if result.rc != 0:
        raise RuntimeError(f"could not train the tiny run: {result.err[-2000:]}")
    return next((WORK / "base" / "tiny").iterdir())


@functools.cache
def exported_run() -> Path:
    run = copy_run(tiny_run(), "exported-base")
    result = primebot("export", run)
    if result.rc != 0:
        raise RuntimeError(f"could not export the tiny run: {result.err[-2000:]}")
    return run


def copy_run(run: Path, name: str) -> Path:
    target = WORK / "runs" / name
    shutil.copytree(run, target)
    return target


def motion_with(name: str, change: Callable) -> Path:
    from primebot.pipeline.motion.format import load_motion, save_motion

    motion = change(load_motion(WAVE))
    path = WORK / "motions" / f"{name}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_motion(motion, path)
    return path


def npy_as_npz() -> Path:
    path = WORK / "motions" / "single.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.save(fh, np.zeros((281, 22), np.float32))
    return path


@functools.cache
def zip_bomb() -> Path:
    """An .npz of ~1 MB that declares a 1 GiB joint_pos (deflated zeros, written in chunks)."""
    path = WORK / "motions" / "bomb.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    frames, width = 1 << 22, 64  # 4M frames x 64 float32 = 1 GiB
    with np.load(WAVE) as wave, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for key in wave.files:
            if key == "joint_pos":
                continue
            with archive.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, wave[key], allow_pickle=False)
        with archive.open("joint_pos.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (frames, width)})
            chunk = bytes(1 << 24)
            for _ in range(frames * width * 4 // len(chunk)):
                fh.write(chunk)
    return path


def plugin_site(name: str, source: str) -> Path:
    """A folder holding an installed-looking plugin distribution (module + dist-info with an entry point)."""
    site = WORK / "sites" / name
    site.mkdir(parents=True)
    (site / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[primebot]\n{name} = {name}\n", encoding="utf-8")
    return site


# -- 1: disk full ------------------------------------------------------------------------------------
@case("1", "train on a full disk (tmpfs, checkpoint every iteration) stops with 'disk full', no hang")
def disk_full(work: Path) -> tuple[bool, str]:
    mount = work / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        return False, "could not mount a tmpfs (needs root): not tested"
    try:
        result = primebot("train", WAVE, "--iterations", "60", "--log-dir", mount, "--set", "runner.save_interval=1",
                          *TINY, timeout=240)
        return result.typed(EXIT["disk"], "no space left")
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


# -- 2: train validates the motion -------------------------------------------------------------------
def _bad_motion_case(name: str, change: Callable, *words: str) -> Callable:
    def run(work: Path) -> tuple[bool, str]:
        path = motion_with(name, change)
        logs = work / "logs"
        result = primebot("train", path, "--iterations", "1", "--log-dir", logs, *TINY)
        ok, detail = result.typed(EXIT["motion"], path.name, *words)
        if logs.exists():
            ok, detail = False, detail + " [a run directory was made]"
        return ok, detail

    return run


def _set(key: str, index: tuple, value: float) -> Callable:
    def change(motion):
        getattr(motion, key)[index] = value
        return motion

    return change


def _fps30(motion):
    import dataclasses

    return dataclasses.replace(motion, fps=30.0)


def _long_quats(motion):
    motion.body_quat_w[10:20, 1] *= 1.3
    return motion


case("2", "train refuses a motion with an Inf in body_pos_w")(_bad_motion_case("inf", _set("body_pos_w", (40, 3, 2), np.inf), "body_pos_w"))
case("2", "train refuses a 30 fps motion")(_bad_motion_case("fps30", _fps30, "fps is 30"))
case("2", "train refuses non-unit quaternions")(_bad_motion_case("quats", _long_quats, "quaternion"))
case("2", "train refuses a NaN motion up front, naming it")(_bad_motion_case("nan", _set("joint_pos", (50, 4), np.nan), "joint_pos"))


# -- 3: stage invalidation -----------------------------------------------------------------------------
FAKE_STAGES = '''
import os, time
from primebot.pipeline.hooks.specs import hookimpl
from primebot.pipeline.stages.contract import Stage, StageResult

NAMES = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim"]

def _make(name):
    def run(ctx):
        with open(ctx.path("calls.txt"), "a") as fh:
            fh.write(name + "\\n")
        if name == "train":
            ctx.path("policy_version.txt").write_text(str(ctx.settings.iterations))
        if name == "export":
            ctx.path("exported.txt").write_text(ctx.path("policy_version.txt").read_text())
            time.sleep(float(os.environ.get("FAULT_EXPORT_SLEEP", "0")))
        if name == "sim2sim":
            ctx.path("sim2sim_checked.txt").write_text(ctx.path("exported.txt").read_text())
        return StageResult()
    return run

@hookimpl
def register_stages(register):
    previous = ()
    for name in NAMES:
        register(Stage(name, _make(name), after=previous, description=f"{name} (fault-injection stand-in)"))
        previous = (name,)
'''
"""Stand-ins for the built-in stages (which are disabled): the invalidation rule is the runner's, whatever the
stages do; these record which policy version export wrote and which one sim2sim checked."""


@functools.cache
def fake_site() -> Path:
    return plugin_site("fault_stages", FAKE_STAGES)


def _fake_pipeline(*args: str, sleep: str = "0") -> subprocess.Popen:
    """``primebot pipeline run ARGS`` with the stand-in stages; export sleeps ``sleep`` seconds."""
    return subprocess.Popen([sys.executable, "-m", "primebot.pipeline", "pipeline", "run", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            env={**env(fake_site()), "PRIMEBOT_DISABLE_PLUGINS": "stages.builtin",
                                 "FAULT_EXPORT_SLEEP": sleep})


@case("3", "a pipeline killed during export after a --from train rerun never keeps the old sim2sim")
def stale_sim2sim(work: Path) -> tuple[bool, str]:
    logs = work / "logs"
    first = _fake_pipeline("m.npz", "--log-dir", logs, "--iterations", "30")
    if first.wait(timeout=120) != 0:
        return False, "first pipeline failed: " + first.communicate()[0][-300:]
    run = next(logs.rglob("pipeline.json")).parent
    second = _fake_pipeline("--resume", run, "--from", "train", "--iterations", "40", sleep="60")
    started = wait_for(lambda: (run / "calls.txt").read_text().split()[-1:] == ["export"], second, timeout=120)
    second.kill()
    second.communicate()
    if not started:
        return False, "export never started"
    third = _fake_pipeline("--resume", run)
    output = third.communicate(timeout=120)[0]
    checked = (run / "sim2sim_checked.txt").read_text()
    exported = (run / "exported.txt").read_text()
    ok = third.returncode == 0 and checked == exported == "40"
    return ok, f"exit {third.returncode}; policy.onnx from the {exported}-iteration policy, sim2sim checked {checked}" + (
        "" if ok else " | " + " / ".join(line.strip() for line in output.splitlines() if "sim2sim" in line)[:200])


# -- 4: one writer per run directory ------------------------------------------------------------------------
@case("4", "a second train --resume of a running resume is refused")
def two_resumes(work: Path) -> tuple[bool, str]:
    run = copy_run(tiny_run(), "two-resumes")
    first = start("train", "--resume", run, "--iterations", "100000", "--no-progress")
    try:
        if not wait_for(lambda: (run / ".primebot.lock").exists() and (run / "train.csv").read_text().count("\n") > 1,
                        first, timeout=240):
            return False, "the first resume never got going: " + stop(first)[-300:]
        rows_before = (run / "train.csv").read_text().count("\n")
        second = primebot("train", "--resume", run, "--iterations", "100000", "--no-progress", timeout=120)
    finally:
        stop(first)
    ok, detail = second.typed(EXIT["config"], "in use by another primebot process")
    return ok, detail + f" (train.csv had {rows_before - 1} rows)"


@case("4", "train --resume during a pipeline on the same run is refused")
def resume_during_pipeline(work: Path) -> tuple[bool, str]:
    logs = work / "logs"
    pipeline = _fake_pipeline("m.npz", "--log-dir", logs, sleep="60")
    try:
        if not wait_for(lambda: any(logs.rglob("exported.txt")), pipeline, timeout=120):
            return False, "the pipeline never reached export: " + stop(pipeline)[-300:]
        run = next(logs.rglob("pipeline.json")).parent
        result = primebot("train", "--resume", run, "--no-progress", timeout=120)
    finally:
        pipeline.kill()
        pipeline.communicate()
    return result.typed(EXIT["config"], "in use by another primebot process")


# -- 5: one checkpoint-loading rule --------------------------------------------------------------------------
def _garbage_newest(content: bytes, command: str) -> Callable:
    def run(work: Path) -> tuple[bool, str]:
        run_dir = copy_run(tiny_run(), f"garbage-{command}-{len(content)}")
        (run_dir / "model_99.pt").write_bytes(content)
        if command == "resume":
            result = primebot("train", "--resume", run_dir, "--iterations", "2", "--no-progress")
            ok, detail = result.typed(0, "model_99.pt", "falling back")
            ok = ok and (run_dir / "model_2.pt").is_file()
        else:
            result = primebot("eval", run_dir, "--episodes", "1")
            ok, detail = result.typed(0, "model_99.pt", "falling back", "iteration 1")
        return ok, detail.replace("exit 0: ", "exit 0, ")

    return run


case("5", "train --resume past a 0-byte newest model_<it>.pt falls back")(_garbage_newest(b"", "resume"))
case("5", "eval past a text newest model_<it>.pt falls back")(_garbage_newest(b"hello, not a checkpoint\n", "eval"))


@case("5", "eval --checkpoint /etc/passwd is a checkpoint error")
def eval_passwd(work: Path) -> tuple[bool, str]:
    return primebot("eval", copy_run(tiny_run(), "passwd"), "--checkpoint", "/etc/passwd").typed(
        EXIT["checkpoint"], "/etc/passwd")


# -- 6: sys.exit in a plugin -----------------------------------------------------------------------------------
@case("6", "a plugin calling sys.exit(0) at import fails motion validate of a NaN motion loudly")
def exit_at_import(work: Path) -> tuple[bool, str]:
    site = plugin_site("quitter_import", "import sys\nsys.exit(0)\n")
    nan = motion_with("nan-validate", _set("joint_pos", (50, 4), np.nan))
    return primebot("motion", "validate", nan, site=site).typed(EXIT["plugin"], "quitter_import", "sys.exit(0)")


@case("6", "a plugin calling sys.exit(0) in a hook fails pipeline run loudly")
def exit_in_hook(work: Path) -> tuple[bool, str]:
    site = plugin_site("quitter_hook", """
        import sys
        from primebot.pipeline.hooks.specs import hookimpl

        @hookimpl
        def register_stages(register):
            sys.exit(0)
    """)
    return primebot("pipeline", "run", WAVE, "--preset", "quick", "--log-dir", work / "logs", site=site).typed(
        EXIT["plugin"], "quitter_hook", "sys.exit(0)")


# -- 7: resource bounds -------------------------------------------------------------------------------------
def _bounded(result: Result, *words: str) -> tuple[bool, str]:
    ok, detail = result.typed(EXIT["motion"], *words)
    ok = ok and result.rss_mb < MAX_RSS_MB
    return ok, f"{detail} (peak {result.rss_mb:.0f} MB)"


@case("7", "motion validate of a zip bomb is refused with bounded memory")
def bomb_validate(work: Path) -> tuple[bool, str]:
    bomb = zip_bomb()
    return _bounded(primebot("motion", "validate", bomb, measure=True), "limit")


@case("7", "train on a zip bomb is refused with bounded memory")
def bomb_train(work: Path) -> tuple[bool, str]:
    return _bounded(primebot("train", zip_bomb(), "--iterations", "1", "--log-dir", work / "logs", *TINY,
                             measure=True), "limit")


@case("7", "motion resample --fps 1e7 is refused with bounded memory")
def resample_huge(work: Path) -> tuple[bool, str]:
    return _bounded(primebot("motion", "resample", WAVE, "--fps", "1e7", "-o", work / "o.npz", measure=True,
                             timeout=120), "limit")


# -- 8: typed errors, not tracebacks ----------------------------------------------------------------------------
@case("8", "a single .npy renamed .npz: motion validate")
def npy_validate(work: Path) -> tuple[bool, str]:
    return primebot("motion", "validate", npy_as_npz()).typed(EXIT["motion"], "single array")


@case("8", "a single .npy renamed .npz: train")
def npy_train(work: Path) -> tuple[bool, str]:
    return primebot("train", npy_as_npz(), "--iterations", "1", "--log-dir", work / "logs", *TINY).typed(
        EXIT["motion"], "single array")


@case("8", "a single .npy renamed .npz: pipeline run")
def npy_pipeline(work: Path) -> tuple[bool, str]:
    return primebot("pipeline", "run", npy_as_npz(), "--preset", "quick", "--log-dir", work / "logs").typed(
        EXIT["motion"], "single array")


def _resample(fps: str) -> Callable:
    def run(work: Path) -> tuple[bool, str]:
        return primebot("motion", "resample", WAVE, "--fps", fps, "-o", work / "o.npz").typed(
            EXIT["motion"], "frame rate")

    return run


case("8", "motion resample --fps nan")(_resample("nan"))
case("8", "motion resample --fps inf")(_resample("inf"))


@case("8", "motion convert of a binary file")
def convert_binary(work: Path) -> tuple[bool, str]:
    path = work / "noise.csv"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    return primebot("motion", "convert", path, "--input-fps", "30").typed(EXIT["motion"], "noise.csv")


@case("8", "motion convert --input-fps nan")
def convert_nan_fps(work: Path) -> tuple[bool, str]:
    csv = work / "wave.csv"
    made = primebot("motion", "convert", WAVE, "-o", csv)
    if made.rc != 0:
        return False, "could not write the CSV: " + made.first_error()
    return primebot("motion", "convert", csv, "--input-fps", "nan", "-o", work / "back.npz").typed(
        EXIT["motion"], "frame rate")


def _sim2sim_with(name: str, edit: Callable[[Path], None], *words: str) -> Callable:
    def run(work: Path) -> tuple[bool, str]:
        run_dir = copy_run(exported_run(), f"sim2sim-{name}")
        edit(run_dir / "export" / "policy.onnx")
        return primebot("sim2sim", run_dir, timeout=400).typed(EXIT["export"], *words)

    return run


def _metadata(**changes: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        import onnx

        model = onnx.load(str(path))
        for prop in model.metadata_props:
            if prop.key in changes:
                prop.value = changes[prop.key](prop.value)
        onnx.save(model, str(path))

    return edit


def _rename(old: str, new: str) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        import onnx

        model = onnx.load(str(path))
        for value in [*model.graph.input, *model.graph.output]:
            if value.name == old:
                value.name = new
        for node in model.graph.node:
            node.input[:] = [new if n == old else n for n in node.input]
            node.output[:] = [new if n == old else n for n in node.output]
        onnx.save(model, str(path))

    return edit


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _floats(factor: float = 1.0, offset: float = 0.0) -> Callable[[str], str]:
    return lambda text: ",".join(repr(float(v) * factor + offset) for v in text.split(","))


case("8", "sim2sim with a metadata value that is not a number")(
    _sim2sim_with("nan-meta", _metadata(control_dt=lambda _: "fast"), "control_dt", "not a number"))
case("8", "sim2sim with a missing ONNX input")(
    _sim2sim_with("no-input", _rename("time_step", "step"), "no input 'time_step'"))
case("8", "sim2sim with a missing ONNX output")(
    _sim2sim_with("no-output", _rename("body_quat_w", "body_quat"), "no output 'body_quat_w'"))
case("8", "sim2sim with a truncated ONNX")(_sim2sim_with("truncated", _truncate, "not a loadable ONNX"))

# -- 9: sim2sim cross-checks ------------------------------------------------------------------------------------
case("9", "sim2sim refuses action_scale x100 in the metadata")(
    _sim2sim_with("scale", _metadata(action_scale=_floats(100)), "metadata_matches_robot"))
case("9", "sim2sim refuses default_joint_pos + 0.3 in the metadata")(
    _sim2sim_with("default", _metadata(default_joint_pos=_floats(offset=0.3)), "metadata_matches_robot"))
case("9", "sim2sim refuses another robot's name in the metadata")(
    _sim2sim_with("robot", _metadata(robot=lambda _: "biped4"), "metadata_matches_robot"))
case("9", "sim2sim refuses num_observations 118 for a 119-wide graph")(
    _sim2sim_with("num-obs", _metadata(num_observations=lambda v: str(int(v) - 1)), "num_observations"))
case("9", "sim2sim refuses a control_dt that disagrees with fps and the robot")(
    _sim2sim_with("control-dt", _metadata(control_dt=lambda _: "0.03"), "control_dt"))
case("9", "sim2sim refuses fps/control_dt that do not match the graph's motion")(
    _sim2sim_with("fps", _metadata(fps=lambda _: "25.0", control_dt=lambda _: "0.04"),
                  "reference_rate_matches_control_dt"))


# -- 10: the smaller ones --------------------------------------------------------------------------------------
@case("10", "resume with --set ppo.lr=1e-4 (the NaN-stop advice) works and is recorded")
def resume_with_lr(work: Path) -> tuple[bool, str]:
    import yaml

    run = copy_run(tiny_run(), "lr")
    result = primebot("train", "--resume", run, "--iterations", "2", "--no-progress", "--set", "ppo.lr=1e-4")
    ok, detail = result.typed(0)
    args = yaml.safe_load((run / "args.yaml").read_text())
    recorded = (args.get("resumes") or [{}])[-1].get("set")
    ok = ok and args["config"]["ppo"]["learning_rate"] == 1e-4 and recorded == ["ppo.learning_rate=0.0001"]
    return ok, f"{detail}; args.yaml resumes[-1].set = {recorded}"


@case("10", "a lock file holding a live, unrelated pid does not block resume")
def reused_pid(work: Path) -> tuple[bool, str]:
    run = copy_run(tiny_run(), "reused-pid")
    for name in (".primebot.lock", ".pipeline.lock"):
        (run / name).write_text("pid 1: primebot train\n" if name == ".primebot.lock" else "1")
    return primebot("train", "--resume", run, "--iterations", "2", "--no-progress").typed(0)


@case("10", "an interrupted first checkpoint: resume says there is nothing to resume")
def orphan_tmp(work: Path) -> tuple[bool, str]:
    run = copy_run(tiny_run(), "orphan")
    for path in run.glob("model_*.pt"):
        data = path.read_bytes()
        path.unlink()
    (run / ".model_1.pt.x7f3k2.pt.tmp").write_bytes(data[: len(data) // 2])
    return primebot("train", "--resume", run, "--no-progress").typed(
        EXIT["checkpoint"], "stopped while writing its first one", "without --resume")


@case("10", "a misspelt hook name (register_robot) is refused")
def misspelt_hook(work: Path) -> tuple[bool, str]:
    site = plugin_site("typo_plugin", """
        from primebot.pipeline.hooks.specs import hookimpl

        @hookimpl
        def register_robot(register):
            pass
    """)
    return primebot("plugins", site=site).typed(EXIT["plugin"], "register_robot", "did you mean 'register_robots'")


@case("10", "motion replay of a NaN motion is refused, no video")
def replay_nan(work: Path) -> tuple[bool, str]:
    nan = motion_with("nan-replay", _set("joint_pos", (50, 4), np.nan))
    video = work / "nan.mp4"
    ok, detail = primebot("motion", "replay", nan, "-o", video).typed(EXIT["motion"], "joint_pos", "frame 50")
    return ok and not video.exists(), detail


@case("10", "train --iterations 0 is refused, no model_0.pt")
def zero_iterations(work: Path) -> tuple[bool, str]:
    logs = work / "logs"
    ok, detail = primebot("train", WAVE, "--iterations", "0", "--log-dir", logs, *TINY).typed(
        EXIT["config"], "iterations")
    return ok and not any(logs.rglob("model_0.pt")), detail


@case("10", "train --set ppo.gamma=2 is refused")
def gamma_two(work: Path) -> tuple[bool, str]:
    return primebot("train", WAVE, "--iterations", "1", "--log-dir", work / "logs", *TINY,
                    "--set", "ppo.gamma=2").typed(EXIT["config"], "ppo.gamma")


# -- main --------------------------------------------------------------------------------------------------------
def main() -> int:
    global WORK
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run only the cases whose item or name contains this text")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (printed at the end)")
    args = parser.parse_args()
    WORK = Path(tempfile.mkdtemp(prefix="primebot-faults-"))
    selected = [c for c in CASES if args.only in c[0] or args.only in c[1]] if args.only else CASES
    short = 0
    start_all = time.monotonic()
    try:
        for number, (item, name, func) in enumerate(selected, start=1):
            work = WORK / f"case{number:02d}"
            work.mkdir()
            t0 = time.monotonic()
            try:
                ok, detail = func(work)
            except Exception as exc:  # noqa: BLE001 - a case that cannot run falls short, with why
                ok, detail = False, f"the case itself failed: {type(exc).__name__}: {str(exc)[:200]}"
            short += not ok
            verdict = "holds" if ok else "falls short"
            print(f"{item:>3}  {name:<95} {verdict:<11}  ({detail}; {time.monotonic() - t0:.0f}s)", flush=True)
    finally:
        with contextlib.suppress(OSError):
            if not args.keep:
                shutil.rmtree(WORK, ignore_errors=True)
    print(f"{len(selected) - short} of {len(selected)} cases hold ({time.monotonic() - start_all:.0f}s)"
          + (f"; work directory {WORK}" if args.keep else ""))
    return short


if __name__ == "__main__":
    sys.exit(main())
