"""Run python-sat solvers on Nonogram encodings: statistics, solutions, uniqueness.

One run = one fresh solver built with every clause of an :class:`~nonolab.sat.encodings.Encoding`
(``bootstrap_with``, in the encoding's clause order), solved once; statistics are read with
python-sat's ``accum_stats()``. This is how the published statistics were produced
(METHODS.md section 2) and runs are deterministic (same puzzle, encoding and solver => same
counts).

Budgets: ``conf_budget`` (conflicts) and ``time_limit_s`` (wall seconds) turn a run that would
take too long into status ``"unknown"`` rather than a hang. Every limited call of the package
goes through :func:`solve_limited`: solvers python-sat can interrupt are stopped by a timer
(:class:`Watchdog`), the others (CaDiCaL, see :data:`NO_INTERRUPT_SOLVERS`) run in slices of
:data:`SLICE_CONFLICTS` conflicts with the clock checked between slices. Every grid returned
is verified against the clues (:func:`nonolab.sat.puzzles.check_solution`). Tables of these
results (pandas) are built in :mod:`nonolab.measure.tables`.
"""

from __future__ import annotations

import ast
import functools
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

#: Solvers whose ``interrupt()`` python-sat does not implement (it raises
#: ``NotImplementedError`` for CaDiCaL, Lingeling, CryptoMiniSat and Kissat): under a wall-time
#: limit they run in slices of :data:`SLICE_CONFLICTS` conflicts (:func:`solve_limited`). Every
#: other solver (MiniSat, Glucose, Gluecard, Minicard, Maple*, MergeSat, Ergo) is interrupted by
#: a timer instead.
NO_INTERRUPT_SOLVERS: frozenset[str] = frozenset(
    {"cadical103", "cadical153", "cadical195", "cadical300", "lingeling", "cryptosat", "kissat404"}
)

#: Conflicts per slice when a solver of :data:`NO_INTERRUPT_SOLVERS` runs under a time limit.
SLICE_CONFLICTS = 2000

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


@functools.cache
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
class SolverRun:
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
) -> SolverRun:
    """Return the result of one fresh ``solver`` built with ``clauses`` and solved once.

    With a budget the run uses ``solve_limited`` (:func:`solve_limited`) and returns status
    ``"unknown"`` when the conflict budget is used up or ``time_limit_s`` wall seconds pass.
    Interruptible solvers are stopped by a timer; CaDiCaL (no ``interrupt()`` in python-sat)
    runs in slices of :data:`SLICE_CONFLICTS` conflicts with the clock checked between slices,
    so its statistics under a time limit differ from an unlimited run's.
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


def interruptible(name: str) -> bool:
    """Return whether python-sat can interrupt solver ``name`` (a name or alias) from another
    thread, i.e. it is not in :data:`NO_INTERRUPT_SOLVERS`."""
    return canonical_solver(name) not in NO_INTERRUPT_SOLVERS


class Watchdog:
    """A timer that interrupts ``s`` at ``deadline`` (a ``time.perf_counter()`` value) when
    the solver is :func:`interruptible` (otherwise, or without a deadline, it does nothing),
    for one call or for all the calls on one solver: a thread per call cost ~1 ms a puzzle on
    TAAI, where a hybrid solve makes up to eight calls. Leaving it stops the timer and clears
    the interrupt flag. ``active``: whether a timer runs."""

    def __init__(self, s: Solver, deadline: float | None, name: str) -> None:
        self.active = deadline is not None and interruptible(name)
        self._solver = s
        self._timer: threading.Timer | None = None
        if self.active and deadline is not None:
            remaining = max(deadline - time.perf_counter(), 0.0)
            self._timer = threading.Timer(remaining, s.interrupt)
            self._timer.daemon = True
            self._timer.start()

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()  # a timer already firing finishes before the flag is cleared
            self._solver.clear_interrupt()


def solve_limited(
    s: Solver,
    name: str,
    *,
    conflict_budget: int | None = None,
    deadline: float | None = None,
    assumptions: Sequence[int] = (),
    watchdog: Watchdog | None = None,
) -> bool | None:
    """Solve ``s`` (python-sat solver ``name``) once under an optional conflict budget and
    wall-clock ``deadline`` (a ``time.perf_counter()`` value); return True/False, or None when
    it gave up (budget used up or deadline passed).

    Without limits: a plain ``solve``. With a conflict budget only: one ``solve_limited`` call
    with that budget, for every solver (so statistics equal an uninterrupted run's). With a
    deadline: an :func:`interruptible` solver gets one ``solve_limited`` call stopped by a timer
    (``watchdog``'s when it is active, else one for this call; one call, because slicing
    restarts MiniSat's restart schedule at every slice and was measured to cost up to 25x more
    conflicts on TAAI puzzles, docs/decisions.md); the others (CaDiCaL) run in slices of at most
    :data:`SLICE_CONFLICTS` conflicts with the clock checked between slices, so their counters
    differ from an unlimited run's. ``assumptions``: literals assumed for this call only (False
    then means "no solution under them"). The budget is set at every call, so one left by an
    earlier call on the same solver never applies.
    """
    if deadline is None:
        if conflict_budget is None:
            return s.solve(assumptions=assumptions)
        s.conf_budget(conflict_budget)
        return s.solve_limited(assumptions=assumptions)
    if interruptible(name):
        s.conf_budget(-1 if conflict_budget is None else conflict_budget)  # -1: no budget
        if time.perf_counter() > deadline:
            return None
        if watchdog is not None and watchdog.active:
            return s.solve_limited(assumptions=assumptions, expect_interrupt=True)
        with Watchdog(s, deadline, name) as own:
            return s.solve_limited(assumptions=assumptions, expect_interrupt=own.active)
    used = 0
    while True:
        if time.perf_counter() > deadline:
            return None
        step = SLICE_CONFLICTS
        if conflict_budget is not None:
            step = min(step, conflict_budget - used)
            if step <= 0:
                return None
        before = (s.accum_stats() or {}).get("conflicts", 0)
        s.conf_budget(step)
        res = s.solve_limited(assumptions=assumptions)
        if res is not None:
            return res
        used += max((s.accum_stats() or {}).get("conflicts", 0) - before, 1)


def _solve(s: Solver, conf_budget: int | None, time_limit_s: float | None, name: str) -> SolverRun:
    t0 = time.perf_counter()
    deadline = None if time_limit_s is None else t0 + time_limit_s
    res = solve_limited(s, name, conflict_budget=conf_budget, deadline=deadline)
    elapsed = time.perf_counter() - t0
    stats = s.accum_stats() or {}
    stats = {k: int(stats.get(k, 0)) for k in STAT_COLUMNS}
    if res is None:
        return SolverRun("unknown", None, stats, elapsed)
    if res:
        return SolverRun("sat", list(s.get_model()), stats, elapsed)
    return SolverRun("unsat", None, stats, elapsed)


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


def solver_records(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str] = ("block_start",),
    solvers: Iterable[str] = STUDY_SOLVERS,
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one :func:`solver_record` per puzzle x encoding x solver, in input order:
    puzzles, then encodings, then solvers. Each encoding is built once per puzzle."""
    encodings = list(encodings)
    solvers = [canonical_solver(s) for s in solvers]
    for p in puzzles:
        for e in encodings:
            enc = get_encoding(e)(p)
            for s in solvers:
                yield solver_record(
                    p, e, s, conf_budget=conf_budget, time_limit_s=time_limit_s, enc=enc
                )


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


