"""The fallback for large puzzles (nonolab.sat.hardsolve) and its use by fastsolve.solve."""

from __future__ import annotations

import itertools
import random

import pytest

import nonolab.sat.fastsolve as fastsolve
import nonolab.sat.remaining as remaining
from nonolab.sat.hardsolve import (
    _line_moves,
    kissat_solve,
    probe_implications,
    switch_neighbour,
)
from nonolab.sat.linesolver import propagate
from nonolab.sat.puzzles import Puzzle, line_clue, satisfies


def _grid(rng, h, w, d=0.5):
    return tuple(tuple(int(rng.random() < d) for _ in range(w)) for _ in range(h))


def test_line_moves_keep_the_clue():
    """Every move keeps the clue; when no block has length 1 (no block can jump past
    another) the moves are exactly all clue-keeping single-cell moves."""
    rng = random.Random(1)
    for _ in range(300):
        n = rng.randint(1, 10)
        line = [int(rng.random() < 0.5) for _ in range(n)]
        moves = _line_moves(line)
        expect = set()
        for f in range(n):
            for t in range(n):
                if line[f] and not line[t]:
                    new = list(line)
                    new[f], new[t] = 0, 1
                    if line_clue(new) == line_clue(line):
                        expect.add((f, t))
        assert moves <= expect, line
        if 1 not in line_clue(line):
            assert moves == expect, line


def test_switch_neighbour_is_a_valid_different_solution():
    # the classic ambiguous 2x2 inside a bigger grid
    g = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    p = Puzzle.from_grid(g)
    other = switch_neighbour(p, g)
    assert other is not None and other != g and satisfies(p, other)
    rng = random.Random(5)
    found = 0
    for _ in range(40):
        g = _grid(rng, 6, 6)
        p = Puzzle.from_grid(g)
        other = switch_neighbour(p, g)
        if other is not None:
            found += 1
            assert other != g and satisfies(p, other)
            diff = [(r, c) for r in range(6) for c in range(6) if g[r][c] != other[r][c]]
            assert len(diff) == 4
    assert found > 0


def test_switch_neighbour_none_for_a_unique_puzzle():
    g = ((1, 1, 1), (1, 0, 1), (1, 1, 1))
    assert switch_neighbour(Puzzle.from_grid(g), g) is None


def test_probe_implications_hold_in_every_solution():
    rng = random.Random(2)
    for _ in range(15):
        g = _grid(rng, 4, 4)
        p = Puzzle.from_grid(g)
        st = propagate(p)
        clauses = probe_implications(p, st)
        sols = [
            s
            for s in itertools.product((0, 1), repeat=16)
            if satisfies(p, [s[r * 4 : r * 4 + 4] for r in range(4)])
        ]
        assert sols
        for s in sols:
            val = {i + 1: bool(v) for i, v in enumerate(s)}
            for cl in clauses:
                assert any(val[abs(x)] == (x > 0) for x in cl), (cl, s)


def test_kissat_child_process_answers_and_times_out():
    import time

    ok, model = kissat_solve([(1, 2), (-1,)], None)
    assert ok is True and 2 in model and -1 in model
    assert kissat_solve([(1,), (-1,)], None) == (False, None)
    # pigeonhole 11 -> 10: hard for CDCL; the child is killed at the deadline
    php = []
    v = lambda i, j: i * 10 + j + 1  # noqa: E731
    php += [tuple(v(i, j) for j in range(10)) for i in range(11)]
    php += [(-v(a, j), -v(b, j)) for j in range(10) for a in range(11) for b in range(a + 1, 11)]
    t0 = time.perf_counter()
    assert kissat_solve(php, time.perf_counter() + 1.0) == (None, None)
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("seed", [0, 1])
def test_solve_falls_back_and_agrees(monkeypatch, seed):
    """With a tiny first-attempt budget every large-enough puzzle goes through the fallback;
    the answer must match the normal path."""
    rng = random.Random(seed)
    g = _grid(rng, 36, 36)
    p = Puzzle.from_grid(g)
    normal = fastsolve.solve(p, fallback=False)
    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    fb = fastsolve.solve(p, timeout_s=120, hard="kissat")
    assert fb.counts["fallback"] == 1 and fb.solver == "cadical195+kissat404"
    assert fb.status == normal.status
    assert satisfies(p, fb.grid)
    if fb.status == "multiple":
        assert fb.second_grid != fb.grid and satisfies(p, fb.second_grid)
