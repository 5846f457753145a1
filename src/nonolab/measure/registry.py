"""The registry of puzzle difficulty measures: one place for every measure's name, definition,
units and the function computing it from a puzzle.

Three kinds (``kind``):

* ``structure``: plain structure, the baselines (size, filled share, clue counts and lengths);
* ``strategy``: human-strategy measures on the exact line solver (footholds, propagation
  chains, probing along the solve path; :mod:`nonolab.measure.strategy`, and the probing depth
  of :func:`nonolab.sat.linesolver.line_metrics`);
* ``sat``: SAT effort (decisions, propagations, conflicts) for every solver x encoding
  (``sat_<solver>_<encoding>_<counter>``; the encodings are the registered ones, among them the
  ``regular`` encoding whose unit propagation is the complete line solver).

Each measure belongs to a *group*: one computation per puzzle that yields several measures (a
solver run, the strategy profile), so :func:`measure_records` runs every group once per puzzle.
A value that cannot be computed is ``None`` (e.g. the first stall of a line-solvable puzzle);
the table leaves it empty. ``transform`` says how the evaluation puts a measure on a common
scale before z-scoring: ``log1p`` for heavy-tailed counts, ``identity`` otherwise. Names are
valid formula terms (letters, digits, underscores). The definitions are listed in
``docs/measures.md``; :func:`registry_table` is the same list as a table.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from nonolab.sat.puzzles import Puzzle

KINDS: tuple[str, ...] = ("structure", "strategy", "sat")
SAT_COUNTERS: tuple[str, ...] = ("decisions", "propagations", "conflicts")
#: probing depth computed up to this (deeper: empty), and seconds per puzzle for probing
LINE_MAX_DEPTH = 2
LINE_TIME_LIMIT_S = 60.0

GroupFn = Callable[[Puzzle], dict[str, Any]]


@dataclass(frozen=True)
class Measure:
    """One registered measure: ``name`` (column and formula term), ``label`` (for people),
    ``kind`` (:data:`KINDS`), ``units``, ``definition`` (one sentence), ``group`` (the
    computation it comes from, see :data:`GROUPS`), ``key`` (its key in the group's output) and
    ``transform`` (``log1p`` or ``identity``)."""

    name: str
    label: str
    kind: str
    units: str
    definition: str
    group: str
    key: str
    transform: str = "identity"

    def compute(self, puzzle: Puzzle) -> float | None:
        """Return this measure of ``puzzle`` (in :attr:`units`; None when undefined)."""
        v = group_function(self.group)(puzzle)[self.key]
        return None if v is None else float(v)


def _structure(p: Puzzle) -> dict[str, Any]:
    blocks = [b for clue in p.rows for b in clue]
    n = p.height * p.width
    return {
        "n_cells": n,
        "filled_share": sum(blocks) / n,
        "clue_count": sum(len(c) for c in (*p.rows, *p.cols)),
        "mean_block_length": sum(blocks) / len(blocks) if blocks else None,
        "empty_lines": sum(1 for c in (*p.rows, *p.cols) if not c),
    }


def _strategy(p: Puzzle) -> dict[str, Any]:
    from nonolab.measure.strategy import strategy_profile

    return strategy_profile(p)


def _line(p: Puzzle) -> dict[str, Any]:
    from nonolab.sat.linesolver import line_metrics

    m = line_metrics(p, max_depth=LINE_MAX_DEPTH, time_limit_s=LINE_TIME_LIMIT_S)
    return {
        "probing_depth": m["probing_depth"],
        "probe_cells": m["cells_solved_by_probing"],
        "needs_probing": 0 if m["line_solvable"] else 1,
    }


def _sat(solver: str, encoding: str) -> GroupFn:
    def run(p: Puzzle) -> dict[str, Any]:
        from nonolab.sat.solvers import solver_record

        rec = solver_record(p, encoding, solver)
        if rec["status"] != "sat":
            return dict.fromkeys(SAT_COUNTERS)
        return {k: rec[k] for k in SAT_COUNTERS}

    return run


_FIXED_GROUPS: dict[str, GroupFn] = {
    "structure": _structure,
    "strategy": _strategy,
    "line": _line,
}


def group_function(group: str) -> GroupFn:
    """Return the function of group ``group`` (``structure``, ``strategy``, ``line`` or
    ``sat:<solver>:<encoding>``): puzzle -> dict of the group's keys."""
    if group in _FIXED_GROUPS:
        return _FIXED_GROUPS[group]
    kind, _, rest = group.partition(":")
    if kind == "sat" and rest.count(":") == 1:
        solver, encoding = rest.split(":")
        return _sat(solver, encoding)
    raise KeyError(f"unknown measure group {group!r}")


_BASE: tuple[Measure, ...] = (
    Measure(
        "n_cells", "Grid size", "structure", "cells", "Height times width.", "structure", "n_cells"
    ),
    Measure(
        "filled_share",
        "Filled share",
        "structure",
        "share of cells",
        "Filled cells of the solution (the sum of the row clues) over the cells.",
        "structure",
        "filled_share",
    ),
    Measure(
        "clue_count",
        "Clue numbers",
        "structure",
        "numbers",
        "Numbers in all row and column clues (blocks; an empty line counts none).",
        "structure",
        "clue_count",
    ),
    Measure(
        "mean_block_length",
        "Mean block length",
        "structure",
        "cells",
        "Mean length of the row clues' blocks (empty when no block).",
        "structure",
        "mean_block_length",
    ),
    Measure(
        "foothold_cells",
        "Foothold cells",
        "strategy",
        "cells",
        "Cells fixed by single-line reasoning on the empty grid (each line alone, nothing known).",
        "strategy",
        "foothold_cells",
    ),
    Measure(
        "foothold_lines",
        "Foothold lines",
        "strategy",
        "lines",
        "Rows and columns that fix at least one cell on the empty grid.",
        "strategy",
        "foothold_lines",
    ),
    Measure(
        "chain_rounds",
        "Propagation rounds",
        "strategy",
        "rounds",
        "Parallel rounds of single-line reasoning from the empty grid until a round fixes "
        "nothing (round 1 fixes the footholds).",
        "strategy",
        "chain_rounds",
    ),
    Measure(
        "chain_cells_per_round",
        "Cells per round",
        "strategy",
        "cells per round",
        "Cells fixed by propagation over the number of rounds (empty when no round fixes a cell).",
        "strategy",
        "chain_cells_per_round",
    ),
    Measure(
        "propagation_share",
        "Solved by propagation",
        "strategy",
        "share of cells",
        "Share of cells known at the line-solving fixpoint.",
        "strategy",
        "propagation_share",
    ),
    Measure(
        "needs_probing",
        "Needs probing",
        "strategy",
        "0/1",
        "1 when single-line reasoning alone does not complete the grid.",
        "line",
        "needs_probing",
    ),
    Measure(
        "probing_depth",
        "Probing depth",
        "strategy",
        "depth",
        "Least depth of nested probing that completes the grid: 0 line-solvable, 1 single-cell "
        f"probing, up to {LINE_MAX_DEPTH} (empty beyond it).",
        "line",
        "probing_depth",
    ),
    Measure(
        "probe_cells",
        "Cells by probing",
        "strategy",
        "cells",
        "Cells single-cell probing (with propagation, to a fixpoint) adds to the fixpoint.",
        "line",
        "probe_cells",
    ),
    Measure(
        "probe_stalls",
        "Stalls",
        "strategy",
        "stalls",
        "Times the solve path (propagate; when stuck, apply the first productive probe) is stuck "
        "and needs probing.",
        "strategy",
        "probe_stalls",
    ),
    Measure(
        "first_stall_share",
        "Known at first stall",
        "strategy",
        "share of cells",
        "Share of cells known when the solve path first needs probing (empty when line-solvable).",
        "strategy",
        "first_stall_share",
    ),
    Measure(
        "hardest_step_options",
        "Hardest-step options",
        "strategy",
        "cells",
        "Fewest productive probe cells at any stall of the solve path (fewer = harder; 0 when "
        "single-cell probing is stuck; empty when line-solvable).",
        "strategy",
        "hardest_step_options",
    ),
)


def sat_measures(solvers: Iterable[str], encodings: Iterable[str]) -> list[Measure]:
    """Return the SAT effort measures of every solver x encoding x counter (names
    ``sat_<solver>_<encoding>_<counter>``, units: solver counts, transform ``log1p``)."""
    out = []
    for enc in encodings:
        for solver in solvers:
            for counter in SAT_COUNTERS:
                out.append(
                    Measure(
                        name=f"sat_{solver}_{enc}_{counter}",
                        label=f"{solver} {enc} {counter}",
                        kind="sat",
                        units=counter,
                        definition=f"{counter.capitalize()} of {solver} on the {enc} encoding "
                        "(python-sat accum_stats, one solve).",
                        group=f"sat:{solver}:{enc}",
                        key=counter,
                        transform="log1p",
                    )
                )
    return out


def registry(
    solvers: Sequence[str] | None = None, encodings: str | Sequence[str] = "registered"
) -> list[Measure]:
    """Return every registered measure: structure and strategy measures, then the SAT measures
    of ``solvers`` (default: the study's three) x ``encodings`` (default: every registered
    encoding, :func:`nonolab.sat.encodings.resolve_encodings`)."""
    from nonolab.sat.encodings import resolve_encodings
    from nonolab.sat.solvers import STUDY_SOLVERS

    solvers = list(STUDY_SOLVERS if solvers is None else solvers)
    return [*_BASE, *sat_measures(solvers, resolve_encodings(encodings))]


def get_measures(names: Iterable[str], measures: Sequence[Measure] | None = None) -> list[Measure]:
    """Return the measures called ``names`` (in that order); raise ``KeyError`` listing the
    known names for an unknown one."""
    known = {m.name: m for m in (registry() if measures is None else measures)}
    out = []
    for n in names:
        if n not in known:
            raise KeyError(f"unknown measure {n!r}; known: {sorted(known)}")
        out.append(known[n])
    return out


def registry_table(measures: Sequence[Measure]) -> list[dict[str, str]]:
    """Return one record per measure: ``name``, ``label``, ``kind``, ``units``, ``definition``,
    ``transform``."""
    cols = ("name", "label", "kind", "units", "definition", "transform")
    return [{c: getattr(m, c) for c in cols} for m in measures]


def measure_records(
    puzzles: Iterable[Puzzle], measures: Sequence[Measure]
) -> Iterator[dict[str, Any]]:
    """Yield one record per puzzle: ``puzzle_hash``, ``puzzle_id`` (the label), then every
    measure's value (its units; None when undefined) and ``measure_time_s`` (seconds spent on
    the puzzle). Each group is computed once per puzzle."""
    groups = sorted({m.group for m in measures})
    for p in puzzles:
        t0 = time.perf_counter()
        out: dict[str, Any] = {"puzzle_hash": p.hash, "puzzle_id": str(p.label)}
        values = {g: group_function(g)(p) for g in groups}
        for m in measures:
            v = values[m.group][m.key]
            out[m.name] = None if v is None else float(v)
        out["measure_time_s"] = time.perf_counter() - t0
        yield out


def measures_table(puzzles: Iterable[Puzzle], measures: Sequence[Measure]) -> Any:
    """Return :func:`measure_records` as a pandas DataFrame (one row per puzzle; an undefined
    value is empty, NaN in the frame)."""
    import pandas as pd

    cols = ["puzzle_hash", "puzzle_id", *(m.name for m in measures), "measure_time_s"]
    df = pd.DataFrame(list(measure_records(puzzles, measures)), columns=cols)
    for m in measures:
        df[m.name] = pd.to_numeric(df[m.name], errors="coerce").astype(float)
    return df
