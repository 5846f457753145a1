"""Regular (unrolled automaton) encoding: its unit propagation is the exact line solver.

Generated lines (clue from a random line or from another line, random known cells): unit
propagation under the known cells as assumptions fixes exactly the cells the line solver fixes,
and conflicts exactly when the line solver finds no completion. Generated small puzzles: unit
propagation on the whole CNF equals the line-solving fixpoint, and every model is the solution.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from pysat.solvers import Solver

from nonolab.sat.encodings import get_encoding, resolve_encodings
from nonolab.sat.encodings.regular import encode_regular, line_clauses, transitions
from nonolab.sat.linesolver import (
    EMPTY,
    FILLED,
    UNKNOWN,
    Contradiction,
    propagation_fixpoint,
    solve_line_cells,
)
from nonolab.sat.puzzles import Puzzle, line_clue

U, E, F = UNKNOWN, EMPTY, FILLED


def _unit_propagation(clauses, nvars, assumptions=()):
    """Return (ok, literals) of unit propagation on ``clauses`` under ``assumptions``.

    The solver reports only literals implied beyond the root level, so every clause is guarded
    by a fresh selector that is assumed first: propagation is unchanged and all of it reported.
    """
    g = nvars + 1
    with Solver(name="minisat22", bootstrap_with=[[*cl, -g] for cl in clauses]) as s:
        return s.propagate(assumptions=[g, *assumptions])


def _propagated(clue, cells):
    """Cells fixed by unit propagation of the line's CNF under ``cells`` (None on conflict)."""
    n = len(cells)
    clauses: list = []
    nvars = line_clauses(tuple(clue), range(1, n + 1), n + 1, clauses) - 1
    assumptions = [i + 1 if v == F else -(i + 1) for i, v in enumerate(cells) if v != U]
    ok, lits = _unit_propagation(clauses, nvars, assumptions)
    if not ok:
        return None
    out = [U] * n
    for lit in lits:
        if 0 < abs(lit) <= n:
            out[abs(lit) - 1] = F if lit > 0 else E
    for i, v in enumerate(cells):  # assumptions are not always echoed back: keep them
        if v != U:
            out[i] = v
    return out


def _completions(clue, n):
    return [c for c in itertools.product((0, 1), repeat=n) if list(line_clue(c)) == list(clue)]


def test_hand_line_overlap():
    # clue 3 in 4 cells: the middle two are filled in every completion; nothing else is known
    assert _propagated((3,), [U] * 4) == [U, F, F, U]
    # 1 1 in 3 cells: the only completion is 101
    assert _propagated((1, 1), [U] * 3) == [F, E, F]
    # a filled first cell for clue 2 in 4 cells fixes 1100
    assert _propagated((2,), [F, U, U, U]) == [F, F, E, E]
    # contradictions
    assert _propagated((2,), [U, E, U, E]) is None
    assert _propagated((), [U, F]) is None


def test_automaton_is_the_clue():
    # the unrolled automaton's runs are exactly the completions of the empty line
    for clue, n in [((1,), 3), ((2, 1), 5), ((1, 1, 1), 6), ((), 3), ((4,), 4)]:
        trans = transitions(clue, n)
        runs = {((0,), ())}
        for i in range(n):
            runs = {
                (qs + (q2,), word + (a,))
                for qs, word in runs
                for q, a, q2 in trans[i]
                if qs[-1] == q
            }
        m = sum(clue) + max(len(clue) - 1, 0)
        words = sorted(w for qs, w in runs if qs[-1] == m)
        assert words == sorted(_completions(clue, n)), (clue, n)


lines = st.integers(min_value=1, max_value=10).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([U, U, E, F]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(lines, st.booleans())
def test_unit_propagation_equals_line_solver(data, from_truth):
    cells, truth = data
    clue = line_clue(truth) if from_truth else line_clue([c == F for c in cells])
    assert _propagated(clue, cells) == solve_line_cells(clue, cells), (clue, cells)


grids = st.integers(2, 5).flatmap(
    lambda h: st.integers(2, 5).flatmap(
        lambda w: st.lists(
            st.lists(st.integers(0, 1), min_size=w, max_size=w), min_size=h, max_size=h
        )
    )
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(grids)
def test_puzzle_unit_propagation_is_the_line_fixpoint(grid):
    p = Puzzle.from_grid(grid)
    enc = encode_regular(p)
    try:
        fix = propagation_fixpoint(p).to_cells()
    except Contradiction:  # cannot happen for clues read off a grid
        raise AssertionError("clues of a grid contradict") from None
    ok, lits = _unit_propagation(enc.clauses, enc.nvars)
    assert ok
    got = [[U] * p.width for _ in range(p.height)]
    for lit in lits:
        if 0 < abs(lit) <= enc.n_cells:
            r, c = divmod(abs(lit) - 1, p.width)
            got[r][c] = F if lit > 0 else E
    assert got == fix
    with Solver(name="minisat22", bootstrap_with=enc.clauses) as s:
        assert s.solve()
        sol = enc.decode(s.get_model())
    assert [list(line_clue(r)) for r in sol] == [list(c) for c in p.rows]
    assert [list(line_clue(col)) for col in zip(*sol, strict=True)] == [list(c) for c in p.cols]


def test_registered():
    assert get_encoding("regular") is not None
    assert "regular" in resolve_encodings("registered")