def _grid_text(grid: Grid | None) -> str:
    return "" if grid is None else "/".join("".join("#" if v else "." for v in r) for r in grid)


def uniqueness_records(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str],
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one record per puzzle x encoding with the :func:`uniqueness` answer.

    Keys: ``puzzle_hash``, ``puzzle_id``, ``encoding``, ``solver``, ``status``
    (unique/multiple/unsat/unknown), ``matches_solution`` (the first grid found equals the
    puzzle's given solution; None when none is given or no grid was found), ``grid`` and
    ``second_grid`` (rows of ``#``/``.`` joined by ``/``; empty when absent).
    """
    encodings = list(encodings)
    for p in puzzles:
        for e in encodings:
            u = uniqueness(p, e, solver, conf_budget=conf_budget)
            yield {
                "puzzle_hash": p.hash,
                "puzzle_id": p.label,
                "encoding": e,
                "solver": canonical_solver(solver),
                "status": u.status,
                "matches_solution": (
                    None if p.solution is None or u.grid is None else u.grid == p.solution
                ),
                "grid": _grid_text(u.grid),
                "second_grid": _grid_text(u.second_grid),
            }


#: Solver names in the study's ``solver_statistics.txt`` -> python-sat names.
PUBLISHED_SOLVER_NAMES = {
    "MiniSat22": "minisat22",
    "Glucose42": "glucose42",
    "CaDiCaL195": "cadical195",
}


def read_solver_statistics(path: str | Path) -> list[dict[str, Any]]:
    """Return the records of the published ``solver_statistics.txt``.

    One record per ``puzzle id`` x ``Solver`` block, with keys ``puzzle_id`` (the served id, a
    string), ``solver`` (python-sat name), ``variables``, ``clauses``, ``decisions``,
    ``propagations``, ``conflicts``, ``restarts`` (counts) and ``time_s`` (the published
    ``time_ms`` / 1000, seconds). Raises :class:`ValueError` naming the file and line for text
    it cannot read.
    """
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
    return rows
