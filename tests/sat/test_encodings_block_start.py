"""Block-start encoding: hand-computed clauses, published sizes and solver statistics."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nonolab.sat.encodings import get_encoding
from nonolab.sat.encodings.block_start import block_start_ranges, encode
from nonolab.sat.puzzles import Puzzle, load_study_puzzles
from nonolab.sat.solvers import solver_record

# METHODS.md section 2 [target]: variables and clauses of served ids 0-5.
PUBLISHED_VARS = [312, 306, 333, 319, 333, 305]
PUBLISHED_CLAUSES = [1265, 1180, 1314, 1256, 1294, 1208]
# solver_statistics.txt name -> python-sat name
SOLVER_NAMES = {"MiniSat22": "minisat22", "Glucose42": "glucose42", "CaDiCaL195": "cadical195"}


def parse_solver_statistics(path: Path) -> dict[tuple[str, str], dict]:
    """Return ``{(served id, python-sat solver): stats dict}`` from solver_statistics.txt."""
    out: dict[tuple[str, str], dict] = {}
    pid = solver = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"puzzle id:\s*(\d+)", line):
            pid = m.group(1)
        elif m := re.match(r"Solver:\s*(\S+)", line):
            solver = SOLVER_NAMES[m.group(1)]
        elif line.startswith("{"):
            assert pid is not None and solver is not None
            out[(pid, solver)] = ast.literal_eval(line)
    return out


def test_ranges_hand_computed():
    # line of 10, clue 3 1 2: earliest 0, 4, 6; latest 10-(3+1+1+1+2)=2, 6, 8
    assert block_start_ranges((3, 1, 2), 10) == [range(0, 3), range(4, 7), range(6, 9)]
    assert block_start_ranges((5,), 5) == [range(0, 1)]
    assert block_start_ranges((), 4) == []


def test_one_row_hand_computed():
    # 1x3: row [2], columns [1], [1], []; cells 1..3, row starts 4 (p0), 5 (p1), col starts 6, 7
    enc = encode(Puzzle(rows=[[2]], cols=[[1], [1], []]))
    assert enc.nvars == 7
    assert enc.clauses == [
        # row: exactly one start, span fill, coverage
        [4, 5], [-4, -5],
        [-4, 1], [-4, 2], [-5, 2], [-5, 3],
        [-1, 4], [-2, 4, 5], [-3, 5],
        # column 0, column 1, empty column 2
        [6], [-6, 1], [-1, 6],
        [7], [-7, 2], [-2, 7],
        [-3],
    ]  # fmt: skip


def test_two_block_ordering_hand_computed():
    # 1x5 row [1, 2]: block 0 starts 0,1 (vars 6,7), block 1 starts 2,3 (vars 8,9)
    enc = encode(Puzzle(rows=[[1, 2]], cols=[[1], [], [], [1], [1]]))
    row = enc.clauses[: enc.clauses.index([10])]  # up to the first column's ALO clause
    assert row == [
        [6, 7], [-6, -7],
        [8, 9], [-8, -9],
        [-7, -8],  # only p=1, q=2 violates q >= p + 1 + 1
        [-6, 1], [-7, 2],
        [-8, 3], [-8, 4], [-9, 4], [-9, 5],
        [-1, 6], [-2, 7], [-3, 8], [-4, 8, 9], [-5, 9],
    ]  # fmt: skip


def test_registered():
    assert get_encoding("block_start") is encode


@pytest.mark.study
def test_published_sizes(study_dir):
    puzzles = load_study_puzzles(study_dir / "nonograms_6.json")
    encs = [encode(p) for p in puzzles]
    assert [p.label for p in puzzles] == ["0", "1", "2", "3", "4", "5"]
    assert [e.nvars for e in encs] == PUBLISHED_VARS
    assert [len(e.clauses) for e in encs] == PUBLISHED_CLAUSES


@pytest.mark.study
def test_published_solver_statistics(study_dir):
    published = parse_solver_statistics(study_dir / "solver_statistics.txt")
    assert len(published) == 18
    puzzles = {p.label: p for p in load_study_puzzles(study_dir / "nonograms_6.json")}
    for (pid, solver), ref in sorted(published.items()):
        rec = solver_record(puzzles[pid], "block_start", solver)
        got = {k: rec[k] for k in ("decisions", "propagations", "conflicts", "restarts")}
        want = {k: ref[k] for k in got}
        assert got == want, (pid, solver)
        assert (rec["variables"], rec["clauses"]) == (ref["nvars_input"], ref["nclauses_input"])
        assert rec["status"] == "sat"


@pytest.mark.study
def test_methods_minisat_targets(study_dir):
    # METHODS.md section 2, decisions/propagations/conflicts by served id
    target = {
        "0": (4, 313, 0),
        "1": (2, 307, 0),
        "2": (8, 417, 4),
        "3": (31, 1063, 15),
        "4": (40, 1133, 15),
        "5": (13, 453, 4),
    }
    for p in load_study_puzzles(study_dir / "nonograms_6.json"):
        r = solver_record(p, "block_start", "minisat22")
        assert (r["decisions"], r["propagations"], r["conflicts"]) == target[p.label]
