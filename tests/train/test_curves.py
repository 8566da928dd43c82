"""train.png: the same curves as report.html, one grid, from the logger's rows (numbers and
blanks)."""

from __future__ import annotations

import math

from PIL import Image

from primebot.pipeline.train.training_curves import curve_specs, render_grid, series

HEADER = ["iteration", "episode_return", "reward_mean", "loss_value", "loss_surrogate",
          "randomization/strength",
          "episode_length", "verdict/success_rate", "verdict/mpkpe_m", "verdict/statue_mpkpe_m"]


def _rows(count: int) -> list[dict]:
    rows = []
    for it in range(1, count + 1):
        checked = it % 5 == 0  # the verdict columns are blank between checks
        rows.append({"iteration": it, "episode_return": 0.1 * it, "reward_mean": 0.01 * it,
                     "loss_value": 1 / it,
                     "loss_surrogate": -0.01, "randomization/strength": 1.0,
                     "episode_length": 10 + it,
                     "verdict/success_rate": 0.5 if checked else None,
                     "verdict/mpkpe_m": 0.05 / it if checked else None,
                     "verdict/statue_mpkpe_m": 0.06 if checked else None})
    return rows


def test_the_verdict_checks_are_a_curve_of_their_own():
    verdict = {spec.stem: spec for spec in curve_specs(HEADER)}["verdict"]
    assert verdict.left == ("verdict/mpkpe_m", "verdict/statue_mpkpe_m")
    assert verdict.right == ("verdict/success_rate",)
    assert "verdict" not in {spec.stem for spec in curve_specs(["iteration", "episode_return"])}


def test_the_checks_pushed_episodes_are_a_curve_all_of_them_and_by_side():
    header = [*HEADER, "verdict/robust_success_rate", "verdict/robust_forward",
              "verdict/robust_left"]
    pushed = {spec.stem: spec for spec in curve_specs(header)}["pushed"]
    assert pushed.left == ("verdict/robust_success_rate", "verdict/robust_forward",
                           "verdict/robust_left")
    assert "pushed" not in {spec.stem for spec in curve_specs(HEADER)}


def test_series_skip_blank_unparsable_and_non_finite_values():
    rows = [{"iteration": 1, "x": 1.0}, {"iteration": 2, "x": None}, {"iteration": 3, "x": ""},
            {"iteration": 4, "x": "nan"}, {"iteration": 5, "x": "oops"},
            {"iteration": 6, "x": "2.5"},
            {"iteration": 7, "x": math.inf}]
    assert series(rows, "x") == ([1.0, 6.0], [1.0, 2.5])


def test_train_png_draws_every_curve_the_header_gives(tmp_path):
    path = tmp_path / "train.png"
    render_grid(HEADER, _rows(20), path)
    with Image.open(path) as image:
        width, height = image.size
    rows_of_panels = math.ceil(len(curve_specs(HEADER)) / 3)
    assert rows_of_panels == 2 and width > height  # five curves: two rows of three
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically


def test_nothing_is_drawn_before_the_first_row(tmp_path):
    render_grid(HEADER, [], tmp_path / "train.png")
    assert not (tmp_path / "train.png").exists()
