"""What an action means, as docs/deploy.md tells a deployer: the wiring table against the one source
(sim/task.ACTION_TARGET_FORMULA) and against the targets the bundle runner sends, every metadata key
documented, and the mjlab-format file driven mjlab's way giving the primebot-format file's
targets."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import onnxruntime as ort
import pytest
from tracking_run import Q1_XML, REPO, tracking_host, train_tiny_run

from primebot.pipeline.deploy import loop
from primebot.pipeline.deploy.deploy_bundle import run_bundle
from primebot.pipeline.deploy.joint_hal import hold_joint_targets
from primebot.pipeline.deploy.onnx_policy import (
    ACTION_OFFSET_BAKED,
    initial_last_action,
    load_policy,
)
from primebot.pipeline.deploy.sim2sim import TrackingEpisode, prepare, run_episode
from primebot.pipeline.evaluate.metrics import EpisodeMetrics
from primebot.pipeline.export.export_run import export_run
from primebot.pipeline.export.graph import read_metadata
from primebot.pipeline.robot.model import load_robot_model, robot_indices
from primebot.pipeline.sim.task import (
    ACTION_OFFSET_DEFAULT,
    ACTION_OFFSET_REFERENCE,
    ACTION_OFFSET_SERVO_TARGET,
    ACTION_TARGET_FORMULA,
)

DOCS = REPO / "docs" / "deploy.md"
POSITION_ROW = re.compile(r"position, `action_offset: (\w+)`")
FORMULA = re.compile(r"joint_pos_target = (\w+) \+ action_scale \* actions\b")


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the table whose header line starts with ``header``, separator
    dropped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def documented_formulas() -> dict[str, str]:
    """action_offset → the formula the docs' wiring table gives for the position field."""
    rows = markdown_table(DOCS.read_text(encoding="utf-8"), "| joint command field | value |")
    return {m.group(1): value.strip("`") for key, value in rows
            if (m := POSITION_ROW.fullmatch(key))}


SERVO_TARGET = ("task.actions.offset=servo_target",)
"""The tiny run trained with the servo-target offset (docs/tasks.md, "Actions")."""


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """The tiny run exported in both formats (two copies of the same trained run), and the tiny run
    trained with the servo-target offset, exported in both formats."""
    host = tracking_host()
    out = {}
    for name, sets, export_format in (("primebot", (), "primebot"), ("mjlab", (), "mjlab"),
                                      ("servo_target", SERVO_TARGET, "primebot"),
                                      ("servo_target_mjlab", SERVO_TARGET, "mjlab")):
        run_dir = train_tiny_run(tmp_path_factory.mktemp(name), host, sets)
        export_run(host.registry, run_dir, rollout_steps=1, latency_repeats=5,
                   export_format=export_format)
        out[name] = run_dir / "export"
    return out


def recorded_episode(monkeypatch, onnx_path, start: int,
                     steps: int) -> tuple[list, list, TrackingEpisode]:
    """Run one runner episode; return per policy step (obs, time_step, actions) and the targets the
    loop sent."""
    setup = prepare(onnx_path, Q1_XML)
    calls, targets = [], []

    class Recording:
        def run(self, names, feed):
            out = setup.session.run(names, feed)
            calls.append((feed["obs"][0].copy(), int(feed["time_step"][0, 0]),
                          out[0][0].astype(np.float64)))
            return out

    monkeypatch.setattr(loop, "hold_joint_targets",
                        lambda robot, data, meta, target, substeps: (
                            targets.append(target.copy()),
                            hold_joint_targets(robot, data, meta, target, substeps)))
    episode = run_episode(replace(setup, session=Recording()), start, steps,
                          EpisodeMetrics(1, setup.control_dt))
    return calls, targets, episode


def test_the_docs_wiring_table_is_the_one_source_word_for_word():
    assert documented_formulas() == ACTION_TARGET_FORMULA
    text = DOCS.read_text(encoding="utf-8")
    # the old, wrong wiring row
    assert "`default_joint_pos[i] + action_scale[i] · actions[i]`" not in text


def test_the_docs_wiring_table_gives_the_targets_the_bundle_runner_sends(bundles, monkeypatch):
    """Each documented formula, evaluated on the runner's own actions, is what the runner sent to
    the joints."""
    checked = set()
    for bundle in bundles.values():
        meta = load_policy(bundle / "policy.onnx")[1]
        offset = meta["action_offset"]
        origin_name = FORMULA.match(documented_formulas()[offset]).group(1)
        calls, targets, episode = recorded_episode(monkeypatch, bundle / "policy.onnx", 40, 6)
        assert len(calls) == len(targets) == 6
        for (_, t, actions), sent in zip(calls, targets, strict=True):
            origin = {name: episode.reference[name][t] for name in ("joint_pos", "servo_target")
                      if name in episode.reference}
            origin["default_joint_pos"] = meta["default_joint_pos"]
            np.testing.assert_allclose(sent, origin[origin_name] + meta["action_scale"] * actions,
                                       rtol=0, atol=1e-12)
        checked.add(offset)
    # primebot format, mjlab format, the servo-target offset
    assert checked == {ACTION_OFFSET_REFERENCE, ACTION_OFFSET_DEFAULT, ACTION_OFFSET_SERVO_TARGET}


