"""Belief-propagation decimation (nonolab.sat.bpsolve) and its use as solve()'s fallback."""

from __future__ import annotations

import itertools
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nonolab.sat.bpsolve as bpsolve
import nonolab.sat.fallback as fallback
import nonolab.sat.fastsolve as fastsolve
import nonolab.sat.remaining as remaining
from nonolab.sat.bpsolve import (
    DecimationStats,
    beliefs,
    cavity_messages,
    decimate,
    line_automata,
)
from nonolab.sat.formats import read_puzzles
from nonolab.sat.linesolver import Contradiction, line_placements, propagate
from nonolab.sat.puzzles import Puzzle, PuzzleError, line_clue, satisfies
from nonolab.sat.remaining import new_solver, remaining_encoding


def _brute_cavity(clue, w1, w0):
    """P(cell filled) over the completions of ``clue``, each weighted by the other cells."""
    n = len(w1)
    m1, m0 = [0.0] * n, [0.0] * n
    for x in itertools.product((0, 1), repeat=n):
        if line_clue(x) != tuple(clue):
            continue
        for i in range(n):
            wt = 1.0
            for j in range(n):
                if j != i:
                    wt *= w1[j] if x[j] else w0[j]
            if x[i]:
                m1[i] += wt
            else:
                m0[i] += wt
    return [a / (a + b) if a + b > 0 else 0.0 for a, b in zip(m1, m0, strict=True)]


#: exact zeros (known cells) and weights far from underflow: with subnormal weights the brute
#: force's plain products underflow to 0 where the normalised forward-backward does not
_weight = st.sampled_from([0.0, 1.0, 0.5]) | st.floats(1e-3, 1.0)


@pytest.mark.parametrize("compiled", [False, True])
@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 9),
    data=st.data(),
)
def test_cavity_messages_match_brute_force(compiled, n, data):
    """Several lines of one length at once (padded automata of different sizes): every cavity
    message equals the brute-force weighted marginal over the clue's completions, with the
    numpy recurrences and with the compiled kernel."""
    k = data.draw(st.integers(1, 4))
    clues, w1, w0 = [], [], []
    for _ in range(k):
        if data.draw(st.booleans()):  # a clue some line of length n has
            line = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
            clues.append(line_clue(line))
        else:  # any clue, possibly with no completion at all
            clues.append(tuple(data.draw(st.lists(st.integers(1, n), max_size=3))))
        w1.append(data.draw(st.lists(_weight, min_size=n, max_size=n)))
        w0.append(data.draw(st.lists(_weight, min_size=n, max_size=n)))
    got = cavity_messages(line_automata(clues), np.array(w1), np.array(w0), compiled)
    for i in range(k):
        assert got[i] == pytest.approx(_brute_cavity(clues[i], w1[i], w0[i]), abs=1e-9)


def test_compiled_kernel_is_there_and_matches_numpy():
    """Where numba (optional) is installed the compiled kernel exists (else ``compiled=True``
    quietly runs numpy); on 25- and 112-cell lines and through :func:`beliefs` it gives numpy's
    messages up to rounding."""
    pytest.importorskip("numba")
    assert bpsolve._compiled_kernel() is not None
    rng = np.random.default_rng(5)
    for n in (25, 112):
        g = (rng.random((n, n)) < 0.5).astype(int)
        p = Puzzle.from_grid(g.tolist())
        aut = line_automata(p.rows)
        w1 = rng.random((n, n))
        w1[rng.random((n, n)) < 0.2] = 0.0
        w0 = 1 - w1
        a = cavity_messages(aut, w1, w0)
        b = cavity_messages(aut, w1, w0, compiled=True)
        assert np.abs(a - b).max() < 1e-12
        known = np.where(rng.random((n, n)) < 0.1, g, -1)
        auts = (aut, line_automata(p.cols))
        (ba, (ra, ca)), (bb, (rb, cb)) = beliefs(auts, known), beliefs(auts, known, compiled=True)
        assert max(np.abs(ba - bb).max(), np.abs(ra - rb).max(), np.abs(ca - cb).max()) < 1e-9


