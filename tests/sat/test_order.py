"""Order (ladder) encoding: exact solution counts on exhaustive small grids, property tests,
restricted encodings."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from pysat.solvers import Solver

from nonolab.sat.encodings import get_encoding
from nonolab.sat.encodings.order import SKIP, encode, encode_order, packed_ranges
from nonolab.sat.linesolver import GridState, line_placements, propagate
from nonolab.sat.puzzles import Puzzle, satisfies


def _all_solutions(enc, limit=1000):
    out = []
    with Solver(name="cadical195", bootstrap_with=enc.clauses) as s:
        while s.solve() and len(out) < limit:
            m = s.get_model()
            out.append(enc.decode(m))
            s.add_clause(enc.blocking_clause(m))
    return out


def test_registered():
    assert get_encoding("order") is encode


def test_packed_ranges():
    assert packed_ranges((2, 1), 6) == [(0, 2), (3, 5)]
    assert packed_ranges((3,), 3) == [(0, 0)]
    assert packed_ranges((), 4) == []


def test_exhaustive_3x3_solution_counts():
    """Every 3x3 grid: the CNF's models are exactly the grids with the same clues."""
    groups: Counter = Counter()
    for bits in itertools.product((0, 1), repeat=9):
        groups[Puzzle.from_grid([bits[0:3], bits[3:6], bits[6:9]])] += 1
    for p, n in groups.items():
        sols = _all_solutions(encode(p))
        assert len(sols) == n == len(set(sols))
        assert all(satisfies(p, g) for g in sols)


grids = st.integers(1, 6).flatmap(
    lambda h: st.integers(1, 6).flatmap(
        lambda w: st.lists(
            st.lists(st.integers(0, 1), min_size=w, max_size=w), min_size=h, max_size=h
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(grids)
def test_models_decode_to_grids_with_the_same_clues(grid):
    p = Puzzle.from_grid(grid)
    enc = encode(p)
    assert enc.nvars >= p.height * p.width
    assert all(0 < abs(x) <= enc.nvars for cl in enc.clauses for x in cl)
    assert all(1 <= len(cl) <= 4 for cl in enc.clauses)
    sols = _all_solutions(enc, limit=50)
    assert p.solution in sols
    assert all(satisfies(p, g) for g in sols)


@settings(max_examples=100, deadline=None)
@given(grids)
def test_restricted_encoding_has_the_same_solutions(grid):
    """Restricting to propagation's known cells and feasible placements keeps every solution."""
    p = Puzzle.from_grid(grid)
    s = propagate(p)
    full = sorted(_all_solutions(encode(p), limit=200))
    rpl = [
        SKIP
        if (s.row_fill[r] | s.row_empty[r]) == (1 << p.width) - 1
        else line_placements(p.rows[r], p.width, s.row_fill[r], s.row_empty[r])
        for r in range(p.height)
    ]
    cpl = [
        SKIP
        if (s.col_fill[c] | s.col_empty[c]) == (1 << p.height) - 1
        else line_placements(p.cols[c], p.height, s.col_fill[c], s.col_empty[c])
        for c in range(p.width)
    ]
    enc = encode_order(p, known=s.to_cells(), row_placements=rpl, col_placements=cpl)
    assert sorted(_all_solutions(enc, limit=200)) == full


def test_restricted_hand_case():
    # a 1x6 row [2, 1] with cell 4 known empty; columns fix the row's cells
    p = Puzzle.from_grid([[1, 1, 0, 1, 0, 0]])
    st_ = GridState.blank(1, 6)
    st_.set(0, 4, 0)
    pl = line_placements(p.rows[0], 6, 0, 1 << 4)
    assert pl == [[0, 1, 2], [3, 5]]
    enc = encode_order(p, known=st_.to_cells(), row_placements=[pl], col_placements=[SKIP] * 6)
    # without column clauses the row alone admits starts (0,3),(0,5),(1,5),(2,5) and cell 4 empty
    sols = _all_solutions(enc)
    rows = sorted("".join(map(str, g[0])) for g in sols)
    assert rows == sorted(["110100", "110001", "011001", "001101"])
