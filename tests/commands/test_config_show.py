"""``primebot config show``: every resolved setting and where it came from; ``train --help`` per
task."""

from __future__ import annotations

import dataclasses

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import reset_host
from primebot.pipeline.motion.format import load_motion, save_motion


def show(capsys, *args) -> dict[str, tuple[str, str]]:
    reset_host()
    assert main(["config", "show", *args]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        setting, source = line.split("  # ")
        key, value = setting.split(maxsplit=1)
        rows[key] = (value.strip(), source)
    return rows


def test_config_show_names_the_source_of_every_setting(capsys, clean_env, tmp_path):
    motion = tmp_path / "carried.npz"
    carried = ("task.terminations.end_effector_height=null",)
    save_motion(dataclasses.replace(load_motion("motions/wave.npz"), training_overrides=carried),
                motion)
    rows = show(capsys, str(motion), "--num-envs", "8", "--preset", "quick",
                "--set", "ppo.gamma=0.9", "--set", "ppo.num_learning_epochs=3")
    assert rows["task"] == ("tracking", "default task") and rows["motion"] == (str(motion),
                                                                               "MOTION")
    assert rows["num_envs"] == ("8", "--num-envs") and rows["iterations"] == ("20", "preset quick")
    assert rows["ppo.gamma"] == ("0.9", "--set") and rows["ppo.num_learning_epochs"] == (
        "3",
        "--set",
    )
    assert rows["policy.actor_hidden"] == ("[256, 128, 64]", "preset quick")
    assert rows["ppo.clip_param"] == ("0.2", "trainer default")
    assert rows["task.terminations.end_effector_height"] == ("null", "motion carried.npz")
    assert rows["task.rewards.body_pos_error_exp.weight"] == ("1.0", "task tracking")
    assert rows["device"][1].startswith("resolved when the run starts")


def test_config_show_gives_each_task_its_trainer_defaults(capsys, clean_env):
    rows = show(capsys, "--task", "walk")
    assert rows["num_envs"] == ("16", "task walk") and rows["iterations"] == ("150", "task walk")
    assert rows["robot"] == ("biped4", "task walk") and rows["task.min_height"][1] == "task walk"


def test_train_help_gives_each_task_s_defaults(capsys, clean_env):
    reset_host()
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "tracking 1024" in text
        and "walk 16" in text
        and "tracking 3000" in text
        and "walk 150" in text
    )
