"""Checkpoints: atomic, verified, weights_only, never non-finite, fallback to the previous good
one."""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from primebot.pipeline.errors import CheckpointError, NonFiniteError
from primebot.pipeline.train.checkpoints import (
    from_storable,
    load_checkpoint,
    load_latest_good,
    save_checkpoint,
    to_storable,
)


def _payload(scale: float = 1.0) -> dict:
    return {
        "iteration": 3,
        "learner": {"w": torch.arange(6.0).reshape(2, 3) * scale, "lr": 1e-3},
        "ranks": [{"python_rng": (3, (1, 2, 3), None),
                   "env": to_storable({"pos": np.ones((2, 2))})}],
    }


def test_round_trip_keeps_every_value(tmp_path):
    path = save_checkpoint(tmp_path / "model_3.pt", _payload())
    data = load_checkpoint(path)
    assert torch.equal(data["learner"]["w"], _payload()["learner"]["w"])
    assert data["ranks"][0]["python_rng"] == (3, (1, 2, 3), None)
    env = from_storable(data["ranks"][0]["env"])
    assert isinstance(env["pos"], np.ndarray) and env["pos"].tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_save_leaves_no_temporary_file_and_replaces_atomically(tmp_path):
    save_checkpoint(tmp_path / "model_3.pt", _payload())
    save_checkpoint(tmp_path / "model_3.pt", _payload(2.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_3.pt"]
    assert load_checkpoint(tmp_path / "model_3.pt")["learner"]["w"][0, 1].item() == 2.0


def test_non_finite_checkpoint_is_never_written(tmp_path):
    good = save_checkpoint(tmp_path / "model_3.pt", _payload())
    before = good.read_bytes()
    with pytest.raises(NonFiniteError, match="learner/w"):
        save_checkpoint(good, _payload(float("nan")))
    assert good.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model_3.pt"]


def test_truncated_checkpoint_is_refused_by_name(tmp_path):
    path = save_checkpoint(tmp_path / "model_3.pt", _payload())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="model_3.pt is truncated or corrupt"):
        load_checkpoint(path)


def test_bit_flip_inside_a_tensor_is_refused(tmp_path):
    path = save_checkpoint(tmp_path / "model_3.pt", _payload())
    data = bytearray(path.read_bytes())
    # Flip a byte of the stored float 5.0 (the last weight): the zip stays readable.
    needle = np.float32(5.0).tobytes()
    index = bytes(data).rfind(needle)
    assert index > 0
    data[index + 3] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="model_3.pt"):
        load_checkpoint(path)