def test_compiled_kernel_without_a_cache_directory(monkeypatch):
    """Where numba finds no writable cache directory, ``njit(cache=True)`` raises; the kernel
    is then compiled in memory instead of failing the solve."""
    numba = pytest.importorskip("numba")

    real = numba.njit

    def njit(*args, **kw):
        if kw.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **kw)

    monkeypatch.setattr(numba, "njit", njit)
    bpsolve._compiled_kernel.cache_clear()
    try:
        kernel = bpsolve._compiled_kernel()
        assert kernel is not None
        aut = line_automata([(1,), (2,)])
        got = cavity_messages(aut, np.ones((2, 3)), np.ones((2, 3)), compiled=True)
        assert np.abs(got - cavity_messages(aut, np.ones((2, 3)), np.ones((2, 3)))).max() < 1e-12
    finally:
        bpsolve._compiled_kernel.cache_clear()  # later tests compile with the real njit


def test_compiled_without_numba_runs_numpy(monkeypatch):
    """Without numba, ``compiled=True`` gives exactly the numpy recurrences."""
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    bpsolve._compiled_kernel.cache_clear()
    try:
        assert bpsolve._compiled_kernel() is None
        aut = line_automata([(1,), (2,)])
        w = np.full((2, 3), 0.7)
        assert (
            cavity_messages(aut, w, 1 - w, compiled=True) == cavity_messages(aut, w, 1 - w)
        ).all()
    finally:
        bpsolve._compiled_kernel.cache_clear()


def test_cavity_messages_by_hand():
    # clue (1,) on 3 cells, uniform weights: completions 100, 010, 001, so each cell is filled
    # in 1 of 3; clue (2,) on 3 cells: 110, 011, so the middle cell is always filled
    aut = line_automata([(1,), (2,), ()])
    got = cavity_messages(aut, np.ones((3, 3)), np.ones((3, 3)))
    assert got[0] == pytest.approx([1 / 3] * 3)
    assert got[1] == pytest.approx([0.5, 1.0, 0.5])
    assert got[2] == pytest.approx([0.0] * 3)
    # a cavity message ignores the cell's own weight: cell 0's weight 'never filled' does not
    # change cell 0's message, but cells 1 and 2 now split the single block between them
    w1 = np.ones((1, 3))
    w1[0, 0] = 0.0
    got = cavity_messages(line_automata([(1,)]), w1, np.ones((1, 3)))
    assert got[0] == pytest.approx([1 / 3, 0.5, 0.5])


def test_line_messages_agree_with_the_line_solver():
    """With known cells as 0/1 weights, a cavity message is 0 or 1 exactly where the complete
    line solver fixes the cell (and the cell's own value is what the line solver says)."""
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 12)
        line = [int(rng.random() < 0.5) for _ in range(n)]
        clue = line_clue(line)
        known = [v if rng.random() < 0.3 else -1 for v in line]
        fill = sum(1 << i for i, v in enumerate(known) if v == 1)
        empty = sum(1 << i for i, v in enumerate(known) if v == 0)
        w1 = np.array([[0.0 if v == 0 else 1.0 for v in known]])
        w0 = np.array([[0.0 if v == 1 else 1.0 for v in known]])
        msg = cavity_messages(line_automata([clue]), w1, w0)[0]
        # the belief of a cell combines its message with its own evidence
        bel = msg * w1[0] / (msg * w1[0] + (1 - msg) * w0[0])
        places = line_placements(clue, n, fill, empty)
        assert places is not None
        for i in range(n):
            values = {x[i] for x in _completions(clue, known)}
            if values == {1}:
                assert bel[i] == pytest.approx(1.0)
            elif values == {0}:
                assert bel[i] == pytest.approx(0.0)
            else:
                assert 0.0 < bel[i] < 1.0


def _completions(clue, known):
    for x in itertools.product((0, 1), repeat=len(known)):
        if line_clue(x) == clue and all(k in (-1, v) for k, v in zip(known, x, strict=True)):
            yield x


def test_beliefs_respect_evidence_and_are_probabilities():
    rng = random.Random(11)
    g = tuple(tuple(int(rng.random() < 0.5) for _ in range(15)) for _ in range(12))
    p = Puzzle.from_grid(g)
    known = np.full((12, 15), -1)
    known[3, :] = g[3]
    aut = (line_automata(p.rows), line_automata(p.cols))
    bel, msgs = beliefs(aut, known)
    assert bel.shape == (12, 15) and ((bel >= 0) & (bel <= 1)).all()
    assert (bel[3] == np.array(g[3], dtype=float)).all()
    # warm start from converged messages moves nothing
    bel2, _ = beliefs(aut, known, msgs, iters=1)
    assert np.abs(bel2 - bel).max() < 1e-3


def _random_puzzle(seed, h, w, d=0.5):
    rng = random.Random(seed)
    return Puzzle.from_grid(tuple(tuple(int(rng.random() < d) for _ in range(w)) for _ in range(h)))


