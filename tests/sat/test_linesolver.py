"""Line solver: hand-checked lines, brute force cross-check, propagation, probing, metrics."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.sat.linesolver import (
    EMPTY,
    FILLED,
    UNKNOWN,
    Contradiction,
    GridState,
    line_metrics,
    line_placements,
    probe,
    propagate,
    solve_line,
    solve_line_cells,
)
from nonolab.sat.puzzles import Puzzle, check_solution, line_clue

U, E, F = UNKNOWN, EMPTY, FILLED


# --- hand-checked single lines -----------------------------------------------------------------


def test_overlap_rule_single_block():
    # block of 3 in 5 cells: the middle cell is in every placement
    assert solve_line_cells([3], [U] * 5) == [U, U, F, U, U]


def test_full_line_and_empty_line():
    assert solve_line_cells([2, 2], [U] * 5) == [F, F, E, F, F]
    assert solve_line_cells([], [U] * 4) == [E] * 4
    assert solve_line_cells([0], [U] * 3) is not None  # normalisation happens in Puzzle


def test_known_cells_propagate():
    # [1] with the last cell filled: everything else is empty
    assert solve_line_cells([1], [U, U, U, F]) == [E, E, E, F]
    # [2] with cell 1 empty in 4 cells: block must be at 2-3
    assert solve_line_cells([2], [U, E, U, U]) == [E, E, F, F]
    # [1, 1] in 3 cells: unique
    assert solve_line_cells([1, 1], [U, U, U]) == [F, E, F]


def test_contradictions():
    assert solve_line_cells([3], [U, E, U, U]) is None
    assert solve_line_cells([1], [F, U, F]) is None
    assert solve_line_cells([], [U, F]) is None
    assert solve_line_cells([2, 1], [U, U, U]) is None


def test_placements_hand_case():
    # [2,1] in 6 cells, blank: block 0 starts 0..2, block 1 at 3..5
    assert line_placements((2, 1), 6, 0, 0) == [[0, 1, 2], [3, 4, 5]]
    # cell 0 filled forces block 0 at 0; block 1 anywhere from 3
    assert line_placements((2, 1), 6, 0b1, 0) == [[0], [3, 4, 5]]
    # cell 4 empty: block 1 cannot start at 4
    assert line_placements((2, 1), 6, 0, 1 << 4) == [[0, 1, 2], [3, 5]]
    assert line_placements((3,), 4, 0, 0b10) is None


# --- brute force cross-check ---------------------------------------------------------------------


def _completions(clue, cells):
    n = len(cells)
    for bits in itertools.product((0, 1), repeat=n):
        if all(c == U or c == b for c, b in zip(cells, bits, strict=True)):
            if line_clue(bits) == tuple(clue):
                yield bits


lines = st.integers(min_value=1, max_value=10).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([U, U, E, F]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n),
    )
)


@settings(max_examples=400, deadline=None)
@given(lines, st.booleans())
def test_dp_equals_brute_force(data, from_truth):
    cells, truth = data
    # half the cases take the clue of a random line (often satisfiable), half of another line
    clue = line_clue(truth) if from_truth else line_clue(cells and [c == F for c in cells])
    comps = list(_completions(clue, cells))
    got = solve_line_cells(clue, cells)
    if not comps:
        assert got is None
        assert _reference_line(tuple(clue), list(cells)) is None
        return
    assert got is not None
    assert _reference_line(tuple(clue), list(cells)) == got  # validates the test's reference too
    for i in range(len(cells)):
        vals = {c[i] for c in comps}
        expect = vals.pop() if len(vals) == 1 else U
        assert got[i] == expect, (clue, cells, i)
    # placements: block j at p iff some completion has block j starting at p
    fill = sum(1 << i for i, v in enumerate(cells) if v == F)
    empty = sum(1 << i for i, v in enumerate(cells) if v == E)
    pl = line_placements(tuple(clue), len(cells), fill, empty)
    expect_pl = [set() for _ in clue]
    for c in comps:
        starts = [i for i in range(len(c)) if c[i] and (i == 0 or not c[i - 1])]
        for j, p in enumerate(starts):
            expect_pl[j].add(p)
    assert [set(x) for x in pl] == expect_pl


# --- propagation and probing ---------------------------------------------------------------------


def test_propagation_solves_small_picture():
    # plus sign: row 1 and column 1 are full (clue 3 of 3), then each [1] line has its cell
    p = Puzzle(rows=[(1,), (3,), (1,)], cols=[(1,), (3,), (1,)])
    s = propagate(p)
    assert s.is_complete()
    assert s.to_grid() == ((0, 1, 0), (1, 1, 1), (0, 1, 0))


def test_two_solution_puzzle_is_not_line_solvable():
    p = Puzzle(rows=[(1,), (1,)], cols=[(1,), (1,)])
    s = propagate(p)
    assert s.n_known() == 0
    m = line_metrics(p)
    assert not m["line_solvable"]
    assert m["probing_depth"] is None  # no logic can pick one of two solutions
    assert not m["solved_by_logic"]


def test_contradiction_detected():
    # row 0 = [2] in 3 cells forces its middle cell, but column 1 is empty
    p = Puzzle(rows=[(2,), ()], cols=[(1,), (), (1,)])
    with pytest.raises(Contradiction):
        propagate(p)


def _probe_case() -> Puzzle:
    """A puzzle that propagation cannot finish but single-cell probing can (found by search)."""
    import random

    rng = random.Random(7)
    for _ in range(20000):
        g = [[int(rng.random() < 0.5) for _ in range(6)] for _ in range(6)]
        p = Puzzle.from_grid(g)
        s = propagate(p)
        if s.is_complete():
            continue
        s1 = probe(p, s.copy())
        if s1.is_complete():
            return p
    raise AssertionError("no probe-solvable 6x6 found")


def test_probing_is_sound_and_metrics_depth_one():
    p = _probe_case()
    s = propagate(p)
    s1 = probe(p, s.copy())
    assert s1.is_complete()
    check_solution(p, s1.to_grid())
    m = line_metrics(p)
    assert m["line_solvable"] is False
    assert m["probing_depth"] == 1
    assert m["cells_solved_by_propagation"] + m["cells_solved_by_probing"] == 36


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1), min_size=5, max_size=5), min_size=4, max_size=4))
def test_propagation_and_probing_never_contradict_the_truth(grid):
    p = Puzzle.from_grid(grid)
    s = propagate(p)
    probe(p, s)
    # every known cell must agree with every solution; the generating grid is one
    for r, c in itertools.product(range(4), range(5)):
        v = s.get(r, c)
        assert v == U or v == grid[r][c]


def test_gridstate_roundtrip():
    cells = [[U, F, E], [E, U, F]]
    s = GridState.from_cells(cells)
    assert s.to_cells() == cells
    assert s.unknown_cells() == [(0, 0), (1, 1)]
    assert solve_line((1,), 3, 0b010, 0) == (0b010, 0b101)


# --- acceptance: gnonograms are line-solvable ------------------------------------------------------


def _read_non(path: Path) -> Puzzle:
    """Minimal .non reader for this test (width/height/rows/columns/goal keys only)."""
    lines = [x.strip() for x in path.read_text(encoding="utf-8").splitlines()]
    w = h = 0
    clues: dict[str, list] = {}
    goal = None
    i = 0
    while i < len(lines):
        key = lines[i].split(" ")[0]
        if key == "width":
            w = int(lines[i].split()[1])
        elif key == "height":
            h = int(lines[i].split()[1])
        elif key in ("rows", "columns"):
            n = h if key == "rows" else w
            clues[key] = [tuple(int(x) for x in lines[i + 1 + j].split(",") if x) for j in range(n)]
            i += n
        elif key == "goal":
            goal = lines[i].split('"')[1]
        i += 1
    sol = [[int(goal[r * w + c] != "0") for c in range(w)] for r in range(h)]
    return Puzzle(rows=clues["rows"], cols=clues["columns"], solution=sol, label=path.name)


def _reference_line(clue, cells):
    """Independent line solver: memoised recursion over (cell, block) collecting the values each
    cell can take (different algorithm and representation from the bit-parallel NFA)."""
    n, k = len(cells), len(clue)

    @cache
    def ok(i, j):  # can blocks j.. be placed in cells i.. ?
        if j == k:
            return all(c != F for c in cells[i:])
        b = clue[j]
        for p in range(i, n - b + 1):
            if any(c == F for c in cells[i:p]):
                break
            if all(c != E for c in cells[p : p + b]) and (p + b == n or cells[p + b] != F):
                if ok(min(p + b + 1, n), j + 1) if p + b < n else j + 1 == k:
                    return True
        return False

    can = [set() for _ in range(n)]

    def walk(i, j):
        # mark values for every completion path (only through feasible states)
        if j == k:
            for x in range(i, n):
                can[x].add(0)
            return
        b = clue[j]
        for p in range(i, n - b + 1):
            if any(c == F for c in cells[i:p]):
                break
            if all(c != E for c in cells[p : p + b]) and (p + b == n or cells[p + b] != F):
                nxt = p + b + 1
                feasible = ok(min(nxt, n), j + 1) if p + b < n else j + 1 == k
                if feasible and (i, j, p) not in seen:
                    seen.add((i, j, p))
                    for x in range(i, p):
                        can[x].add(0)
                    for x in range(p, p + b):
                        can[x].add(1)
                    if p + b < n:
                        can[p + b].add(0)
                    if (min(nxt, n), j + 1) not in seen_state:
                        seen_state.add((min(nxt, n), j + 1))
                        walk(min(nxt, n), j + 1)

    seen: set = set()
    seen_state: set = set()
    if not ok(0, 0):
        return None
    walk(0, 0)
    return [next(iter(v)) if len(v) == 1 else U for v in can]


def _reference_fixpoint(p: Puzzle):
    g = [[U] * p.width for _ in range(p.height)]
    changed = True
    while changed:
        changed = False
        for r in range(p.height):
            new = _reference_line(p.rows[r], g[r])
            assert new is not None
            if new != g[r]:
                g[r] = new
                changed = True
        for c in range(p.width):
            col = [g[r][c] for r in range(p.height)]
            new = _reference_line(p.cols[c], col)
            assert new is not None
            if new != col:
                changed = True
                for r in range(p.height):
                    g[r][c] = new[r]
    return g


def test_reference_line_solver_agrees_on_hand_cases():
    assert _reference_line((3,), [U] * 5) == [U, U, F, U, U]
    assert _reference_line((2, 2), [U] * 5) == [F, F, E, F, F]
    assert _reference_line((1,), [F, U, F]) is None


def test_gnonograms_are_line_solvable(bench_dir):
    """Truth established independently: an independent (memoised-recursion) line solver run to
    its fixpoint completes each grid, the grid equals the shipped goal, and SAT finds no second
    solution; our DP-based metrics must then say line-solvable."""
    from pysat.solvers import Solver

    from nonolab.sat.encodings import get_encoding

    files = sorted((bench_dir / "mikix+nonogram-db/db/gnonograms").glob("*.non"))
    assert len(files) == 7
    for f in files:
        p = _read_non(f)
        ref = _reference_fixpoint(p)
        assert all(U not in row for row in ref), f.name
        assert tuple(map(tuple, ref)) == p.solution, f.name
        enc = get_encoding("order")(p)
        with Solver(name="cadical195", bootstrap_with=enc.clauses) as s:
            assert s.solve()
            assert enc.decode(s.get_model()) == p.solution
            s.add_clause(enc.blocking_clause(s.get_model()))
            assert not s.solve(), f"{f.name}: second solution"
        m = line_metrics(p)
        assert m["line_solvable"], f.name
        assert m["probing_depth"] == 0
        assert propagate(p).to_grid() == p.solution


def test_line_metrics_table():
    from nonolab.measure.tables import line_metrics_table

    plus = Puzzle(rows=[(1,), (3,), (1,)], cols=[(1,), (3,), (1,)], label="plus")
    two = Puzzle(rows=[(1,), (1,)], cols=[(1,), (1,)], label="two")
    bad = Puzzle(rows=[(2,), ()], cols=[(1,), (), (1,)], label="bad")
    df = line_metrics_table([plus, two, bad])
    assert list(df["puzzle_id"]) == ["plus", "two", "bad"]
    assert list(df["puzzle_hash"]) == [plus.hash, two.hash, bad.hash]
    assert list(df["contradiction"]) == [False, False, True]
    assert df.loc[0, "line_solvable"] and df.loc[0, "probing_depth"] == 0
    # plus: row pass sets row 1 (3 cells); columns finish; one more row pass confirms
    assert df.loc[0, "first_sweep_cells"] == 3
    assert df.loc[0, "cells_solved_by_propagation"] == 9
    assert not df.loc[1, "line_solvable"]
    assert df["probing_depth"].isna().tolist() == [False, True, True]


def test_study_puzzles_line_metrics(study_dir):
    from nonolab.measure.tables import line_metrics_table
    from nonolab.sat.puzzles import load_study_puzzles

    df = line_metrics_table(load_study_puzzles(study_dir / "nonograms_6.json"))
    assert len(df) == 6
    # every served puzzle is solvable by propagation alone (checked against its solution)
    assert df["line_solvable"].all()
    for p in load_study_puzzles(study_dir / "nonograms_6.json"):
        assert propagate(p).to_grid() == p.solution