def test_every_metadata_key_the_export_writes_is_documented(bundles):
    rows = markdown_table(DOCS.read_text(encoding="utf-8"), "| key | example (q1) |")
    documented = {key for cell, _ in rows for key in re.findall(r"`(\w+)`", cell)}
    written = set()
    for bundle in bundles.values():
        written |= set(read_metadata(bundle / "policy.onnx"))
    assert written - documented == set(), (
        "metadata keys the export writes that docs/deploy.md does not list"
    )
    assert documented - written == set(), "keys docs/deploy.md lists that no tracking export writes"


def test_training_and_the_runner_leave_joint_targets_unclipped(bundles, spec):
    """docs/deploy.md: neither clips targets to the joint range (the MJCF's joint limits stop the
    joint)."""
    setup = prepare(bundles["primebot"] / "policy.onnx", Q1_XML)
    episode = TrackingEpisode(setup, EpisodeMetrics(1, setup.control_dt))
    big = np.full(len(setup.meta["joint_names"]), 40.0)
    _, sent = episode.targets(10, big)
    assert (sent > setup.meta["joint_pos_upper"]).any()
    np.testing.assert_array_equal(sent,
                                  setup.reference["joint_pos"][10]
                                  + setup.meta["action_scale"] * big)
    model = load_robot_model(spec)  # training's servos: ctrl is the target, not limited to a range
    assert not model.actuator_ctrllimited[robot_indices(model, spec).actuator_ids].any()


def _mjlab_way(session: ort.InferenceSession, meta: dict, obs_rows: list,
               steps: list) -> list[np.ndarray]:
    """Targets from the mjlab-format file as mjlab's deploy code computes them: the previous
    ``actions`` output fed back as the observation's actions term (zero at the start), target =
    default + scale·actions."""
    names = meta["observation_names"]
    begin = meta["observation_offsets"][names.index("actions")]
    columns = slice(begin, begin + meta["observation_sizes"][names.index("actions")])
    previous = np.zeros(len(meta["joint_names"]), np.float32)
    targets = []
    for obs, t in zip(obs_rows, steps, strict=True):
        obs = obs.copy()
        obs[columns] = previous
        actions = session.run(["actions"],
                              {"obs": obs[None], "time_step": np.array([[t]], np.float32)})[0][0]
        targets.append(meta["default_joint_pos"]
                       + meta["action_scale"] * actions.astype(np.float64))
        previous = actions
    return targets


MJLAB_PAIRS = [("mjlab", "primebot", ACTION_OFFSET_REFERENCE),
               ("servo_target_mjlab", "servo_target", ACTION_OFFSET_SERVO_TARGET)]
"""(the mjlab-format bundle, the primebot-format bundle of the same run, the offset it trained
with)."""


@pytest.mark.parametrize(("mjlab", "primebot", "trained"), MJLAB_PAIRS)
def test_the_mjlab_format_driven_mjlabs_way_gives_the_primebot_formats_targets(
    bundles, monkeypatch, mjlab, primebot, trained
):
    session, meta = load_policy(bundles[mjlab] / "policy.onnx")
    assert meta["action_offset"] == ACTION_OFFSET_DEFAULT and meta[ACTION_OFFSET_BAKED] == trained
    assert load_policy(bundles[primebot] / "policy.onnx")[1]["action_offset"] == trained
    calls, targets, _ = recorded_episode(monkeypatch, bundles[primebot] / "policy.onnx", 0, 30)
    got = _mjlab_way(session, meta, [obs for obs, _, _ in calls], [t for _, t, _ in calls])
    assert len(got) == len(targets) > 10
    for k, (a, b) in enumerate(zip(got, targets, strict=True)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5, err_msg=f"policy step {k}")


@pytest.mark.parametrize(("mjlab", "primebot", "trained"), MJLAB_PAIRS)
def test_the_mjlab_format_in_the_runner_from_a_later_start(bundles, monkeypatch, mjlab, primebot,
                                                           trained):
    """The runner feeds a baked graph the action that stands for 'none' at a later start step, and
    both files then give the same targets; closed loop, both score alike."""
    first = {}
    for name in (mjlab, primebot):
        _, targets, episode = recorded_episode(monkeypatch, bundles[name] / "policy.onnx", 120, 3)
        first[name] = targets
        if name == mjlab:
            meta = episode.meta
            origin = episode.reference["joint_pos" if trained == ACTION_OFFSET_REFERENCE
                                       else "servo_target"]
            want = (origin[119] - meta["default_joint_pos"]) / meta["action_scale"]
            np.testing.assert_allclose(episode.first_action(120), want)
            np.testing.assert_array_equal(
                initial_last_action(meta, episode.reference, np.array([0])), 0.0
            )
    for a, b in zip(first[mjlab], first[primebot], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    reports = {name: run_bundle(bundles[name], [0, 120]) for name in (mjlab, primebot)}
    for group in ("from_start", "sampled"):
        a, b = reports[mjlab][group], reports[primebot][group]
        assert a["success_rate"] == b["success_rate"]
        assert a["mean_episode_length"] == pytest.approx(b["mean_episode_length"], abs=1)
