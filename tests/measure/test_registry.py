"""The measure registry: names, documentation, computation (hand-checked values)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pysat.solvers import Solver

from nonolab.measure.registry import (
    KINDS,
    get_measures,
    measures_table,
    registry,
    registry_table,
)
from nonolab.sat.puzzles import Puzzle

DOC = Path(__file__).resolve().parents[2] / "docs" / "measures.md"
CORNER = Puzzle.from_grid([[1, 1, 1], [1, 0, 0], [1, 0, 1]], label="corner")
STALL = Puzzle.from_grid([[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]], label="stall")


def test_names_are_unique_formula_terms_and_documented():
    ms = registry()
    names = [m.name for m in ms]
    assert len(names) == len(set(names))
    doc = DOC.read_text(encoding="utf-8")
    for m in ms:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m.name), m.name
        assert m.kind in KINDS and m.units and m.definition and m.transform in ("log1p", "identity")
        if m.kind != "sat":
            assert f"`{m.name}`" in doc, f"{m.name} is not in docs/measures.md"
        else:
            enc = m.group.split(":")[2]
            assert enc in doc and m.units in doc
    # every registered encoding and every study solver is measured
    groups = {m.group for m in ms if m.kind == "sat"}
    assert {g.split(":")[2] for g in groups} >= {"block_start", "order", "regular"}
    assert len(registry_table(ms)) == len(ms)


def test_get_measures_names_the_unknown():
    with pytest.raises(KeyError, match="unknown measure 'nope'"):
        get_measures(["n_cells", "nope"])


def test_values_by_hand():
    ms = registry(solvers=["minisat22"], encodings=["block_start", "regular"])
    df = measures_table([CORNER, STALL], ms).set_index("puzzle_id")
    c, s = df.loc["corner"], df.loc["stall"]
    assert c["n_cells"] == 9 and s["n_cells"] == 16
    assert c["filled_share"] == 6 / 9 and s["filled_share"] == 4 / 16
    assert c["clue_count"] == 8  # rows 1+1+2, columns 1+1+2
    assert s["clue_count"] == 7  # rows 0+0+1+2, columns 1+1+1+1
    assert c["mean_block_length"] == 6 / 4 and s["mean_block_length"] == 4 / 3
    assert c["foothold_cells"] == 8 and c["foothold_lines"] == 4 and c["chain_rounds"] == 2
    assert s["foothold_cells"] == 8 and s["foothold_lines"] == 2 and s["chain_rounds"] == 1
    assert c["needs_probing"] == 0 and c["probing_depth"] == 0 and c["probe_cells"] == 0
    assert s["needs_probing"] == 1 and s["probing_depth"] == 1 and s["probe_cells"] == 8
    assert s["probe_stalls"] == 1 and s["first_stall_share"] == 0.5
    # undefined stays undefined (NaN in the frame, empty in the CSV), never 0
    assert c[["first_stall_share", "hardest_step_options"]].isna().all()
    # the regular encoding's unit propagation is the line solver: a line-solvable puzzle needs
    # no conflict, and no decision beyond the ones MiniSat counts when unit propagation alone
    # assigns every variable (its counter also counts the final, empty pick)
    with Solver(name="minisat22", bootstrap_with=[[1], [-1, 2]]) as ref:
        ref.solve()
        baseline = ref.accum_stats()["decisions"]
    assert c["sat_minisat22_regular_decisions"] == baseline
    assert c["sat_minisat22_regular_conflicts"] == 0
    assert (df["measure_time_s"] > 0).all()
    # Measure.compute is the table's value
    for m in ms:
        v = m.compute(STALL)
        assert (v is None and s[m.name] != s[m.name]) or v == s[m.name], m.name
