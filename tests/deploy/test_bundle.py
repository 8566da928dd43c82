"""The deploy bundle: completeness, deploy.yaml = metadata, the torch-free runner, fp16, mjlab
format, time index."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml
from torch_free import run_sim2sim_without_torch
from tracking_run import Q1_XML, tracking_host, train_tiny_run

import primebot.pipeline.export.export_run as export_module
from primebot.pipeline.deploy.deploy_bundle import bundle_mjcf, verify_bundle
from primebot.pipeline.deploy.onnx_policy import parse_metadata
from primebot.pipeline.deploy.sim2sim import sim2sim_run_dir
from primebot.pipeline.errors import ExportError
from primebot.pipeline.export.export_run import FP16_ACTIONS_ATOL, closed_loop_gate, export_run
from primebot.pipeline.export.graph import MOTION_OUTPUTS, PARITY_ATOL, format_value, read_metadata
from primebot.pipeline.motion.format import file_sha256, load_motion

MJLAB_TRACKING_KEYS = (
    "run_path", "joint_names", "joint_stiffness", "joint_damping", "default_joint_pos",
    "command_names",
    "observation_names", "observation_terms_scale", "observation_terms_flatten_history_dim",
    "observation_terms_history_length", "observation_terms_clip", "action_scale",
    "anchor_body_name", "body_names",
)
"""The metadata keys mjlab's exporter writes for a tracking policy (its base keys plus anchor and
bodies)."""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    host = tracking_host()
    run_dir = train_tiny_run(tmp_path_factory.mktemp("logs"), host)
    result = export_run(host.registry, run_dir, rollout_steps=2, latency_repeats=5, fp16=True)
    return host, run_dir, result


@pytest.fixture(scope="module")
def mjlab_bundle(tmp_path_factory):
    host = tracking_host()
    run_dir = train_tiny_run(tmp_path_factory.mktemp("logs"), host)
    return run_dir, export_run(host.registry, run_dir, rollout_steps=2, latency_repeats=5,
                               export_format="mjlab")


def test_the_bundle_holds_policy_robot_model_motion_deploy_yaml_and_readme(bundle):
    _, run_dir, result = bundle
    out = run_dir / "export"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["README.md", "deploy.yaml", "export.json", "policy.onnx", "policy_fp16.onnx",
                     "robot/q1.xml",
                     "wave.npz"]
    # the trained-on model, byte for byte
    assert (out / "robot" / "q1.xml").read_bytes() == Q1_XML.read_bytes()
    meta = read_metadata(result.onnx_path)
    assert meta["robot_mjcf"] == "robot/q1.xml" and meta["robot_mjcf_sha256"] == file_sha256(Q1_XML)
    document = verify_bundle(out)
    assert document["files"]["mjcf"]["sha256"] == file_sha256(Q1_XML)
    assert document["files"]["policy"]["sha256"] == file_sha256(result.onnx_path)
    readme = (out / "README.md").read_text()
    assert (
        "python -m primebot.pipeline.bundle ." in readme
        and "robot/q1.xml" in readme
        and "TensorRT" in readme
    )


def test_a_changed_or_missing_bundle_file_is_named(bundle, tmp_path):
    import shutil

    _, run_dir, _ = bundle
    copy = tmp_path / "export"
    shutil.copytree(run_dir / "export", copy)
    (copy / "robot" / "q1.xml").write_text((copy / "robot" / "q1.xml").read_text()
                                           + "<!-- edited -->")
    (copy / "wave.npz").unlink()
    with pytest.raises(ExportError) as info:
        verify_bundle(copy)
    assert "mjcf: robot/q1.xml has changed since export" in str(info.value)
    assert "motion: wave.npz is missing" in str(info.value)


def test_deploy_yaml_holds_every_metadata_key_with_the_same_value(bundle):
    _, _, result = bundle
    raw = read_metadata(result.onnx_path)
    document = yaml.safe_load(result.deploy_path.read_text())
    assert set(document["metadata"]) == set(raw)
    for key, value in document["metadata"].items():
        assert format_value(value) == raw[key], key
    meta = parse_metadata(raw)
    assert [j["kp"] for j in document["joints"]] == list(meta["joint_stiffness"])
    assert [j["lower"] for j in document["joints"]] == list(meta["joint_pos_lower"])
    bodies = document["bodies"]
    assert (
        bodies["motion_outputs"] == meta["body_names"]
        and bodies["tracked"] == meta["tracked_body_names"]
    )
    assert (bodies["root"], bodies["anchor"]) == (meta["root_body_name"], meta["anchor_body_name"])
    assert document["imu"]["body"] == meta["root_body_name"] == "pelvis"
    assert document["termination"]["anchor_height"]["threshold"] == float(
        meta["termination_anchor_height"]
    )
    assert document["control"]["training_physics_dt"] == meta["training_physics_dt"]
    assert document["policy"]["bind_outputs_by"].startswith("name")
    assert document["reference_check"]["start_steps"] == [0]  # no eval.json at export time


def test_the_reference_runner_reproduces_sim2sim_without_torch(bundle, tmp_path):
    import shutil

    _, run_dir, _ = bundle
    expected = sim2sim_run_dir(run_dir, Q1_XML)  # the run's sim2sim.json, on the original MJCF
    moved = tmp_path / "robot-computer" / "policy"
    shutil.copytree(run_dir / "export", moved)  # the bundle travels as a folder
    out = tmp_path / "runner.json"
    run_sim2sim_without_torch([moved, "--output", out], module="bundle")
    got = json.loads(out.read_text())
    assert got["checks_passed"] and got["mjcf"] == str(moved / "robot" / "q1.xml")
    assert got["from_start"] == expected["from_start"]


def test_fp16_variant_passes_its_parity_and_closed_loop_gate(bundle):
    _, run_dir, result = bundle
    fp16 = result.fp16
    for diffs in fp16["parity_max_abs_diff"].values():
        assert 0 < diffs["actions"] <= FP16_ACTIONS_ATOL
        # the reference stays float32
        assert all(diffs[name] <= PARITY_ATOL for name in MOTION_OUTPUTS)
    loop = fp16["closed_loop"]["from_start"]
    assert loop["fp16"]["fall_rate"] <= loop["fp32"]["fall_rate"]
    types = {i.data_type for i in onnx.load(str(fp16["path"])).graph.initializer
             if len(i.dims) == 2}
    assert onnx.TensorProto.FLOAT16 in types
    session = ort.InferenceSession(str(fp16["path"]), providers=["CPUExecutionProvider"])
    # float32 in, as policy.onnx
    assert [i.type for i in session.get_inputs()] == ["tensor(float)"] * 2
    assert parse_metadata(read_metadata(fp16["path"]))["precision"] == "fp16"


def test_closed_loop_gate_names_a_worse_fp16_policy():
    fp32 = {"checks_passed": True,
            "from_start": {"fall_rate": 0.0, "success_rate": 1.0, "mpkpe_m": 0.03}}
    same = json.loads(json.dumps(fp32))
    assert closed_loop_gate(fp32, same)[1] == []
    worse = {"checks_passed": True,
             "from_start": {"fall_rate": 1.0, "success_rate": 0.0, "mpkpe_m": 0.05}}
    problems = closed_loop_gate(fp32, worse)[1]
    assert problems[0].startswith("from_start: fp16 fall rate 1 > fp32 0")
    assert "mpkpe_m 0.05 vs fp32 0.03" in problems[1]


def test_a_rejected_fp16_file_leaves_a_consistent_fp32_bundle(bundle, monkeypatch):
    host, run_dir, _ = bundle
    monkeypatch.setattr(export_module, "closed_loop_gate", lambda a,
                        b: ({}, ["from_start: as if it fell"]))
    with pytest.raises(ExportError, match="as if it fell"):
        export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5, fp16=True)
    out = run_dir / "export"
    assert (out / "policy_fp16.rejected.onnx").is_file() and not (out / "policy_fp16.onnx").exists()
    assert "policy_fp16" not in verify_bundle(out)["files"]


def test_mjlab_format_reads_as_mjlab_documents_it(mjlab_bundle):
    run_dir, result = mjlab_bundle
    model = onnx.load(str(result.onnx_path))
    assert model.opset_import[0].version == 18
    session = ort.InferenceSession(str(result.onnx_path), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert set(MJLAB_TRACKING_KEYS) <= set(meta)
    # read the way mjlab's format is written: comma-separated strings, numbers parsed as floats
    csv = {key: meta[key].split(",") for key in MJLAB_TRACKING_KEYS
           if key not in ("run_path", "anchor_body_name")}
    joints, bodies = csv["joint_names"], csv["body_names"]
    for key in ("joint_stiffness", "joint_damping", "default_joint_pos", "action_scale"):
        assert len([float(v) for v in csv[key]]) == len(joints) == 22
    assert csv["command_names"] == ["motion"]
    terms = csv["observation_names"]
    assert [float(v) for v in csv["observation_terms_scale"]] == [1.0] * len(terms)
    assert [float(v) for v in csv["observation_terms_history_length"]] == [0.0] * len(terms)
    assert [float(v) for v in csv["observation_terms_flatten_history_dim"]] == [1.0] * len(terms)
    assert [tuple(map(float, c.split(";"))) for c in csv["observation_terms_clip"]] == [
        (-np.inf, np.inf)
    ] * len(terms)
    assert meta["anchor_body_name"] in bodies and len(bodies) == 14  # the tracked bodies only
    # a static batch of 1, inputs obs/time_step, the body axis that of body_names
    assert [i.shape for i in session.get_inputs()] == [[1, 119], [1, 1]]
    out = dict(zip([o.name for o in session.get_outputs()],
                   session.run(None,
                               {"obs": np.zeros((1, 119), np.float32),
                                "time_step": np.array([[7.0]], np.float32)}),
                   strict=True))
    motion = load_motion(run_dir / "export" / "wave.npz")
    ids = [list(motion.body_names).index(b) for b in bodies]
    np.testing.assert_array_equal(out["body_pos_w"][0],
                                  motion.body_pos_w[7][ids].astype(np.float32))
    assert out["actions"].shape == (1, 22)


def test_the_mjlab_format_bundle_runs_in_the_deploy_loop(mjlab_bundle):
    from primebot.pipeline.deploy.deploy_bundle import run_bundle

    run_dir, _ = mjlab_bundle
    report = run_bundle(run_dir / "export", [0])
    assert report["checks_passed"] and report["from_start"]["episodes"] == 1


def test_time_step_nan_and_inf_are_defined(bundle):
    _, run_dir, result = bundle
    session = ort.InferenceSession(str(result.onnx_path), providers=["CPUExecutionProvider"])
    steps = np.array([[np.nan], [np.inf], [-np.inf], [2.7], [-3.0], [1e9], [5.0]], np.float32)
    joint_pos = session.run(["joint_pos"],
                            {"obs": np.zeros((len(steps), 119), np.float32), "time_step": steps})[0]
    motion = load_motion(run_dir / "export" / "wave.npz")
    last = result.metadata["motion_num_steps"] - 1
    want = motion.joint_pos[[0, last, 0, 2, 0, last, 5]].astype(np.float32)
    np.testing.assert_array_equal(joint_pos, want)
    ops = {n.op_type for n in onnx.load(str(result.onnx_path)).graph.node}
    clips = [n for n in onnx.load(str(result.onnx_path)).graph.node if n.op_type == "Clip"]
    # one Clip, on the float step, before the cast to int64
    assert "IsNaN" in ops and len(clips) == 1


def test_bundle_mjcf_copies_included_files_and_assets(tmp_path):
    src = tmp_path / "src"
    (src / "parts").mkdir(parents=True)
    (src / "meshes").mkdir()
    (src / "meshes" / "box.obj").write_text(
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    (src / "parts" / "body.xml").write_text(
        '<mujoco><worldbody><body name="b"><freejoint/><geom type="mesh" '
        'mesh="box"/></body></worldbody></mujoco>')
    (src / "robot.xml").write_text(
        '<mujoco><compiler meshdir="meshes"/><asset><mesh name="box" file="box.obj"/></asset>'
        '<include file="parts/body.xml"/></mujoco>')
    model = bundle_mjcf(src / "robot.xml", tmp_path / "out")
    assert model.file == "robot/robot.xml" and model.assets == ["robot/meshes/box.obj",
                                                                "robot/parts/body.xml"]
    # every asset with its SHA-256: verify_bundle checks each
    assert model.assets_sha256 == {a: file_sha256(tmp_path / "out" / a) for a in model.assets}
    compiled = mujoco.MjModel.from_xml_path(str(tmp_path / "out" / model.file))
    assert compiled.nmesh == 1 and compiled.nbody == 2

    (src / "outside.xml").write_text('<mujoco><asset><mesh name="m" '
                                     'file="/abs/box.obj"/></asset></mujoco>')
    with pytest.raises(ExportError, match="outside its folder"):
        bundle_mjcf(src / "outside.xml", tmp_path / "out2")


@pytest.mark.parametrize("entry, words", [
    ({"file": "/etc/passwd", "sha256": "0" * 64}, "/etc/passwd is not a path inside the bundle"),
    ({"file": "../../../etc/hostname", "sha256": "0" * 64},
     "../../../etc/hostname is not a path inside the bundle"),
    ({"file": "policy.onnx"}, "policy.onnx has no SHA-256"),
    ({"file": "outside.onnx", "sha256": "0" * 64}, "outside.onnx leads out of the bundle (a link)"),
], ids=["absolute", "dotdot", "no-sha256", "symlink"])
def test_the_bundle_runner_refuses_deploy_yaml_entries_that_leave_the_bundle_or_skip_the_check(
        bundle, tmp_path, entry, words, capsys):
    """deploy.yaml is as untrusted as the files it lists: an absolute or ../ path must not make the
    runner hash and load a file outside the bundle, nor an entry without sha256 skip the check."""
    import shutil

    from primebot.pipeline.deploy.deploy_bundle import main as bundle_main

    _, run_dir, _ = bundle
    copy = tmp_path / "export"
    shutil.copytree(run_dir / "export", copy)
    (tmp_path / "elsewhere.onnx").write_bytes((copy / "policy.onnx").read_bytes())
    (copy / "outside.onnx").symlink_to(tmp_path / "elsewhere.onnx")
    document = yaml.safe_load((copy / "deploy.yaml").read_text())
    document["files"]["policy"] = entry
    (copy / "deploy.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(ExportError, match="unsafe") as info:
        verify_bundle(copy)
    assert words in str(info.value)
    assert bundle_main([str(copy)]) == 2
    assert words in capsys.readouterr().err


def test_sim2sim_refuses_an_export_of_another_run(bundle, tmp_path):
    import shutil

    from primebot.pipeline.deploy.onnx_policy import Sim2SimError

    _, run_dir, _ = bundle
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "sim2sim.json").unlink(missing_ok=True)
    args = yaml.safe_load((copy / "args.yaml").read_text())
    args["run"]["id"] = "f00d" * 8  # the bundle now comes from another run than this directory's
    (copy / "args.yaml").write_text(yaml.safe_dump(args))
    with pytest.raises(Sim2SimError, match="was exported from another run"):
        sim2sim_run_dir(copy, Q1_XML)
    assert not (copy / "sim2sim.json").exists()