class _RecordingSolver:
    """A python-sat solver that records the assumptions (the guesses) of every check."""

    def __init__(self, solver, checks):
        self._s, self.checks = solver, checks

    def conf_budget(self, budget):
        self._s.conf_budget(budget)

    def solve_limited(self, assumptions=(), expect_interrupt=False):
        self.checks.append(tuple(assumptions))
        return self._s.solve_limited(assumptions=assumptions)

    def get_model(self):
        return self._s.get_model()


def _decimate(p, checks=None, **kw):
    """Decimate ``p`` on CaDiCaL; with a list ``checks``, append every check's assumptions."""
    state = propagate(p)
    enc = remaining_encoding(p, state)
    with new_solver("cadical195", enc.clauses) as s:
        stats = DecimationStats()
        solver = s if checks is None else _RecordingSolver(s, checks)
        ok, model = decimate(p, state, solver, stats=stats, **kw)
        grid = enc.decode(model) if ok else None
    return ok, grid, stats


def _beliefs_upside_down(monkeypatch):
    """Make every guess take BP's less likely value, so that rounds are refuted and repaired."""
    real = bpsolve.beliefs

    def upside_down(*args, **kw):
        bel, msgs = real(*args, **kw)
        return 1 - bel, msgs

    monkeypatch.setattr(bpsolve, "beliefs", upside_down)


def test_decimation_solves_random_puzzles():
    for seed in range(12):
        p = _random_puzzle(seed, 20, 20)
        ok, grid, stats = _decimate(p, frac=0.2, check_conflicts=20, deadline=None)
        assert ok is True, seed
        assert satisfies(p, grid), seed
        assert stats.checks >= 1


def test_decimation_repairs_wrong_guesses(monkeypatch):
    """Beliefs turned upside down (every guess takes BP's less likely value) make refuted
    rounds common: the bisection must flip culprits and still end with valid grids."""
    _beliefs_upside_down(monkeypatch)
    flips = 0
    for seed in range(8):
        p = _random_puzzle(seed, 20, 20)
        ok, grid, stats = _decimate(p, frac=0.1, check_conflicts=1000, deadline=None)
        assert ok is True and satisfies(p, grid), seed
        flips += stats.flips
    assert flips > 0


