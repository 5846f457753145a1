"""Run python-sat solvers on Nonogram encodings: statistics, solutions, uniqueness.

One run = one fresh solver built with every clause of an :class:`~nonolab.sat.encodings.Encoding`
(``bootstrap_with``, in the encoding's clause order), solved once; statistics are read with
python-sat's ``accum_stats()``. This is how the published statistics were produced
(METHODS.md section 2) and runs are deterministic (same puzzle, encoding and solver => same
counts).

Budgets: ``conf_budget`` (conflicts) and ``time_limit_s`` (wall seconds, via a timer that calls
``interrupt()``; for CaDiCaL, which python-sat cannot interrupt, between conflict slices) turn a
run that would take too long into status ``"unknown"`` rather than a hang. Every grid returned is verified against the clues (:func:`nonolab.sat.puzzles.check_solution`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pysat.solvers import Solver, SolverNames

from nonolab.sat.encodings import Encoding, get_encoding
from nonolab.sat.puzzles import Grid, Puzzle, PuzzleError, check_solution

#: Solvers whose ``accum_stats()`` report all four counters meaningfully and that support
#: ``solve_limited`` (budgets). Excluded, with the evidence in docs/decisions.md: ``maplesat``
#: and ``maplecm`` (propagations always reported as 0), ``lingeling`` (no ``solve_limited``,
#: so no budget), ``kissat404`` (no statistics exposed), ``cryptosat``/``minisatgh`` (not built).
STATS_SOLVERS: tuple[str, ...] = (
    "minisat22",
    "minisatep",
    "minicard",
    "glucose3",
    "glucose4",
    "glucose42",
    "gluecard3",
    "gluecard4",
    "cadical103",
    "cadical153",
    "cadical195",
    "cadical300",
    "maplechrono",
    "mergesat3",
    "ergo",
)

#: The three solvers of the published study, in its order.
STUDY_SOLVERS: tuple[str, ...] = ("minisat22", "glucose42", "cadical195")

#: Solvers without ``solve_limited``: they can only run without budgets.
NO_BUDGET_SOLVERS: frozenset[str] = frozenset({"lingeling"})

#: Solvers with a conflict budget but no ``interrupt()`` in python-sat: a wall-time limit is
#: applied between slices of :data:`SLICE_CONFLICTS` conflicts (see :func:`run_solver`).
NO_INTERRUPT_SOLVERS: frozenset[str] = frozenset(
    {"cadical103", "cadical153", "cadical195", "cadical300", "lingeling"}
)

STAT_COLUMNS = ("decisions", "propagations", "conflicts", "restarts")
RECORD_COLUMNS = (
    "puzzle_hash",
    "puzzle_id",
    "encoding",
    "solver",
    "variables",
    "clauses",
    "decisions",
    "propagations",
    "conflicts",
    "restarts",
    "time_s",
    "status",
)


def available_solvers() -> list[str]:
    """Return the canonical names of every solver python-sat knows, whether built or not."""
    return sorted(k for k in vars(SolverNames) if not k.startswith("_"))


def canonical_solver(name: str) -> str:
    """Return the canonical python-sat name for ``name`` or an alias (``m22``, ``g42``, ``cd19``...).

    Raises ``ValueError`` listing the known names for an unknown one.
    """
    low = name.lower()
    for canon, aliases in vars(SolverNames).items():
        if canon.startswith("_"):
            continue
        if low == canon or low in aliases:
            return canon
    raise ValueError(f"unknown solver {name!r}; known: {', '.join(available_solvers())}")


@dataclass(frozen=True)
class SolveResult:
    """One solver run on one encoding.

    ``status``: ``"sat"``, ``"unsat"`` or ``"unknown"`` (budget exhausted). ``model``: the
    solver's model (signed literals) when sat, else None. ``stats``: ``accum_stats()`` counters
    (decisions, propagations, conflicts, restarts). ``time_s``: wall seconds of the solve call.
    """

    status: str
    model: list[int] | None
    stats: dict[str, int]
    time_s: float


def run_solver(
    clauses: Sequence[Sequence[int]],
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
    extra_clauses: Sequence[Sequence[int]] = (),
) -> SolveResult:
    """Return the result of one fresh ``solver`` built with ``clauses`` and solved once.

    With a budget the run uses ``solve_limited`` and returns status ``"unknown"`` when the
    conflict budget is used up or ``time_limit_s`` wall seconds pass. Interruptible solvers are
    stopped by a timer; CaDiCaL (no ``interrupt()`` in python-sat) runs in slices of
    :data:`SLICE_CONFLICTS` conflicts with the clock checked between slices, so its statistics
    under a time limit differ from an unlimited run's.
    """
    name = _check_budgets(solver, conf_budget, time_limit_s)
    with Solver(name=name, bootstrap_with=[list(c) for c in clauses]) as s:
        for cl in extra_clauses:
            s.add_clause(list(cl))
        return _solve(s, conf_budget, time_limit_s, name)


def _check_budgets(solver: str, conf_budget: int | None, time_limit_s: float | None) -> str:
    name = canonical_solver(solver)
    if (conf_budget is not None or time_limit_s is not None) and name in NO_BUDGET_SOLVERS:
        raise ValueError(f"solver {name} does not support budgets (no solve_limited in python-sat)")
    if conf_budget is not None and conf_budget < 0:
        raise ValueError(f"conf_budget must be >= 0, got {conf_budget}")
    if time_limit_s is not None and time_limit_s <= 0:
        raise ValueError(f"time_limit_s must be > 0, got {time_limit_s}")
    return name


#: Conflicts per slice when a solver that cannot be interrupted runs under a time limit.
SLICE_CONFLICTS = 2000


def _sliced_solve(
    s: Solver, conf_budget: int | None, time_limit_s: float, t0: float
) -> bool | None:
    """Time limit for solvers without ``interrupt()`` (CaDiCaL): repeated ``solve_limited``
    calls of at most :data:`SLICE_CONFLICTS` conflicts each, checking the clock in between."""
    start = (s.accum_stats() or {}).get("conflicts", 0)
    while True:
        step = SLICE_CONFLICTS
        if conf_budget is not None:
            left = conf_budget - ((s.accum_stats() or {}).get("conflicts", 0) - start)
            if left <= 0:
                return None
            step = min(step, left)
        s.conf_budget(int(step))
        res = s.solve_limited()
        if res is not None:
            return res
        if time.perf_counter() - t0 >= time_limit_s:
            return None


def _solve(
    s: Solver, conf_budget: int | None, time_limit_s: float | None, name: str = ""
) -> SolveResult:
    timer = None
    t0 = time.perf_counter()
    if conf_budget is None and time_limit_s is None:
        res = s.solve()
    elif time_limit_s is not None and name in NO_INTERRUPT_SOLVERS:
        res = _sliced_solve(s, conf_budget, time_limit_s, t0)
    else:
        if conf_budget is not None:
            s.conf_budget(int(conf_budget))
        if time_limit_s is not None:
            timer = threading.Timer(time_limit_s, s.interrupt)
            timer.daemon = True
            timer.start()
        try:
            res = s.solve_limited(expect_interrupt=time_limit_s is not None)
        finally:
            if timer is not None:
                timer.cancel()
                s.clear_interrupt()
    elapsed = time.perf_counter() - t0
    stats = s.accum_stats() or {}
    stats = {k: int(stats.get(k, 0)) for k in STAT_COLUMNS}
    if res is None:
        return SolveResult("unknown", None, stats, elapsed)
    if res:
        return SolveResult("sat", list(s.get_model()), stats, elapsed)
    return SolveResult("unsat", None, stats, elapsed)


def _verified_grid(puzzle: Puzzle, enc: Encoding, model: Sequence[int]) -> Grid:
    grid = enc.decode(model)
    try:
        check_solution(puzzle, grid)
    except PuzzleError as exc:
        raise PuzzleError(
            f"encoding {enc.name} produced a model that violates the clues: {exc}"
        ) from None
    return grid


def solver_record(
    puzzle: Puzzle,
    encoding: str = "block_start",
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
    enc: Encoding | None = None,
) -> dict[str, Any]:
    """Return one tidy record (keys :data:`RECORD_COLUMNS`) of ``solver`` on ``puzzle``.

    ``variables``/``clauses`` are the encoding's input sizes; the four counters come from
    ``accum_stats()``; ``time_s`` is the wall time of the solve call in seconds; ``status`` is
    ``sat``/``unsat``/``unknown``. A sat model is checked against the clues.
    """
    if enc is None:
        enc = get_encoding(encoding)(puzzle)
    res = run_solver(enc.clauses, solver, conf_budget=conf_budget, time_limit_s=time_limit_s)
    if res.status == "sat":
        _verified_grid(puzzle, enc, res.model or [])
    return {
        "puzzle_hash": puzzle.hash,
        "puzzle_id": puzzle.label,
        "encoding": enc.name,
        "solver": canonical_solver(solver),
        "variables": enc.nvars,
        "clauses": len(enc.clauses),
        **res.stats,
        "time_s": res.time_s,
        "status": res.status,
    }


def stats_table(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str] = ("block_start",),
    solvers: Iterable[str] = STUDY_SOLVERS,
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
) -> pd.DataFrame:
    """Return one row per puzzle x encoding x solver (columns :data:`RECORD_COLUMNS`).

    Rows come in input order: puzzles, then encodings, then solvers. Each encoding is built
    once per puzzle.
    """
    encodings = list(encodings)
    solvers = [canonical_solver(s) for s in solvers]
    rows = []
    for p in puzzles:
        for e in encodings:
            enc = get_encoding(e)(p)
            for s in solvers:
                rows.append(
                    solver_record(
                        p, e, s, conf_budget=conf_budget, time_limit_s=time_limit_s, enc=enc
                    )
                )
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))


def solve_puzzle(
    puzzle: Puzzle,
    encoding: str = "block_start",
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
) -> tuple[str, Grid | None]:
    """Return ``(status, grid)``: one solution of ``puzzle`` (verified) or None when not sat."""
    enc = get_encoding(encoding)(puzzle)
    res = run_solver(enc.clauses, solver, conf_budget=conf_budget, time_limit_s=time_limit_s)
    if res.status != "sat":
        return res.status, None
    return "sat", _verified_grid(puzzle, enc, res.model or [])


@dataclass(frozen=True)
class Uniqueness:
    """Answer of :func:`uniqueness`.

    ``status``: ``"unique"``, ``"multiple"``, ``"unsat"`` or ``"unknown"`` (budget used up).
    ``grid``: the first solution found (None when unsat/unknown before any), ``second_grid``:
    a different solution when ``multiple``. ``stats``: counters summed over both solve calls;
    ``time_s``: total wall seconds.
    """

    status: str
    grid: Grid | None
    second_grid: Grid | None
    stats: dict[str, int]
    time_s: float


def uniqueness(
    puzzle: Puzzle,
    encoding: str = "block_start",
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
) -> Uniqueness:
    """Return whether ``puzzle`` has no, one, or several solutions.

    Solve once; if sat, add the clause blocking the first grid (over cell variables only) to
    the same solver instance and solve again: unsat => ``unique``, sat => ``multiple`` (with the
    second grid). Budgets apply to each solve call separately. Both grids are verified.
    """
    name = _check_budgets(solver, conf_budget, time_limit_s)
    enc = get_encoding(encoding)(puzzle)
    with Solver(name=name, bootstrap_with=enc.clauses) as s:
        first = _solve(s, conf_budget, time_limit_s, name)
        if first.status != "sat":
            return Uniqueness(first.status, None, None, first.stats, first.time_s)
        grid = _verified_grid(puzzle, enc, first.model or [])
        s.add_clause(enc.blocking_clause(first.model or []))
        second = _solve(s, conf_budget, time_limit_s, name)
    total_time = first.time_s + second.time_s
    # accum_stats() is cumulative over the instance's lifetime: the second read is the total.
    stats = second.stats
    if second.status == "unsat":
        return Uniqueness("unique", grid, None, stats, total_time)
    if second.status == "unknown":
        return Uniqueness("unknown", grid, None, stats, total_time)
    other = _verified_grid(puzzle, enc, second.model or [])
    if other == grid:
        raise PuzzleError("blocking clause did not exclude the first grid (encoding bug)")
    return Uniqueness("multiple", grid, other, stats, total_time)


#: Solver names in the study's ``solver_statistics.txt`` -> python-sat names.
PUBLISHED_SOLVER_NAMES = {
    "MiniSat22": "minisat22",
    "Glucose42": "glucose42",
    "CaDiCaL195": "cadical195",
}


def parse_solver_statistics(path: str | Path) -> pd.DataFrame:
    """Return the published ``solver_statistics.txt`` as a table.

    One row per ``puzzle id`` x ``Solver`` block, with columns ``puzzle_id`` (the served id, a
    string), ``solver`` (python-sat name), ``variables``, ``clauses``, ``decisions``,
    ``propagations``, ``conflicts``, ``restarts`` and ``time_s`` (the published ``time_ms`` /
    1000). Raises :class:`ValueError` naming the file and line for text it cannot read.
    """
    import ast
    import re

    path = Path(path)
    rows = []
    pid = solver = None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        if m := re.fullmatch(r"puzzle id:\s*(\S+)", s):
            pid, solver = m.group(1), None
        elif m := re.fullmatch(r"Solver:\s*(\S+)", s):
            name = m.group(1)
            solver = PUBLISHED_SOLVER_NAMES.get(name) or canonical_solver(name)
        elif s.startswith("{") and pid is not None and solver is not None:
            try:
                d = ast.literal_eval(s)
                rows.append(
                    {
                        "puzzle_id": pid,
                        "solver": solver,
                        "variables": int(d["nvars_input"]),
                        "clauses": int(d["nclauses_input"]),
                        **{k: int(d[k]) for k in STAT_COLUMNS},
                        "time_s": float(d["time_ms"]) / 1000.0,
                    }
                )
            except (ValueError, SyntaxError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{n}: cannot read the statistics record ({exc})") from None
        else:
            raise ValueError(f"{path}:{n}: unexpected line {s[:60]!r}")
    if not rows:
        raise ValueError(f"{path}: no solver statistics found")
    return pd.DataFrame(rows)


def compare_published(
    metrics: pd.DataFrame, published: pd.DataFrame, encoding: str = "block_start"
) -> pd.DataFrame:
    """Return computed vs published statistics, one row per puzzle x solver x quantity.

    ``metrics``: rows of :func:`stats_table`; ``published``: :func:`parse_solver_statistics`.
    Joined on the served id (``puzzle_id``) and solver, for ``encoding`` only. Columns:
    ``puzzle_id``, ``puzzle_hash``, ``solver``, ``quantity`` (variables, clauses, decisions,
    propagations, conflicts, restarts), ``published``, ``computed``, ``equal``. A published row
    with no computed match gets ``computed`` missing and ``equal`` False.
    """
    quantities = ["variables", "clauses", *STAT_COLUMNS]
    m = metrics[metrics["encoding"] == encoding]
    m = m.assign(puzzle_id=m["puzzle_id"].astype(str))
    pub = published.assign(puzzle_id=published["puzzle_id"].astype(str))
    joined = pub.merge(
        m[["puzzle_id", "puzzle_hash", "solver", *quantities]],
        on=["puzzle_id", "solver"],
        how="left",
        suffixes=("_published", "_computed"),
    )
    rows = []
    for _, r in joined.iterrows():
        for q in quantities:
            comp = r[f"{q}_computed"]
            has = pd.notna(comp)
            rows.append(
                {
                    "puzzle_id": r["puzzle_id"],
                    "puzzle_hash": r["puzzle_hash"] if has else "",
                    "solver": r["solver"],
                    "quantity": q,
                    "published": int(r[f"{q}_published"]),
                    "computed": int(comp) if has else pd.NA,
                    "equal": bool(has and int(comp) == int(r[f"{q}_published"])),
                }
            )
    out = pd.DataFrame(rows)
    out["computed"] = out["computed"].astype("Int64")
    return out


METRIC_COLUMNS = [c for c in RECORD_COLUMNS if c != "time_s"]
TIMING_COLUMNS = ["puzzle_hash", "puzzle_id", "encoding", "solver", "time_s"]


def metrics_and_timings(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str],
    solvers: Iterable[str],
    *,
    conf_budget: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(metrics, timings)`` from :func:`stats_table`.

    ``metrics`` (columns :data:`METRIC_COLUMNS`) holds only deterministic values, so the same
    puzzles and settings give a byte-identical table; ``timings`` (:data:`TIMING_COLUMNS`)
    holds the wall seconds of each solve call. No wall-time limit is used here, since it would
    make ``status`` depend on the machine.
    """
    stats = stats_table(puzzles, encodings, solvers, conf_budget=conf_budget)
    return stats[METRIC_COLUMNS].copy(), stats[TIMING_COLUMNS].copy()


