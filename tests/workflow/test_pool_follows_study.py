"""The candidate pool follows the study's puzzles: their grid size and filled cells, or, for
puzzles of several sizes, no pool stages and a stated reason (results/pool/skipped.json)."""

from __future__ import annotations

import json

import pytest
from snake import snakemake
from synth_study import good_session, puzzle_file_content, write_study

from nonolab.measure.sweep import study_pool_grid
from nonolab.sat.puzzles import Puzzle, load_study_puzzles

GRID_4X5 = [[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 0, 1], [0, 0, 1, 1, 1]]


@pytest.mark.parametrize("filled", [[3, 5, 4], [7], [2, 9, 4, 6]])
def test_pool_grid_is_the_studys_size_and_median_filled(filled):
    rng = __import__("numpy").random.default_rng(len(filled))
    puzzles = []
    for k in filled:
        cells = rng.permutation(16) < k
        puzzles.append(Puzzle.from_grid(cells.reshape(4, 4).astype(int).tolist()))
    grid, reason = study_pool_grid(puzzles)
    assert reason is None
    assert grid == {"height": 4, "width": 4, "filled": sorted(filled)[(len(filled) - 1) // 2]}


def test_several_sizes_give_a_reason_and_no_grid():
    puzzles = [Puzzle.from_grid(g) for g in ([[1, 0], [1, 1]], GRID_4X5)]
    grid, reason = study_pool_grid(puzzles)
    assert grid is None and "2 grid sizes (2x2, 4x5)" in reason


def test_the_example_study_keeps_the_papers_pool():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "data/example-study/nonograms_6.json"
    assert study_pool_grid(load_study_puzzles(path)) == (
        {"height": 10, "width": 10, "filled": 50},
        None,
    )


def _dry_run(study, tmp_path):
    # the pool is a simulation extra (config `extras`): asked for here
    config = {"study_dir": study, "extras": ["pool"]}
    res = snakemake("all", directory=tmp_path / "run", config=config, opts=["-n"])
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return res.stdout


def test_workflow_skips_the_pool_for_several_sizes_and_says_why(tmp_path):
    content = puzzle_file_content()
    content.append(
        {"id": 3, "solution": GRID_4X5, "clues": Puzzle.from_grid(GRID_4X5).clues_dict()}
    )
    study = write_study(tmp_path / "study", {"p1": good_session()}, puzzles=content)
    out = _dry_run(study, tmp_path)
    assert "pool_skipped" in out and "pool_shard" not in out
    res = snakemake(
        "results/pool/skipped.json", directory=tmp_path / "run", config={"study_dir": study}
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    rec = json.loads((tmp_path / "run/results/pool/skipped.json").read_text())
    assert rec["pool"] == "skipped" and "2 grid sizes (3x3, 4x5)" in rec["reason"]


def test_workflow_generates_a_pool_for_one_size(tmp_path):
    study = write_study(tmp_path / "study", {"p1": good_session()})
    out = _dry_run(study, tmp_path)
    assert "pool_shard" in out and "pool_skipped" not in out