def _unsat_candidates(n, count, seed):
    """Puzzles whose row clues come from one random grid and column clues from another with
    the same number of filled cells (often unsatisfiable), that propagation does not refute."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        a = [int(rng.random() < 0.5) for _ in range(n * n)]
        b = a[:]
        rng.shuffle(b)
        rows = [line_clue(a[r * n : (r + 1) * n]) for r in range(n)]
        cols = [line_clue(b[c::n]) for c in range(n)]
        try:
            p = Puzzle(tuple(rows), tuple(cols))
            st0 = propagate(p)
        except (Contradiction, PuzzleError):
            continue
        if not st0.is_complete():
            out.append(p)
    return out


def _has_solution(p):
    n = p.width
    rows = [[x for x in itertools.product((0, 1), repeat=n) if line_clue(x) == c] for c in p.rows]
    return any(satisfies(p, g) for g in itertools.product(*rows))


def test_decimation_reports_unsat_only_for_unsatisfiable_puzzles():
    """On 5x5 puzzles (brute force decides them) the answer is a valid grid exactly when one
    exists, and ``False`` (proven) otherwise."""
    seen = {True: 0, False: 0}
    for p in _unsat_candidates(5, 40, seed=7):
        truth = _has_solution(p)
        ok, grid, _ = _decimate(p, frac=0.5, check_conflicts=5, deadline=None)
        assert ok is truth
        if ok:
            assert satisfies(p, grid)
        seen[truth] += 1
    assert seen[True] > 0 and seen[False] > 0


def test_seeded_decimation_is_sound_and_reproducible(monkeypatch):
    """With a seed the guesses are a random share of the most polarised cells: on the 5x5
    puzzles the answers stay exact (a grid iff one exists); under upside-down beliefs (repairs
    needed) the same seed repeats the run exactly and other seeds take other paths."""
    for p in _unsat_candidates(5, 20, seed=11):
        truth = _has_solution(p)
        for seed in (0, 1):
            ok, grid, _ = _decimate(p, frac=0.5, check_conflicts=5, deadline=None, seed=seed)
            assert ok is truth
            if ok:
                assert satisfies(p, grid)
    _beliefs_upside_down(monkeypatch)
    p = _random_puzzle(3, 20, 20)
    runs = {}
    for seed in (None, 5, 5, 6, 7):
        checks = []
        ok, grid, stats = _decimate(
            p, checks, frac=0.1, check_conflicts=1000, deadline=None, seed=seed
        )
        assert ok is True and satisfies(p, grid)
        runs.setdefault(seed, []).append((checks, vars(stats) | {"check_s": 0, "bp_s": 0}))
    assert runs[5][0] == runs[5][1]  # the same seed: the same guesses and counters
    # the path is the sequence of guesses checked (the counters alone can coincide)
    paths = {tuple(r[0][0]) for r in runs.values()}
    assert len(paths) == 4  # None, 5, 6 and 7 each guess differently


def test_decimation_path_does_not_depend_on_the_sort_of_ties(monkeypatch):
    """Many cells share one polarisation (here every BP-certain cell, 0.5 away from 0.5);
    which of them are guessed first must not depend on how numpy's sort orders ties (that
    changes with the CPU's instruction set and numpy's version). A sort that puts ties in
    reverse order must give the same guesses."""
    _beliefs_upside_down(monkeypatch)
    p = _random_puzzle(3, 20, 20)
    ref: list = []
    _decimate(p, ref, frac=0.1, check_conflicts=1000, deadline=None)
    real = np.argsort

    def ties_reversed(a, axis=-1, kind=None, **kw):
        if kind == "stable" or axis is not None:
            return real(a, axis=axis, kind=kind, **kw)
        flat = np.asarray(a).ravel()
        return np.lexsort((-np.arange(flat.size), flat))

    monkeypatch.setattr(np, "argsort", ties_reversed)
    got: list = []
    ok, grid, _ = _decimate(p, got, frac=0.1, check_conflicts=1000, deadline=None)
    assert ok is True and satisfies(p, grid)
    assert got == ref


def test_decimation_gives_up_at_the_deadline_or_check_limit(monkeypatch):
    p = _random_puzzle(0, 30, 30)
    ok, grid, stats = _decimate(p, deadline=0.0)
    assert (ok, grid) == (None, None) and stats.checks == 0
    _beliefs_upside_down(monkeypatch)  # wrong guesses keep the checks going
    ok, grid, stats = _decimate(p, frac=0.3, check_conflicts=1000)
    assert ok is True and stats.checks > 2  # this run needs repairs
    ok, grid, stats = _decimate(p, frac=0.3, check_conflicts=1000, max_checks=2)
    assert (ok, grid, stats.checks) == (None, None, 2)


@pytest.mark.parametrize(("seed", "bp_jobs"), [(0, 1), (1, 1), (0, 2), (2, 2)])
def test_solve_bp_fallback_agrees(monkeypatch, seed, bp_jobs):
    """With a tiny first-attempt budget every large-enough puzzle goes through the fallback,
    BP decimation first; the answer matches the normal path, also with the restart slices in
    two worker processes (whose model decodes and verifies in the caller)."""
    p = _random_puzzle(seed, 36, 36)
    normal = fastsolve.solve(p, fallback=False)
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    fb = fastsolve.solve(p, timeout_s=120, bp_jobs=bp_jobs)
    assert fb.counts["fallback"] == 1 and fb.solver == "cadical195+bp"
    assert fb.counts["bp_checks"] >= 1 and fb.counts["bp_jobs"] == bp_jobs
    assert fb.status == normal.status
    assert satisfies(p, fb.grid)
    if fb.status == "multiple":
        assert fb.second_grid != fb.grid and satisfies(p, fb.second_grid)


def test_bp_hands_over_to_kissat_after_its_limit(monkeypatch):
    p = _random_puzzle(0, 36, 36)
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    monkeypatch.setattr(fallback, "BP_LIMIT_S", 0.0)
    fb = fastsolve.solve(p, timeout_s=120)
    assert fb.solver == "cadical195+bp+kissat404"
    assert fb.status == fastsolve.solve(p, fallback=False).status
    assert satisfies(p, fb.grid)


def test_schedule_by_hand():
    first = list(itertools.islice(bpsolve.schedule(), 7))
    assert first == [
        (0.04, 150, None),
        (0.03, 150, None),
        (0.02, 450, None),
        (0.04, 150, 1),
        (0.03, 150, 1),
        (0.02, 450, 1),
        (0.04, 150, 2),
    ]
    assert list(itertools.islice(bpsolve.schedule([(0.1, 3)]), 3)) == [
        (0.1, 3, None),
        (0.1, 3, 1),
        (0.1, 3, 2),
    ]
    for bad in ([], [(0.1, 0)]):
        with pytest.raises(ValueError, match="at least one check"):
            next(bpsolve.schedule(bad))


def test_bp_stage_restarts_with_the_next_slice(monkeypatch):
    """A one-check first slice whose guesses are all wrong (upside-down beliefs) ends without a
    model; the next slice, on a fresh solver, repairs its guesses and solves."""
    p = _random_puzzle(0, 36, 36)
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    monkeypatch.setattr(bpsolve, "SCHEDULE", ((0.3, 1), (0.1, 10_000)))
    _beliefs_upside_down(monkeypatch)
    fb = fastsolve.solve(p, timeout_s=120)
    assert fb.solver == "cadical195+bp" and fb.counts["bp_restarts"] == 1
    assert fb.counts["bp_slice"] == 1  # the second slice of the schedule found the model
    assert fb.counts["bp_checks"] > 2 and fb.counts["bp_flips"] > 0
    assert fb.status == fastsolve.solve(p, fallback=False).status
    assert satisfies(p, fb.grid)


def test_bp_portfolio_restarts_until_a_slice_solves(monkeypatch):
    """Slices that end without a model start the next ones: with one check per slice and
    checks of one conflict, the portfolio runs through several slices (counted as restarts,
    their checks added up) before one finds a model."""
    p = _random_puzzle(0, 36, 36)
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    monkeypatch.setattr(bpsolve, "CHECK_CONFLICTS", 1)
    monkeypatch.setattr(bpsolve, "SCHEDULE", ((0.01, 1), (0.02, 100_000)))
    fb = fastsolve.solve(p, timeout_s=120, bp_jobs=2)
    assert fb.solver == "cadical195+bp" and satisfies(p, fb.grid)
    assert fb.counts["bp_restarts"] >= 1 and fb.counts["bp_slice"] >= 1
    assert fb.counts["bp_checks"] >= fb.counts["bp_restarts"] + 1


def test_bp_portfolio_proves_unsat_and_hands_over_at_its_limit(monkeypatch):
    """An unsatisfiable puzzle that propagation leaves open is refuted by a worker (under no
    guesses); with no time for BP the stage hands over to Kissat."""
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 0)
    reached = 0
    for p in _unsat_candidates(5, 40, seed=7):
        if _has_solution(p):
            continue
        res = fastsolve.solve(p, timeout_s=60, bp_jobs=2)
        assert res.status == "unsat"
        reached += res.counts["fallback"]  # the others: refuted by the first CDCL conflict
    assert reached > 0
    monkeypatch.setattr(fallback, "BP_LIMIT_S", 0.0)
    p = _random_puzzle(0, 36, 36)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    fb = fastsolve.solve(p, timeout_s=120, bp_jobs=2)
    assert fb.solver == "cadical195+bp+kissat404" and satisfies(p, fb.grid)
    assert fb.counts["bp_checks"] == 0


def test_decimation_stats_add():
    a = bpsolve.DecimationStats(rounds=2, checks=3, check_s=1.5, flips=1, guesses=9, max_known=40)
    b = bpsolve.DecimationStats(rounds=1, checks=4, bp_s=0.5, backtracks=2, known=30, max_known=35)
    a.add(b)
    assert (a.rounds, a.checks, a.check_s, a.bp_s, a.flips, a.backtracks) == (3, 7, 1.5, 0.5, 1, 2)
    assert (a.guesses, a.known, a.max_known) == (0, 30, 40)
    with pytest.raises(ValueError, match="bp_jobs"):
        fastsolve.solve(_random_puzzle(0, 5, 5), bp_jobs=0)


def test_solve_rejects_an_unknown_hard_method():
    with pytest.raises(ValueError, match="hard="):
        fastsolve.solve(_random_puzzle(0, 5, 5), hard="magic")


@pytest.mark.slow
def test_knotty_and_faase_through_the_bp_fallback(bench_dir):
    """The two survey puzzles the plain CDCL stage leaves open: BP decimation finds a first
    solution and a 2x2 switch a second (both are published with two solutions)."""
    survey = bench_dir / "hyouv+FastNonogramSolver" / "puzzles" / "survey"
    for name in ("knotty", "faase"):
        p = read_puzzles(survey / f"{name}.nin")[0]
        res = fastsolve.solve(p, timeout_s=300)
        assert res.solver == "cadical195+bp", name
        assert res.status == "multiple", name
        assert satisfies(p, res.grid) and satisfies(p, res.second_grid)
