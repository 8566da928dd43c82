"""report.html: self-contained, every image and video loads in a real browser, metrics as computed.

The browser test needs Chromium (``apt-get install -y chromium``); CI must
install it. Without it that one test is skipped and says so.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from primebot.pipeline.report.page import headline_metrics, write_report
from primebot.pipeline.stages.contract import Stage
from primebot.pipeline.stages.presets import resolve_settings
from primebot.pipeline.stages.record import StageRecord, new_record
from primebot.pipeline.train.training_curves import curve_specs

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)

TRAIN_COLUMNS = [
    "iteration", "env_steps", "reward_mean", "episode_return", "episode_length", "loss_surrogate",
    "loss_value",
    "entropy", "approx_kl", "clip_fraction", "learning_rate", "action_std", "sps", "collect_s",
    "transfer_s",
    "update_s", "elapsed_s", "episode/anchor_pos_error_exp", "episode/body_pos_error_exp",
    "episode/action_rate_l2",
    "episode/finished", "episode/length", "terminations/anchor_height", "terminations/time_out",
]


def _episode(failure, length, mpkpe):
    return {"failure": failure, "length": length, "start_step": 0, "mpkpe_m": mpkpe,
            "mpkpe_root_relative_m": mpkpe,
            "joint_pos_error_rad": 0.1, "joint_vel_error_rad_s": 1.0, "ee_pos_error_m": mpkpe,
            "anchor_pos_error_m": 0.02, "anchor_ori_error_rad": 0.05}


def make_run_dir(root: Path, *, video: bool = True) -> Path:
    """A run directory as the pipeline leaves it: pipeline.json, train.csv, eval/sim2sim JSON, a
    real H.264 video."""
    # non-ASCII and a space: URLs must be encoded
    run_dir = root / "logs" / "挥手 wave" / "2026-01-01_00-00-00"
    run_dir.mkdir(parents=True)
    names = ["validate", "replay", "smoke", "train", "evaluate", "export", "sim2sim"]
    stages = [(Stage(n, lambda ctx: None, description=f"the {n} stage"), "stages.builtin")
              for n in names]
    record = new_record(run_dir, resolve_settings("motions/wave.npz", preset="quick"), stages)
    record.status = "done"
    for r in record.stages:
        r.status, r.duration_s, r.total_s, r.attempts = "done", 1.5, 1.5, 1
    record.stage("replay").outputs = {"video": "videos/replay.mp4"}
    record.stage("sim2sim").warnings = ["sim2sim gap: sampled mpkpe_m: +0.06"]
    record.stage("smoke").summary = {"device": "cpu", "probe": {"matmul_gflops": 20.0}}
    record.save()
    with open(run_dir / "train.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, TRAIN_COLUMNS)
        writer.writeheader()
        for it in range(1, 13):
            row = {key: f"{0.1 * it + k:.3f}" for k, key in enumerate(TRAIN_COLUMNS)}
            row["iteration"] = str(it)
            # no finished episode yet
            row["episode_return"] = "" if it == 1 else row["episode_return"]
            writer.writerow(row)
    (run_dir / "eval.json").write_text(json.dumps({
        "from_start": {"episodes": 1, "success_rate": 1.0, "mpkpe_m": 0.03},
        "overall": {"episodes": 4, "success_rate": 0.75, "fall_rate": 0.25, "mpkpe_m": 0.05,
                    "failures": {"anchor_height": 1}},
    }))
    (run_dir / "sim2sim.json").write_text(json.dumps({
        "loop": {"physics_hz": 1000.0, "policy_hz": 50.0},
        "from_start": {"episode_records": [_episode(None, 100, 0.04)]},
        "sampled": {"episode_records": [_episode(None, 50, 0.06),
                                        _episode("anchor_height", 10, 0.2)]},
    }))
    if video:
        from primebot.pipeline.motion.replay import write_video

        frames = (np.full((48, 64, 3), (40 * k) % 255, dtype=np.uint8) for k in range(25))
        write_video(frames, run_dir / "videos" / "replay.mp4", 50.0, (64, 48))
        shutil.copy(run_dir / "videos" / "replay.mp4", run_dir / "videos" / "eval.mp4")
    return run_dir


def test_headline_metrics_pool_every_sim2sim_episode_once():
    doc = {"loop": {"policy_hz": 50.0},
           "from_start": {"episode_records": [_episode(None, 100, 0.04)]},
           "sampled": {"episode_records": [_episode(None, 50, 0.06),
                                           _episode("anchor_height", 10, 0.2)]}}
    metrics = headline_metrics(doc)
    assert metrics["episodes"] == 3
    assert metrics["success_rate"] == pytest.approx(2 / 3)
    assert metrics["fall_rate"] == pytest.approx(1 / 3)
    assert metrics["mpkpe_m"] == pytest.approx((0.04 + 0.06 + 0.2) / 3)
    assert metrics["mean_episode_length_s"] == pytest.approx(160 / 3 * 0.02)
    assert headline_metrics({"overall": {"success_rate": 0.5}}) == {"success_rate": 0.5}
    assert headline_metrics(None) == {}


def test_curves_cover_reward_terms_episode_length_and_losses_from_the_csv_header():
    specs = {spec.stem: spec for spec in curve_specs(TRAIN_COLUMNS)}
    assert specs["reward_terms"].left == ("episode/anchor_pos_error_exp",
                                          "episode/body_pos_error_exp",
                                          "episode/action_rate_l2")
    assert specs["losses"].left == ("loss_surrogate",) and specs["losses"].right == ("loss_value",)
    assert specs["episode_length"].left == ("episode_length",)
    assert "reward_terms" not in {s.stem for s in curve_specs(["iteration", "reward_mean"])}


def test_report_is_self_contained_and_links_only_files_of_the_run(tmp_path):
    run_dir = make_run_dir(tmp_path)
    page = write_report(run_dir).read_text(encoding="utf-8")
    links = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert links, "the report links nothing"
    assert not [link for link in links if re.match(r"[a-z]+:", link) or link.startswith("/")]
    from urllib.parse import unquote

    for link in links:
        assert (run_dir / unquote(link)).is_file(), link
    assert "<script" not in page and "@import" not in page
    assert {"report/reward.png", "report/reward_terms.png", "report/episode_length.png",
            "report/losses.png"} <= set(links)
    # Cards: sim2sim pooled (2/3 success fails the 0.9 target), eval from "overall".
    assert "67%" in page and "evaluate 75%" in page and "target ≥ 90%" in page
    assert 'class="card fail"' in page
    assert "sim2sim gap: sampled mpkpe_m" in page


def test_a_stage_row_says_a_sentence_of_its_message_once(tmp_path):
    run_dir = make_run_dir(tmp_path, video=False)
    doc = json.loads((run_dir / "pipeline.json").read_text(encoding="utf-8"))
    reason = "success < 0.90 at push 0.44 m/s: 0.38 (20 of 32 episodes fail)"
    doc["stages"][-1].update(message=f"NOT ROBUST: {reason}", summary={
        "robust": False, "robust_reason": reason,
        "stress_sentence": "The policy survives 8 of 12 standard perturbations."})
    (run_dir / "pipeline.json").write_text(json.dumps(doc), encoding="utf-8")
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert page.count("20 of 32 episodes fail") == 1
    assert "robust False" in page and "survives 8 of 12 standard perturbations" in page


# CI installs Chromium (tools/setup.sh --dev), so there a missing browser is a failure, not a skip.
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="needs Chromium for a real-browser check: apt-get install -y chromium",
)
def test_report_images_and_videos_load_in_headless_chromium(tmp_path):
    assert CHROMIUM is not None, "Chromium is missing: tools/setup.sh --dev installs it"
    run_dir = make_run_dir(tmp_path)
    page = write_report(run_dir).read_text(encoding="utf-8")
    # A copy of the real page with a probe that records what the browser loaded.
    probe = """<script>
    window.addEventListener('load', () => {
      const vids = [...document.querySelectorAll('video')];
      Promise.all(vids.map(v => new Promise(done => {
        if (v.readyState >= 1 || v.error) return done();
        v.addEventListener('loadedmetadata', done); v.addEventListener('error', done);
      }))).then(() => {
        const out = {
          images: [...document.images].map(i => ({src: i.getAttribute('src'),
                                                  width: i.naturalWidth})),
          videos: vids.map(v => ({src: v.getAttribute('src'), readyState: v.readyState,
                                  error: v.error && v.error.code, width: v.videoWidth,
                                  duration: v.duration})),
        };
        const pre = document.createElement('pre');
        pre.id = 'probe'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
      });
    });
    </script>"""
    probe_page = run_dir / "probe.html"
    probe_page.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
         "--dump-dom",
         probe_page.as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "the probe did not run: " + dom[-2000:]
    import html as html_lib

    result = json.loads(html_lib.unescape(match.group(1)))
    assert len(result["images"]) >= 6
    assert all(img["width"] == 640 for img in result["images"]), result["images"]
    assert [v["src"].split("/")[-1] for v in result["videos"]] == ["replay.mp4", "eval.mp4"]
    for video in result["videos"]:
        assert video["error"] is None and video["readyState"] >= 1 and video["width"] == 64, video
        assert video["duration"] == pytest.approx(0.5, abs=0.05)


def test_a_report_for_a_run_without_training_or_videos_says_what_is_missing(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = new_record(run_dir, resolve_settings("m.npz"),
                        [(Stage("validate", lambda c: None), "p")])
    record.stages[0] = StageRecord("validate", status="failed",
                                   error={"type": "MotionError", "message": "bad frame 3",
                                                                      "fix": "re-export"})
    record.status = "failed"
    record.save()
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "No training curves yet" in page and "No videos" in page and "No evaluation yet" in page
    assert "bad frame 3" in page and "fix: re-export" in page
    assert "primebot pipeline run --resume" in page