class _Payload:
    """Pickles to a call that would create a marker file when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def test_checkpoint_with_pickle_payload_is_rejected_and_never_runs(tmp_path):
    marker = tmp_path / "payload_ran"
    path = tmp_path / "model_9.pt"
    torch.save({"format": "primebot-checkpoint", "version": 1, "evil": _Payload(marker)}, path)
    with pytest.raises(CheckpointError, match="model_9.pt carries a pickled Python object"):
        load_checkpoint(path)
    assert not marker.exists()
    # The same file through plain pickle would have run it: the test is meaningful.
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)


def test_foreign_file_is_refused(tmp_path):
    path = tmp_path / "model_1.pt"
    torch.save({"w": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError, match="not a primebot checkpoint"):
        load_checkpoint(path)


def test_resume_falls_back_to_previous_good_checkpoint_with_a_warning(tmp_path, caplog):
    save_checkpoint(tmp_path / "model_5.pt", {**_payload(), "iteration": 5})
    bad = save_checkpoint(tmp_path / "model_10.pt", {**_payload(), "iteration": 10})
    bad.write_bytes(bad.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        path, data = load_latest_good(tmp_path)
    assert path.name == "model_5.pt" and data["iteration"] == 5
    assert "model_10.pt" in caplog.text and "falling back" in caplog.text


def test_no_loadable_checkpoint_is_an_error_naming_the_run(tmp_path):
    with pytest.raises(CheckpointError, match="no model_<it>.pt"):
        load_latest_good(tmp_path)


@pytest.mark.parametrize("content",
                         [b"", b"hello\n",
                          Path("/etc/passwd").read_bytes()[:400] or b"root:x:0:0\n"],
                         ids=["empty", "text", "passwd"])
def test_garbage_newest_checkpoint_is_refused_by_name_and_resume_falls_back(tmp_path, content):
    save_checkpoint(tmp_path / "model_5.pt", {**_payload(), "iteration": 5})
    (tmp_path / "model_10.pt").write_bytes(content)
    with pytest.raises(CheckpointError, match="model_10.pt"):
        load_checkpoint(tmp_path / "model_10.pt")
    path, data = load_latest_good(tmp_path)
    assert path.name == "model_5.pt" and data["iteration"] == 5


def test_a_zip_that_torch_cannot_read_is_corrupt_not_a_traceback(tmp_path):
    import zipfile

    path = tmp_path / "model_1.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(CheckpointError, match="model_1.pt"):
        load_checkpoint(path)


def test_a_checkpoint_with_deflated_entries_is_refused_unread(tmp_path):
    import zipfile

    path = tmp_path / "model_1.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data/0", bytes(1 << 20))
    with pytest.raises(CheckpointError, match="compressed entries"):
        load_checkpoint(path)


def test_an_interrupted_first_checkpoint_says_there_is_nothing_to_resume(tmp_path):
    (tmp_path / ".model_1.pt.k2j3h4.pt.tmp").write_bytes(b"PK\x03\x04partial")
    with pytest.raises(CheckpointError, match="stopped while writing its first one") as info:
        load_latest_good(tmp_path)
    assert "without --resume" in info.value.fix


def test_eval_and_export_load_the_newest_checkpoint_that_loads(tmp_path):
    from tracking_run import train_tiny_run

    from primebot.pipeline.train.trained_policy import load_trained_policy

    run_dir = train_tiny_run(tmp_path)
    (run_dir / "model_99.pt").write_text("not a checkpoint\n")
    policy = load_trained_policy(run_dir)
    assert policy.checkpoint.name == "model_1.pt" and policy.iteration == 1
    with pytest.raises(CheckpointError, match="model_99.pt"):
        load_trained_policy(run_dir, "99")
    with pytest.raises(CheckpointError, match="/etc/passwd"):
        load_trained_policy(run_dir, "/etc/passwd")


# -- only damage falls back ------------------------------------------------------------------------
def _good_and_newer(tmp_path: Path) -> Path:
    save_checkpoint(tmp_path / "model_5.pt", {**_payload(), "iteration": 5})
    return save_checkpoint(tmp_path / "model_10.pt", {**_payload(), "iteration": 10})


def test_an_io_error_stops_with_its_reason_instead_of_falling_back(tmp_path, monkeypatch):
    import errno

    from primebot.pipeline.train import checkpoints

    newest = _good_and_newer(tmp_path)
    real_open = open

    # a disk that fails reading one file (hardware we cannot have)
    def failing_open(path, *args, **kwargs):
        if Path(path).name == "model_10.pt":
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(checkpoints, "open", failing_open, raising=False)
    with pytest.raises(
        CheckpointError, match=r"model_10.pt cannot be read: Input/output error"
    ) as info:
        load_latest_good(tmp_path)
    assert "nothing falls back" in str(info.value) and "dmesg" in info.value.fix
    assert newest.is_file()


def test_out_of_memory_while_loading_stops_instead_of_falling_back(tmp_path, monkeypatch):
    _good_and_newer(tmp_path)

    def no_memory(*args, **kwargs):  # what torch raises when the allocator fails
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
                           "allocate memory: "
                           "you tried to allocate 4000000000 bytes.")

    monkeypatch.setattr(torch, "load", no_memory)
    with pytest.raises(
        CheckpointError, match="model_10.pt could not be loaded: out of memory"
    ) as info:
        load_latest_good(tmp_path)
    assert "free memory" in info.value.fix


def test_a_checkpoint_from_a_newer_primebot_stops_instead_of_falling_back(tmp_path, monkeypatch):
    from primebot.pipeline.train import checkpoints

    save_checkpoint(tmp_path / "model_5.pt", {**_payload(), "iteration": 5})
    monkeypatch.setattr(checkpoints, "VERSION", 2)  # written by a later primebot
    save_checkpoint(tmp_path / "model_10.pt", {**_payload(), "iteration": 10})
    monkeypatch.setattr(checkpoints, "VERSION", 1)
    with pytest.raises(CheckpointError,
                       match=r"model_10.pt was written by a newer primebot \(checkpoint format 2") \
            as info:
        load_latest_good(tmp_path)
    assert "upgrade primebot" in info.value.fix


def test_a_resume_past_a_newer_checkpoint_never_overwrites_it(tmp_path, monkeypatch):
    """A newer checkpoint is not taken for a corrupt one: training does not fall back to model_5.pt
    and later write its own model_7.pt over the good one."""
    import pointmass_task

    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train import checkpoints
    from primebot.pipeline.train.session import TrainRequest, run_training

    registry = load_plugins(extra=[("pointmass", pointmass_task)]).registry
    out = run_training(registry,
                       TrainRequest(task="pointmass", num_envs=8, iterations=7,
                                    log_dir=str(tmp_path),
                                              progress=False))
    newest = out.run_dir / "model_7.pt"
    payload = load_checkpoint(newest)
    monkeypatch.setattr(checkpoints, "VERSION", 2)
    save_checkpoint(newest,
                    {k: v for k, v in payload.items() if k not in ("format", "version", "digest")})
    monkeypatch.setattr(checkpoints, "VERSION", 1)
    before = newest.read_bytes()
    with pytest.raises(CheckpointError, match="newer primebot"):
        run_training(registry, TrainRequest(resume=str(out.run_dir), iterations=9, progress=False))
    assert newest.read_bytes() == before and not (out.run_dir / "model_9.pt").exists()


def test_a_damaged_newest_checkpoint_is_kept_aside_not_overwritten_on_resume(tmp_path):
    import pointmass_task

    from primebot.pipeline.hooks.host import load_plugins
    from primebot.pipeline.train.session import TrainRequest, run_training

    registry = load_plugins(extra=[("pointmass", pointmass_task)]).registry
    out = run_training(registry,
                       TrainRequest(task="pointmass", num_envs=8, iterations=7,
                                    log_dir=str(tmp_path),
                                              progress=False))
    damaged = (out.run_dir / "model_7.pt").read_bytes()[:500]
    (out.run_dir / "model_7.pt").write_bytes(damaged)
    run_training(registry, TrainRequest(resume=str(out.run_dir), iterations=7, progress=False))
    assert (out.run_dir / "model_7.pt.corrupt").read_bytes() == damaged
    assert load_checkpoint(out.run_dir / "model_7.pt")["iteration"] == 7


def test_a_checkpoint_of_another_run_is_refused_by_name(tmp_path):
    from primebot.pipeline.train.checkpoints import require_same_run

    payload = {**_payload(), "run_id": "a" * 32}
    with pytest.raises(CheckpointError, match="model_3.pt belongs to another run") as info:
        require_same_run(payload, "b" * 32, tmp_path / "model_3.pt")
    assert "move it out" in info.value.fix
    require_same_run(payload, "a" * 32, "model_3.pt")  # its own run


def test_a_checkpoint_without_a_run_identity_is_refused(tmp_path):
    from primebot.pipeline.train.checkpoints import require_same_run

    with pytest.raises(CheckpointError, match="model_3.pt carries no run identity") as info:
        require_same_run(_payload(), "b" * 32, tmp_path / "model_3.pt")
    assert "retrain" in info.value.fix
