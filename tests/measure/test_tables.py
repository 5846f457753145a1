"""Tables of the SAT toolkit's results (nonolab.measure.tables): puzzle tables, the paper's
pool selection."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nonolab.measure.puzzle_files import read_puzzles
from nonolab.measure.tables import puzzles_from_table, select_study_puzzles
from nonolab.sat.formats import FormatError
from nonolab.sat.formats import read_puzzles as read_puzzle_file
from nonolab.sat.puzzles import Puzzle, PuzzleError

ROWS = ((2,), (2,))
COLS = ((1,), (2,), (1,))
SOLUTION = ((1, 1, 0), (0, 1, 1))


def test_table_reader():
    p = Puzzle(ROWS, COLS, solution=SOLUTION, label="3")
    df = pd.DataFrame(
        {
            "puzzle_id": ["3"],
            "puzzle_hash": [p.hash],
            "clues_json": [json.dumps(p.clues_dict())],
            "solution_json": [json.dumps([list(r) for r in SOLUTION])],
        }
    )
    (got,) = puzzles_from_table(df)
    assert got == p and got.solution == SOLUTION and got.label == "3"
    with pytest.raises(PuzzleError, match="puzzle_hash does not match"):
        puzzles_from_table(df.assign(puzzle_hash="0" * 64))


def test_read_puzzles_tables_and_other_files(tmp_path):
    """Tables (.csv, .parquet) are read here; the pandas-free reader of nonolab.sat refuses
    them by name; every other format goes through it unchanged."""
    p = Puzzle(ROWS, COLS, solution=SOLUTION, label="3")
    df = pd.DataFrame({"puzzle_id": ["3"], "clues_json": [json.dumps(p.clues_dict())]})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        (got,) = read_puzzles(tmp_path / name)
        assert got == Puzzle(ROWS, COLS) and got.label == "3"
        with pytest.raises(FormatError, match="nonolab.measure.puzzle_files.read_puzzles"):
            read_puzzle_file(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        read_puzzles(tmp_path / "missing.csv")
    (tmp_path / "p.nin").write_text("3 2\n2\n2\n1\n2\n1\n", encoding="utf-8")
    assert read_puzzles(tmp_path / "p.nin") == read_puzzle_file(tmp_path / "p.nin")


def _pool(conflicts: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {"pool_index": range(len(conflicts)), "conflicts": conflicts, "decisions": 0}
    )


def test_selection_hand_computed():
    # 20 puzzles: conflicts 0..19; drop floor(20*0.05)=1 (19); kept 0..18, median 9
    df = _pool(list(range(20)))
    sel = select_study_puzzles(df)
    assert sel["pool_index"].tolist() == [0, 1, 9, 8, 18, 17]
    assert sel["selection"].tolist() == ["lowest"] * 2 + ["median"] * 2 + ["highest"] * 2
    assert sel["selection_rank"].tolist() == [0, 1] * 3
    assert (sel["pool_median"] == 9).all()


def test_selection_ties_in_order_and_no_repeats():
    # ties broken by row order; the median group may not reuse lowest/highest rows
    df = _pool([5, 0, 0, 0, 7, 7, 3, 3, 100, 7])
    sel = select_study_puzzles(df, n_drop_frac=0.1)  # drop index 8 (100)
    # kept values 5,0,0,0,7,7,3,3,7 -> median 3
    assert sel["pool_index"].tolist() == [1, 2, 6, 7, 4, 5]


def test_selection_random_ties_seeded():
    df = _pool([0] * 10 + [5] * 10 + [9] * 10)
    a = select_study_puzzles(df, tie_break="random", rng=np.random.default_rng(3))
    b = select_study_puzzles(df, tie_break="random", rng=np.random.default_rng(3))
    assert a.equals(b)
    assert a.groupby("selection")["conflicts"].first().to_dict() == {
        "lowest": 0,
        "median": 5,
        "highest": 9,
    }
    with pytest.raises(ValueError, match="needs rng"):
        select_study_puzzles(df, tie_break="random")


def test_selection_errors():
    with pytest.raises(ValueError, match="too small"):
        select_study_puzzles(_pool([1, 2, 3]))
    with pytest.raises(ValueError, match="not a column"):
        select_study_puzzles(_pool(list(range(10))), metric="nope")


@pytest.mark.study
def test_selection_reproduces_published_groups(study_dir):
    # The published six in pool order with their MiniSat22 conflicts: 0, 0, 4, 4, 15, 15.
    pub = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv", index_col=0)
    sel = select_study_puzzles(pub, n_drop_frac=0.0)
    groups = dict(zip(sel["puzzle_id"], sel["selection"], strict=True))
    assert groups == {
        2: "lowest",
        21: "lowest",
        1789: "median",
        58: "median",
        142: "highest",
        378: "highest",
    }
