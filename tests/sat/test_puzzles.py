import pytest
from hypothesis import given
from hypothesis import strategies as st

from nonolab.sat.puzzles import Puzzle, PuzzleError, line_clue, puzzle_hash


def test_line_clue_hand_cases():
    assert line_clue([0, 1, 1, 0, 1]) == (2, 1)
    assert line_clue([0, 0, 0]) == ()
    assert line_clue([1, 1, 1]) == (3,)


def test_hash_ignores_label_solution_and_zero_clue_spelling():
    a = Puzzle(rows=[[1], [0]], cols=[[1], []], label="a")
    b = Puzzle(rows=[[1], []], cols=[[1], [0]], solution=[[1, 0], [0, 0]], label="b")
    assert a.hash == b.hash == puzzle_hash([[1], []], [[1], []])
    assert len(a.hash) == 64


def test_hash_distinguishes_transpose():
    a = Puzzle.from_grid([[1, 1], [0, 0]])
    b = Puzzle.from_grid([[1, 0], [1, 0]])
    assert a.hash != b.hash


def test_contradicting_solution_is_refused_with_the_line():
    with pytest.raises(PuzzleError, match="row 0"):
        Puzzle(rows=[[2], []], cols=[[1], [1]], solution=[[1, 0], [0, 1]], label="bad")


def test_overlong_clue_is_refused():
    with pytest.raises(PuzzleError, match="needs 5 cells"):
        Puzzle(rows=[[2, 2], [1]], cols=[[1], [1], [1]], label="long")


@given(st.lists(st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=3, max_size=3))
def test_from_grid_roundtrip(grid):
    p = Puzzle.from_grid(grid)
    assert [list(r) for r in p.solution] == grid
    assert Puzzle(p.rows, p.cols).hash == p.hash
