"""Solver runs: statistics, determinism, budgets, uniqueness against a brute-force enumerator."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nonolab.measure.tables import stats_table
from nonolab.sat.encodings import ENCODINGS, get_encoding
from nonolab.sat.puzzles import Puzzle, line_clue, satisfies
from nonolab.sat.solvers import (
    RECORD_COLUMNS,
    SLICE_CONFLICTS,
    STATS_SOLVERS,
    canonical_solver,
    run_solver,
    solve_puzzle,
    solver_record,
    uniqueness,
)


def brute_force_solutions(puzzle: Puzzle, limit: int | None = None) -> list[tuple]:
    """Every grid satisfying ``puzzle`` (up to ``limit``), by enumerating row patterns.

    Independent of any SAT encoding: each row ranges over all 0/1 patterns with its clue, and
    complete grids are checked against the column clues.
    """
    w = puzzle.width
    options = [
        [pat for pat in itertools.product((0, 1), repeat=w) if line_clue(pat) == clue]
        for clue in puzzle.rows
    ]
    out = []
    for grid in itertools.product(*options):
        if all(line_clue(col) == puzzle.cols[c] for c, col in enumerate(zip(*grid, strict=True))):
            out.append(tuple(grid))
            if limit is not None and len(out) >= limit:
                break
    return out


def _all_encodings() -> list[str]:
    get_encoding("block_start")  # loads every encoding module
    return sorted(ENCODINGS)


grids = st.integers(1, 5).flatmap(
    lambda h: st.integers(1, 5).flatmap(
        lambda w: st.lists(
            st.lists(st.integers(0, 1), min_size=w, max_size=w), min_size=h, max_size=h
        )
    )
)


def _random_puzzle(n: int, seed: int, density: float = 0.5) -> Puzzle:
    rng = np.random.default_rng(seed)
    return Puzzle.from_grid((rng.random((n, n)) < density).astype(int))


def test_brute_force_reference_hand_checked():
    # two diagonals: rows [1],[1], cols [1],[1] -> exactly two grids
    p = Puzzle(rows=[[1], [1]], cols=[[1], [1]])
    assert sorted(brute_force_solutions(p)) == [((0, 1), (1, 0)), ((1, 0), (0, 1))]


def test_canonical_solver_names():
    assert canonical_solver("m22") == "minisat22"
    assert canonical_solver("Glucose42") == "glucose42"
    assert canonical_solver("cd19") == "cadical195"
    with pytest.raises(ValueError, match="unknown solver"):
        canonical_solver("nosuchsolver")


def test_record_columns_and_values():
    p = _random_puzzle(8, 3)
    rec = solver_record(p, "block_start", "g42")
    assert tuple(rec) == RECORD_COLUMNS
    assert rec["puzzle_hash"] == p.hash
    assert rec["solver"] == "glucose42"
    assert rec["status"] == "sat"
    enc = get_encoding("block_start")(p)
    assert (rec["variables"], rec["clauses"]) == (enc.nvars, len(enc.clauses))


def test_stats_deterministic():
    puzzles = [_random_puzzle(12, s) for s in range(3)]
    a = stats_table(puzzles, solvers=STATS_SOLVERS).drop(columns="time_s")
    b = stats_table(puzzles, solvers=STATS_SOLVERS).drop(columns="time_s")
    assert len(a) == 3 * len(STATS_SOLVERS)
    assert a.equals(b)


def test_stats_solvers_report_every_counter():
    # A puzzle that needs search: every kept solver reports decisions, propagations, conflicts.
    enc = get_encoding("block_start")(_random_puzzle(20, 0))
    for name in STATS_SOLVERS:
        res = run_solver(enc.clauses, name)
        assert res.status == "sat", name
        assert res.stats["decisions"] > 0, name
        assert res.stats["propagations"] > res.stats["decisions"], name
        assert res.stats["conflicts"] > 0, name


def test_excluded_maple_solvers_report_no_propagations():
    # Evidence for leaving maplesat/maplecm out of STATS_SOLVERS (docs/decisions.md).
    enc = get_encoding("block_start")(_random_puzzle(20, 0))
    for name in ("maplesat", "maplecm"):
        res = run_solver(enc.clauses, name)
        assert res.status == "sat"
        assert res.stats["conflicts"] > 0 and res.stats["propagations"] == 0


def test_conflict_budget_gives_unknown():
    enc = get_encoding("block_start")(_random_puzzle(30, 1))
    for name in ("minisat22", "cadical195"):
        res = run_solver(enc.clauses, name, conf_budget=5)
        assert res.status == "unknown" and res.model is None, name
    # a generous budget still solves
    assert run_solver(enc.clauses, "minisat22", conf_budget=10**6).status == "sat"


def test_time_limit_gives_unknown():
    # minisat22 needs ~2 s and ~39k conflicts on this 40x40 random grid, cadical195 ~15k
    p = _random_puzzle(40, 2)
    enc = get_encoding("block_start")(p)
    res = run_solver(enc.clauses, "minisat22", time_limit_s=0.05)
    assert res.status == "unknown"
    assert res.time_s < 1.5
    assert uniqueness(p, solver="minisat22", time_limit_s=0.05).status == "unknown"
    # CaDiCaL cannot be interrupted: the clock is checked between conflict slices
    res = run_solver(enc.clauses, "cadical195", time_limit_s=0.01)
    assert res.status == "unknown"
    assert res.stats["conflicts"] <= SLICE_CONFLICTS + 5


def test_budget_errors():
    clauses = [[1, 2]]
    with pytest.raises(ValueError, match="does not support budgets"):
        run_solver(clauses, "lingeling", conf_budget=10)
    with pytest.raises(ValueError, match="conf_budget must be"):
        run_solver(clauses, "minisat22", conf_budget=-1)
    with pytest.raises(ValueError, match="time_limit_s must be"):
        run_solver(clauses, "minisat22", time_limit_s=0)
    assert run_solver(clauses, "lingeling").status == "sat"
    assert run_solver(clauses, "cadical195", time_limit_s=5.0).status == "sat"


def test_unsat_puzzle():
    # row 0 must be 1 0 1, so column 2 is filled, contradicting its empty clue
    p = Puzzle(rows=[[1, 1], []], cols=[[1], [1], []])
    assert brute_force_solutions(p) == []
    for e in _all_encodings():
        u = uniqueness(p, e)
        assert (u.status, u.grid, u.second_grid) == ("unsat", None, None)
        assert solve_puzzle(p, e) == ("unsat", None)


def test_multiple_hand_checked():
    p = Puzzle(rows=[[1], [1]], cols=[[1], [1]])
    u = uniqueness(p)
    assert u.status == "multiple"
    assert {u.grid, u.second_grid} == {((0, 1), (1, 0)), ((1, 0), (0, 1))}


@pytest.mark.study
def test_served_puzzles_unique(study_dir):
    from nonolab.sat.puzzles import load_study_puzzles

    for p in load_study_puzzles(study_dir / "nonograms_6.json"):
        u = uniqueness(p)
        assert u.status == "unique"
        assert u.grid == p.solution


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid=grids)
def test_uniqueness_matches_brute_force(grid: Sequence[Sequence[int]]):
    p = Puzzle.from_grid(grid)
    sols = brute_force_solutions(p, limit=None)
    assert tuple(tuple(r) for r in grid) in sols
    expected = "unique" if len(sols) == 1 else "multiple"
    for e in _all_encodings():
        u = uniqueness(p, e, "minisat22")
        assert u.status == expected, e
        assert u.grid in sols
        if expected == "multiple":
            assert u.second_grid in sols and u.second_grid != u.grid
        else:
            assert u.second_grid is None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    density=st.floats(0.0, 1.0),
)
def test_every_encoding_decodes_to_same_clues(seed, h, w, density):
    rng = np.random.default_rng(seed)
    p = Puzzle.from_grid((rng.random((h, w)) < density).astype(int))
    answers = set()
    for e in _all_encodings():
        enc = get_encoding(e)(p)
        res = run_solver(enc.clauses, "glucose42")
        assert res.status == "sat", e
        grid = enc.decode(res.model or [])
        assert Puzzle.from_grid(grid) == p  # same clues
        assert satisfies(p, grid)
        answers.add(uniqueness(p, e, "cadical195").status)
    assert len(answers) == 1


def test_metrics_and_uniqueness_tables():
    from nonolab.measure.tables import metrics_and_timings, uniqueness_table

    ps = [Puzzle.from_grid(((1, 0), (0, 1)), label="diag"), _random_puzzle(6, 5)]
    ps[1] = Puzzle(ps[1].rows, ps[1].cols, solution=ps[1].solution, label="r")
    m, t = metrics_and_timings(ps, ["block_start"], ["minisat22", "cadical195"])
    assert "time_s" not in m.columns and list(t.columns)[-1] == "time_s"
    assert len(m) == len(t) == 4
    assert (m["puzzle_hash"] == t["puzzle_hash"]).all()
    m2, _ = metrics_and_timings(ps, ["block_start"], ["minisat22", "cadical195"])
    assert m.to_csv(index=False) == m2.to_csv(index=False)  # byte-deterministic
    u = uniqueness_table(ps, ["block_start"])
    assert u.loc[0, "status"] == "multiple" and u.loc[0, "second_grid"] in ("#./.#", ".#/#.")
    expected = "unique" if len(brute_force_solutions(ps[1], limit=2)) == 1 else "multiple"
    assert u.loc[1, "status"] == expected


@pytest.mark.study
def test_published_statistics_parser_and_check(study_dir):
    from nonolab.measure.tables import compare_published, parse_solver_statistics
    from nonolab.sat.puzzles import load_study_puzzles

    pub = parse_solver_statistics(study_dir / "solver_statistics.txt")
    assert len(pub) == 18
    row = pub[(pub.puzzle_id == "0") & (pub.solver == "cadical195")].iloc[0]
    # METHODS 2: CaDiCaL195 on id 0: 0 decisions, 135 propagations, 0 conflicts
    assert (row.decisions, row.propagations, row.conflicts) == (0, 135, 0)
    puzzles = load_study_puzzles(study_dir / "nonograms_6.json")
    m = stats_table(puzzles, ["block_start"], ["minisat22", "glucose42", "cadical195"])
    check = compare_published(m, pub)
    assert len(check) == 18 * 6 and check["equal"].all()
    # a wrong computed value is reported, not hidden
    bad = m.copy()
    bad.loc[0, "conflicts"] += 1
    assert (~compare_published(bad, pub)["equal"]).sum() == 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), density=st.floats(0.2, 0.8))
def test_uniqueness_random_5x5_brute_force(seed, density):
    rng = np.random.default_rng(seed)
    p = Puzzle.from_grid((rng.random((5, 5)) < density).astype(int))
    n = len(brute_force_solutions(p, limit=2))
    assert uniqueness(p, "block_start", "glucose42").status == ("unique" if n == 1 else "multiple")


@pytest.mark.study
def test_study_history_non_unique_and_refused(study_dir, tmp_path):
    import json

    from nonolab.measure.tables import uniqueness_table
    from nonolab.sat.formats import read_puzzles
    from nonolab.sat.puzzles import PuzzleError

    # the earlier, unserved puzzle file wraps each id in a one-element list ("id": [0]): the
    # input contract refuses such an id, naming the entry, instead of inventing the label "[0]"
    history = study_dir / "versions/nonograms_6.d450e63.json"
    with pytest.raises(PuzzleError, match=r"entry 0: puzzle id \[0\] is not an integer"):
        read_puzzles(history)
    entries = json.loads(history.read_text())
    for entry in entries:
        (entry["id"],) = entry["id"]  # unwrap explicitly: exactly one integer each
    unwrapped = tmp_path / "nonograms_6.d450e63.json"
    unwrapped.write_text(json.dumps(entries))
    # some of its puzzles are not unique (METHODS 1) -> reported; every encoding x a second
    # solver agrees, and both grids of "multiple" satisfy the clues
    old = read_puzzles(unwrapped)
    u = uniqueness_table(old, _all_encodings())
    u2 = uniqueness_table(old, _all_encodings(), "cadical195")
    assert u["status"].tolist() == u2["status"].tolist()
    assert sorted(u[u.encoding == "block_start"]["status"]) == ["multiple"] * 3 + ["unique"] * 3
    for p, r in zip(old, u[u.encoding == "block_start"].itertuples(), strict=True):
        if r.status == "multiple":
            grids = [
                tuple(tuple(int(ch == "#") for ch in row) for row in g.split("/"))
                for g in (r.grid, r.second_grid)
            ]
            assert grids[0] != grids[1] and all(satisfies(p, g) for g in grids)
    # a file whose clues contradict its solutions is refused, naming the file and puzzle
    with pytest.raises(PuzzleError, match=r"nonograms_sample\.json: puzzle id 468"):
        read_puzzles(study_dir / "nonograms_sample.json")


def test_interruptible_solvers_match_python_sat():
    """:data:`NO_INTERRUPT_SOLVERS` is exactly the built solvers whose ``interrupt()`` python-sat
    does not implement; aliases resolve to their solver."""
    from pysat.solvers import NoSuchSolverError, Solver

    from nonolab.sat.solvers import NO_INTERRUPT_SOLVERS, available_solvers, interruptible

    checked = 0
    for name in available_solvers():
        try:
            s = Solver(name=name, bootstrap_with=[[1, 2]])
        except NoSuchSolverError:  # not built in this python-sat (cryptosat, minisatgh)
            continue
        with s:
            try:
                s.interrupt()
                s.clear_interrupt()
                can = True
            except NotImplementedError:
                can = False
        assert can == interruptible(name) == (name not in NO_INTERRUPT_SOLVERS), name
        checked += 1
    assert checked >= len(STATS_SOLVERS)
    assert interruptible("m22") and interruptible("maplechrono") and not interruptible("cd19")


def test_time_limit_interrupts_every_interruptible_solver():
    """Under a time limit, a solver with ``interrupt()`` (here MapleChrono and MergeSat, which the
    hybrid solver used to slice) is stopped by the timer in one call; CaDiCaL in slices."""
    from nonolab.sat.solvers import solve_limited

    p = _random_puzzle(40, 2)
    enc = get_encoding("block_start")(p)
    for name in ("maplechrono", "mergesat3"):
        res = run_solver(enc.clauses, name, time_limit_s=0.05)
        assert res.status == "unknown" and res.time_s < 1.5, name
    # a conflict budget without a deadline is one solve_limited call for every solver: the
    # same counters as python-sat's own budgeted call
    from pysat.solvers import Solver

    for name in ("minisat22", "cadical195"):
        with Solver(name=name, bootstrap_with=enc.clauses) as s:
            s.conf_budget(300)
            assert s.solve_limited() is None
            want = s.accum_stats()
        with Solver(name=name, bootstrap_with=enc.clauses) as s:
            assert solve_limited(s, name, conflict_budget=300) is None
            assert s.accum_stats() == want, name
