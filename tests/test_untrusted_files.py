"""Untrusted motion files: a typed error naming the file, never a traceback, and a bounded cost
(limits)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.errors import MotionError
from primebot.pipeline.hooks.host import reset_host
from primebot.pipeline.limits import MAX_DECODED_BYTES, MAX_MOTION_FRAMES
from primebot.pipeline.motion.convert import resample
from primebot.pipeline.motion.format import load_motion, save_motion

WAVE = Path(__file__).resolve().parents[1] / "motions" / "wave.npz"


@pytest.fixture(autouse=True)
def fresh_host(clean_env):
    reset_host()
    yield
    reset_host()


def test_a_single_npy_renamed_npz_is_named_as_such(tmp_path):
    path = tmp_path / "one.npz"
    np.save(tmp_path / "one.npy", np.zeros(3))
    shutil.move(tmp_path / "one.npy", path)
    with pytest.raises(MotionError, match="single array"):
        load_motion(path)


def test_a_zip_bomb_is_refused_before_anything_is_decoded(tmp_path):
    arrays = dict(np.load(WAVE))
    # compresses to ~0.3 MB
    arrays["joint_pos"] = np.zeros((MAX_DECODED_BYTES // 4 // 100 + 10, 100), np.float32)
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, **arrays)
    assert path.stat().st_size < 2 << 20
    with pytest.raises(MotionError, match="over primebot's limit"):
        load_motion(path)


def test_an_array_header_larger_than_its_entry_is_refused(tmp_path):
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header,
                                         {"descr": "<f4", "fortran_order": False,
                                          "shape": (10**9, 40)})
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("joint_pos.npy", header.getvalue() + b"\0" * 64)
    with pytest.raises(MotionError, match="declares shape"):
        load_motion(path)


@pytest.mark.parametrize("fps", [float("nan"), float("inf"), 0.0])
def test_resample_to_a_non_finite_or_zero_rate_is_a_motion_error(fps):
    joints = np.zeros((10, 2))
    with pytest.raises(MotionError, match="frame rate must be a positive number"):
        resample(50.0, fps, np.zeros((10, 3)), np.tile([1.0, 0, 0, 0], (10, 1)), joints)


def test_resample_to_a_huge_rate_is_refused_before_allocating():
    with pytest.raises(MotionError, match=f"over primebot's limit of {MAX_MOTION_FRAMES:,}"):
        resample(50.0, 1e7, np.zeros((10, 3)), np.tile([1.0, 0, 0, 0], (10, 1)), np.zeros((10, 2)))


@pytest.mark.parametrize("args", [
    ["motion", "resample", "{wave}", "--fps", "nan", "-o", "{tmp}/o.npz"],
    ["motion", "resample", "{wave}", "--fps", "1e7", "-o", "{tmp}/o.npz"],
    ["motion", "convert", "{tmp}/binary.csv", "--input-fps", "30"],
    ["motion", "convert", "{tmp}/text.csv", "--input-fps", "nan"],
    ["motion", "validate", "{tmp}/single.npz"],
    ["motion", "replay", "{tmp}/nan.npz", "-o", "{tmp}/nan.mp4"],
],
ids=["resample-nan", "resample-1e7", "convert-binary", "convert-fps-nan", "validate-npy",
     "replay-nan"])
def test_commands_give_a_typed_error_not_a_traceback(tmp_path, capsys, args):
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "text.csv").write_text("0,0,0.8,0,0,0,1" + ",0" * 20 + "\n" + "0,0,0.8,0,0,0,1"
                                       + ",0" * 20 + "\n")
    np.save(tmp_path / "single.npy", np.zeros(3))
    shutil.move(tmp_path / "single.npy", tmp_path / "single.npz")
    motion = load_motion(WAVE)
    motion.joint_pos[5, 2] = np.nan
    save_motion(motion, tmp_path / "nan.npz")
    code = main([a.format(wave=WAVE, tmp=tmp_path) for a in args])
    err = capsys.readouterr().err
    assert code == 5, err
    assert "Traceback" not in err
    assert not (tmp_path / "nan.mp4").exists()


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (np.array([1.0, 2.0]), "must be a 1-D array of strings"),
        (np.array(["ppo.gamma"]), "must read KEY=VALUE"),
        (np.array(["=0.9"]), "must read KEY=VALUE"),
    ],
)
def test_training_overrides_that_are_no_key_value_strings_are_refused(tmp_path, stored, message):
    path = tmp_path / "bad.npz"
    with np.load(WAVE, allow_pickle=False) as data:
        np.savez(path, **{key: data[key] for key in data.files}, training_overrides=stored)
    with pytest.raises(MotionError, match=message) as err:
        load_motion(path)
    assert err.value.key == "training_overrides" and str(path) in str(err.value)
