"""The density-0.5 frontier script: the per-check trace against the generating grid."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def bp(benchmark_script):
    return benchmark_script("bp_frontier")


class _Fake:
    """A solver stub: refutes any assumption set containing literal 2, else budget out."""

    def __init__(self):
        self.budget = None

    def conf_budget(self, n):
        self.budget = n

    def get_model(self):
        return [1, 2, -3]

    def solve_limited(self, assumptions):
        return False if 2 in assumptions else None


def test_tracing_solver_hand_case(bp):
    fake = _Fake()
    t = bp.TracingSolver(fake, [[1, 1, 0]])
    t.conf_budget(7)
    assert fake.budget == 7
    # cell 1 is filled (agrees), cell 2 is filled but guessed empty, cell 3 empty but guessed
    # filled: two disagreements
    assert t.solve_limited([1, -2, 3]) is None
    assert t.solve_limited([2]) is False
    assert [e[:3] for e in t.trace] == [[3, 2, None], [1, 0, False]]
    assert t.get_model() == [1, 2, -3]


@pytest.mark.parametrize(("number", "frac", "budget"), [(3, 0.05, 10), (14, 0.2, 100)])
def test_trace_on_unique_puzzles(bp, bench_dir, monkeypatch, number, frac, budget):
    """TAAI 2011 puzzles whose published grid is the only solution, with BP's beliefs turned
    upside down so that checks are refuted: the trace has one entry per check, the last one is
    the model, and a check is refuted only if some guess disagrees with the published grid (a
    model agrees with every guess)."""
    from nonolab.sat import bpsolve
    from nonolab.sat.fastsolve import solve
    from nonolab.sat.formats import read_puzzles, read_taai_solutions

    rec_dir = bench_dir / "zxkyjimmy+NonogramRecord"
    puzzle = read_puzzles(rec_dir / "question/taai2011.txt")[number - 1]
    grid = read_taai_solutions(rec_dir / "solution/taai2011.txt")[str(number)]
    assert solve(puzzle).status == "unique"
    real = bpsolve.beliefs
    monkeypatch.setattr(bpsolve, "beliefs", lambda *a, **k: (1 - real(*a, **k)[0], None))
    rec = bp.run_board(puzzle, frac, budget, 60.0, None, grid)
    trace = rec["trace"]
    assert rec["status"] == "solved" and len(trace) == rec["checks"] and trace[-1][2] is True
    assert sum(e[2] is False for e in trace) >= 3  # the repairs were exercised
    for assumed, bad, res, secs in trace:
        assert 0 <= bad <= assumed and secs >= 0
        assert (res is not True or bad == 0) and (res is not False or bad > 0)


def test_main_writes_trace(bp, tmp_path):
    out = tmp_path / "f.json"
    args = ["--size", "10", "--boards", "0,1", "--frac", "0.1", "--budget", "200"]
    assert bp.main([*args, "--timeout", "60", "--trace", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["params"]["trace"] is True
    assert [b["board"] for b in data["boards"]] == [0, 1]
    assert all(len(b["trace"]) == b["checks"] for b in data["boards"])