def _grid_text(grid: Grid | None) -> str:
    return "" if grid is None else "/".join("".join("#" if v else "." for v in r) for r in grid)


def uniqueness_table(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str],
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
) -> pd.DataFrame:
    """Return one row per puzzle x encoding with the :func:`uniqueness` answer.

    Columns: ``puzzle_hash``, ``puzzle_id``, ``encoding``, ``solver``, ``status``
    (unique/multiple/unsat/unknown), ``matches_solution`` (the first grid found equals the
    puzzle's given solution; missing when none is given or no grid was found), ``grid`` and
    ``second_grid`` (rows of ``#``/``.`` joined by ``/``; empty when absent).
    """
    encodings = list(encodings)
    rows = []
    for p in puzzles:
        for e in encodings:
            u = uniqueness(p, e, solver, conf_budget=conf_budget)
            match = pd.NA if p.solution is None or u.grid is None else u.grid == p.solution
            rows.append(
                {
                    "puzzle_hash": p.hash,
                    "puzzle_id": p.label,
                    "encoding": e,
                    "solver": canonical_solver(solver),
                    "status": u.status,
                    "matches_solution": match,
                    "grid": _grid_text(u.grid),
                    "second_grid": _grid_text(u.second_grid),
                }
            )
    out = pd.DataFrame(rows)
    out["matches_solution"] = out["matches_solution"].astype("boolean")
    return out
