"""``primebot compare``: runs side by side, on a real trained, exported and stress-tested run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from tracking_run import Q1_XML, export_tiny_run

from primebot.pipeline.cli import main
from primebot.pipeline.deploy.stress import StressPlan, stress_run_dir
from primebot.pipeline.errors import ConfigError
from primebot.pipeline.report.compare import (
    comparison,
    format_comparison,
    read_run,
    resolve_run_dir,
)
from primebot.pipeline.rundir import ARGS_FILE


@pytest.fixture(scope="module")
def stressed(tmp_path_factory) -> Path:
    """A tiny tracking run, exported and stress-tested at its standard levels (one start each)."""
    _, run_dir, _ = export_tiny_run(tmp_path_factory.mktemp("logs"))
    stress_run_dir(run_dir, Q1_XML, StressPlan(starts=1, window_s=1.0, standard_only=True,
                                                confirm_starts=0))
    return run_dir


def _copy(run_dir: Path, to: Path, **config) -> Path:
    """A copy of ``run_dir`` whose args.yaml config has ``config`` changed."""
    copy = shutil.copytree(run_dir, to)
    args = yaml.safe_load((copy / ARGS_FILE).read_text(encoding="utf-8"))
    args["config"].update(config)
    (copy / ARGS_FILE).write_text(yaml.safe_dump(args), encoding="utf-8")
    return copy


def _rows(*runs: Path) -> dict[str, list[str]]:
    return dict(comparison([read_run(r) for r in runs]))


def test_two_runs_show_the_setting_they_differ_in_and_what_each_policy_is_worth(
        stressed, tmp_path, capsys):
    other = _copy(stressed, tmp_path / "seed7" / "2026-01-01_00-00-00", seed=7)
    rows = _rows(stressed, other)
    seed = yaml.safe_load((stressed / ARGS_FILE).read_text())["config"]["seed"]
    assert rows["set seed"] == [str(seed), "7"]
    assert not [label for label in rows if label.startswith("set ") and label != "set seed"]
    assert rows["run"][1] == "seed7"  # a timestamped run directory is named by its folder
    assert rows["robot"] == ["q1", "q1"] and rows["motion"][0].endswith(".npz")
    assert rows["training"][0].endswith(" it.") or " min" in rows["training"][0]
    stress = json.loads((stressed / "stress.json").read_text())
    standard = [c for c in stress["cells"] if c["standard"]]
    replay = sum(c["replay"]["success_rate"] >= 0.9 for c in standard)
    assert rows["stress"][0].endswith(f"of {len(standard)} standard levels (replay {replay})")
    push = next(c for c in standard if c["family"] == "push")
    assert rows[f"  push {push['label']}"][0] == (
        f"{push['policy']['success_rate']:.2f} of {push['policy']['episodes']} "
        f"({push['replay']['success_rate']:.2f})")
    assert rows["exported policy"][0].startswith("iteration ")
    # the command prints the same table; --json the same rows
    assert main(["compare", str(stressed), str(tmp_path / "seed7")]) == 0
    assert capsys.readouterr().out.strip() == format_comparison(list(rows.items()))
    assert main(["compare", "--json", str(stressed), str(other)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"] == rows["run"] and {"label": "set seed", "values": rows["set seed"]} in doc[
        "rows"]


def test_a_result_of_another_policy_is_left_out_and_named(stressed, tmp_path):
    # stress.json as an older policy of the run left it (a rerun of train whose stress stage has
    # not run yet): not shown as the run's
    other = shutil.copytree(stressed, tmp_path / "retrained")
    stress = json.loads((other / "stress.json").read_text(encoding="utf-8"))
    stress["policy"]["checkpoint_digest"] = "0" * 64
    (other / "stress.json").write_text(json.dumps(stress), encoding="utf-8")
    rows = _rows(stressed, other)
    assert "stale, left out: stress.json" in rows["status"][1]
    assert rows["stress"][1] == "—" and rows["stress"][0] != "—"
    assert rows["exported policy"][1].startswith("iteration ")  # its export is the policy's


def test_a_folder_of_runs_is_its_newest_and_anything_else_is_named(stressed, tmp_path):
    logs = tmp_path / "logs" / "bow"
    _copy(stressed, logs / "2026-01-01_00-00-00")
    newest = _copy(stressed, logs / "2026-02-01_00-00-00")
    assert resolve_run_dir(logs) == newest
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="empty is not a run directory") as caught:
        resolve_run_dir(tmp_path / "empty")
    assert "pipeline run" in str(caught.value)
    assert main(["compare", str(tmp_path / "empty")]) == ConfigError.exit_code


def test_strings_from_a_run_directory_are_printed_escaped(stressed, tmp_path):
    hostile = _copy(stressed, tmp_path / "hostile", robot="q1\x1b[2J\nrm -rf")
    text = format_comparison(comparison([read_run(hostile)]))
    assert "\x1b" not in text and "\\x1b[2J\\nrm -rf" in text


def test_result_files_of_another_shape_are_missing_figures_not_a_traceback(stressed, tmp_path):
    broken = shutil.copytree(stressed, tmp_path / "broken")
    (broken / "pipeline.json").write_text(json.dumps({"status": 3, "stages": [1, "x"],
                                                      "settings": []}))
    stress = json.loads((broken / "stress.json").read_text(encoding="utf-8"))
    stress.update(verdict=[], cells=[None, {"standard": True, "policy": 5, "replay": []}, 7])
    (broken / "stress.json").write_text(json.dumps(stress), encoding="utf-8")
    rows = _rows(broken)
    assert rows["status"] == ["unreadable"] and rows["stress"] == ["—: 0 of 1 standard levels "
                                                                   "(replay 0)"]


@pytest.mark.parametrize("sides", [("forward", "left", "backward", "right"),
                                   ("backward", "right", "forward", "left")])
def test_the_checks_are_summed_up_by_side_and_by_how_many_tracked(stressed, tmp_path, sides):
    """train.csv's columns come in the order they first had a value, which differs from run to
    run: the row's order is always the same, so that runs side by side share one row."""
    run = shutil.copytree(stressed, tmp_path / "sides")
    values = {"forward": (0.25, 0.5), "left": (1.0, 1.0), "backward": (0.0, 0.5),
              "right": (0.75, 1.0)}
    header = ["iteration", "elapsed_s", "verdict/robust_success_rate",
              *(f"verdict/robust_{side}" for side in sides), "verdict/tracked", "verdict/mpkpe_m"]
    checks = [  # iteration, all, the four sides, tracked, MPKPE; a row between checks is empty
        [25, 60.0, 0.5, *(values[side][0] for side in sides), 1, 0.008],
        [26, 61.0, "", "", "", "", "", "", ""],
        [50, 120.0, 0.75, *(values[side][1] for side in sides), 0, 0.010],
    ]
    lines = [",".join(header)] + [",".join(map(str, row)) for row in checks]
    (run / "train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = _rows(run)
    assert rows["checks under the push by side, mean: forward / left / backward / right"] == [
        "0.38 / 1.00 / 0.25 / 0.88"]
    assert rows["checks tracked"] == ["1 of 2 (median MPKPE 9.0 mm)"]
    assert rows["checks under the push: median, all / last ten"] == ["0.62 / 0.62 (2 checks)"]
