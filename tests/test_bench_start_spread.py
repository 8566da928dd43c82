"""tools/bench_start_spread.py: the statue's MPKPE over sets of start frames, uniform and
stratified, on the shipped wave (no physics: seconds)."""

from __future__ import annotations


def test_stratified_starts_narrow_the_statue_baseline_on_the_wave(import_tool, repo_root, capsys):
    tool = import_tool("bench_start_spread")
    spread = tool.statue_spread(repo_root / "motions" / "wave.npz", "q1", starts=16, draws=300,
                                seed=1)
    uniform, stratified = spread["uniform"], spread["stratified"]
    assert abs(uniform["mean_mm"] - stratified["mean_mm"]) < 1.0  # the same baseline on average
    assert stratified["sd_mm"] < 0.4 * uniform["sd_mm"]
    assert stratified["p95_mm"] - stratified["p5_mm"] < 0.4 * (uniform["p95_mm"] - uniform["p5_mm"])
    assert tool.main(["wave", "--draws", "50"]) == 0
    assert "wave" in capsys.readouterr().out
