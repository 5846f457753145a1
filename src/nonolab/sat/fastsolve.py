"""Hybrid Nonogram solver: line propagation, optional probing, then SAT on what remains.

Pipeline of :func:`solve`:

1. propagate the complete line solver to a fixpoint (:func:`nonolab.sat.linesolver.propagate`);
2. optionally (off by default) probe single cells (:func:`nonolab.sat.linesolver.probe`);
3. if cells remain unknown, encode only the remaining problem: lines whose cells are all known
   are dropped, every other line is encoded over the block starts still feasible given the
   known cells (:func:`nonolab.sat.linesolver.line_placements`), and known cells become unit
   clauses (order encoding by default; any registered encoding is accepted and then given the
   whole puzzle plus the units);
4. solve with a python-sat solver (``"auto"`` by default: MiniSat 2.2 when at most
   :data:`AUTO_SMALL_MAX_UNKNOWN` cells are unknown, else CaDiCaL 1.9.5) - on such small
   problems first under assumptions from belief propagation (``guide="bp"``, :func:`_guided`)
   - then prove uniqueness on the same solver instance by blocking the model over the unknown
   cell variables and solving again;
5. on a large remaining problem (more than :data:`AUTO_SMALL_MAX_UNKNOWN` unknown cells) whose
   first CaDiCaL attempt finds no solution in :data:`FALLBACK_AFTER_CONFLICTS` conflicts, the
   fallback: by default (``hard="bp"``) belief-propagation decimation checked by CaDiCaL
   (:mod:`nonolab.sat.bpsolve`) for up to :data:`BP_LIMIT_S` seconds, then (or with
   ``hard="kissat"`` at once) :mod:`nonolab.sat.hardsolve` (probing clauses + Kissat); a second
   solution by a 2x2 switch or solution-guided CaDiCaL.

A propagation/probing fixpoint that is complete is the unique solution (both steps only set
cells forced in every solution). Every grid returned is checked against the clues first.
A timeout or conflict budget that runs out gives status ``unknown``.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pysat.solvers import Solver

from nonolab.sat.encodings import Encoding, get_encoding
from nonolab.sat.encodings.order import SKIP, encode_order
from nonolab.sat.linesolver import (
    UNKNOWN,
    Contradiction,
    GridState,
    ProbeStats,
    PropagationStats,
    _replace,
    line_placements,
    probe,
    probe_branches,
    propagate,
)
from nonolab.sat.puzzles import Grid, Puzzle, check_solution
from nonolab.sat.solvers import Watchdog, solve_limited

if TYPE_CHECKING:  # imported lazily, where the fallback runs
    from nonolab.sat.bpsolve import DecimationStats

#: CaDiCaL 1.9.5 options used by default (python-sat ``configure``): stable-mode search only and
#: no bounded variable elimination. On two disjoint 40-puzzle samples of TAAI 2011 this cut
#: conflicts 2.5-3x and time ~3x against the defaults (docs/decisions.md).
CADICAL_OPTIONS: dict[str, int] = {"stabilizeonly": 1, "elim": 0}

#: ``solver="auto"`` uses :data:`AUTO_SMALL_SOLVER` when at most this many cells are unknown
#: before SAT (every 25x25 puzzle), else :data:`AUTO_LARGE_SOLVER`. On TAAI 2011 MiniSat 2.2
#: was ~1.3-1.4x faster overall than CaDiCaL 1.9.5 with :data:`CADICAL_OPTIONS`
#: (docs/decisions.md); problems with many unknown cells (Knotty, density-0.5 112x112) keep
#: CaDiCaL, where MiniSat was not measured.
AUTO_SMALL_MAX_UNKNOWN = 1000
AUTO_SMALL_SOLVER = "minisat22"
AUTO_LARGE_SOLVER = "cadical195"

#: with ``fallback=True``, the first SAT attempt on a problem of more than
#: :data:`AUTO_SMALL_MAX_UNKNOWN` unknown cells gets this many conflicts; if it finds no
#: solution, :mod:`nonolab.sat.hardsolve` takes over (probing clauses + Kissat, then a second
#: solution by a 2x2 switch or solution-guided CaDiCaL). Knotty and Faase need it; 50k
#: conflicts is ~3-7 s of CaDiCaL on 40x40-112x112 puzzles (docs/decisions.md).
FALLBACK_AFTER_CONFLICTS = 50_000

#: the fallback's methods for a first solution (``hard``): ``bp`` = BP decimation checked by
#: CaDiCaL (:mod:`nonolab.sat.bpsolve`) for up to :data:`BP_LIMIT_S` seconds, then Kissat;
#: ``kissat`` = probing clauses + Kissat only. BP decimation found first solutions of Knotty in
#: 1.8 s and Faase in 4.5 s (Kissat with probing clauses: 79 s and 99 s) and of the solve
#: benchmark's density-0.5 112x112 board in ~10 min (Kissat: none in 890 s); docs/decisions.md
HARD_METHODS = ("bp", "kissat")
#: seconds BP decimation gets before the fallback hands over to Kissat (a complete search; BP
#: decimation proves unsat only when CaDiCaL refutes the CNF under no guesses)
BP_LIMIT_S = 1800.0

#: first-solution guidance (``guide``) for problems of at most :data:`AUTO_SMALL_MAX_UNKNOWN`
#: unknown cells: ``bp`` = belief propagation (:data:`GUIDE_ITERS` sweeps; the numba kernel
#: when numba, an optional dependency, is installed, else numpy: equal messages up to rounding,
#: which can reorder tied cells and so change conflict counts, never statuses) ranks the
#: unknown cells by how polarised their beliefs are, and the SAT solver first looks for a
#: solution under the likelier values of the most polarised cells as assumptions, in the
#: stages of :data:`GUIDE_STAGES`, then without assumptions on the same instance (learnt
#: clauses kept); ``none`` = one plain call. On TAAI 2011 ``bp`` cut MiniSat's conflicts
#: (first solutions and uniqueness) from 2,359,575 to 371,487 with numba (docs/decisions.md)
GUIDES = ("bp", "none")
#: BP sweeps for the guidance (10 gave fewer conflicts than 5, 15 or 30 on a 200-puzzle sample)
GUIDE_ITERS = 10
#: guidance stages: (share of the unknown cells assumed, conflict budget of that call); chosen
#: among four schedules on TAAI 2011 and checked on 3,000 held-out puzzles of six other
#: tournament sets, where it needed the fewest conflicts too (docs/decisions.md)
GUIDE_STAGES: tuple[tuple[float, int], ...] = (
    (0.5, 5000),
    (0.4, 5000),
    (0.3, 5000),
    (0.2, 5000),
    (0.1, 5000),
    (0.05, 5000),
)

STATUSES = ("unique", "multiple", "unsat", "unknown")
#: the phase times (seconds) of :attr:`SolveResult.times` from :func:`solve`, in pipeline order
#: (the record also has ``time_to_first_s`` and ``total_s``)
PHASES = ("propagate_s", "probe_s", "encode_s", "guide_s", "solve_s", "uniqueness_s")


@dataclass
class SolveResult:
    """Outcome of :func:`solve`.

    ``status``: ``unique`` | ``multiple`` | ``unsat`` | ``unknown``; ``grid``: a solution (0/1
    rows) or None; ``second_grid``: a different solution when ``multiple``; ``times``: seconds
    per phase (``propagate_s``, ``probe_s``, ``encode_s``, ``solve_s``, ``uniqueness_s``,
    ``total_s``) and ``time_to_first_s`` (until the first solution was known); ``counts``:
    cells known after propagation/probing, CNF size, solver statistics; ``reason``: why the
    status is ``unknown``/``unsat``; ``solver``: the python-sat solver that ran (None when
    logic alone decided).
    """

    status: str
    grid: Grid | None = None
    second_grid: Grid | None = None
    times: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    reason: str | None = None
    solver: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (grids as ``#``/``.`` row strings)."""
        from nonolab.sat.puzzles import grid_to_strings

        d: dict[str, Any] = {"status": self.status}
        d["grid"] = grid_to_strings(self.grid) if self.grid is not None else None
        if self.second_grid is not None:
            d["second_grid"] = grid_to_strings(self.second_grid)
        d["time_s"] = self.times.get("total_s")
        if self.solver is not None:
            d["solver"] = self.solver
        d.update(self.times)
        d.update(self.counts)
        if self.reason:
            d["reason"] = self.reason
        return d


class _Clock:
    def __init__(self, timeout_s: float | None):
        self.t0 = time.perf_counter()
        self.deadline = None if timeout_s is None else self.t0 + timeout_s

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline


@dataclass
class _Remaining:
    """What the fallback's stages share: the puzzle, its propagated ``state``, the CNF ``enc``
    of what remains unknown, the call's clock and options, and the ``times`` (seconds),
    ``counts`` and ``info`` of its :class:`SolveResult`, filled in as the stages run."""

    puzzle: Puzzle
    state: GridState
    enc: Encoding
    clock: _Clock
    prove_unique: bool
    solver_options: dict[str, int] | None
    times: dict[str, float]
    counts: dict[str, int]
    info: dict[str, str]


def _verified(puzzle: Puzzle, grid: Grid) -> Grid:
    check_solution(puzzle, grid)  # raises PuzzleError naming the first wrong line
    return grid


def remaining_encoding(puzzle: Puzzle, state: GridState, encoding: str = "order") -> Encoding:
    """Return a CNF of the part of ``puzzle`` left unknown in ``state``.

    For ``order``: fully known lines are dropped, the others are encoded over the block starts
    still feasible, and known cells are unit clauses. For another registered encoding: its full
    encoding plus the units. Raises :class:`Contradiction` if a line has no completion.
    """
    known = state.to_cells()
    if encoding != "order":
        enc = get_encoding(encoding)(puzzle)
        w = puzzle.width
        for r, row in enumerate(known):
            for c, v in enumerate(row):
                if v == 1:
                    enc.clauses.append([r * w + c + 1])
                elif v == 0:
                    enc.clauses.append([-(r * w + c + 1)])
        return enc
    h, w = puzzle.height, puzzle.width
    full_r, full_c = (1 << w) - 1, (1 << h) - 1
    rpl: list = []
    for r in range(h):
        f, e = state.row_fill[r], state.row_empty[r]
        if f | e == full_r:
            rpl.append(SKIP)
            continue
        if not f | e:
            rpl.append(None)  # nothing known: the packed ranges are exact
            continue
        pl = line_placements(puzzle.rows[r], w, f, e)
        if pl is None:
            raise Contradiction(f"row {r}")
        rpl.append(pl)
    cpl: list = []
    for c in range(w):
        f, e = state.col_fill[c], state.col_empty[c]
        if f | e == full_c:
            cpl.append(SKIP)
            continue
        if not f | e:
            cpl.append(None)
            continue
        pl = line_placements(puzzle.cols[c], h, f, e)
        if pl is None:
            raise Contradiction(f"column {c}")
        cpl.append(pl)
    return encode_order(puzzle, known=known, row_placements=rpl, col_placements=cpl)


def solve(
    puzzle: Puzzle,
    *,
    encoding: str = "order",
    solver: str = "auto",
    probing: bool = False,
    timeout_s: float | None = None,
    conflict_budget: int | None = None,
    prove_unique: bool = True,
    probe_limit_s: float | None = None,
    solver_options: dict[str, int] | None = None,
    fallback: bool = True,
    hard: str = "bp",
    bp_jobs: int = 1,
    guide: str = "bp",
) -> SolveResult:
    """Solve ``puzzle`` with the hybrid pipeline (see the module docstring); return a
    :class:`SolveResult` (times in seconds).

    ``encoding``: CNF for the remaining problem; ``solver``: python-sat solver name, or
    ``"auto"`` (default; see :func:`resolve_solver`);
    ``probing``: run single-cell probing after propagation (bounded by ``probe_limit_s`` seconds
    when given, and by ``timeout_s``); off by default: with the current encoder, SAT on the
    remaining problem was as fast or faster on every benchmark puzzle measured (random 112x112
    at density 0.6: 0.5-0.6 s without probing, 1.3-9 s with; docs/decisions.md);
    ``timeout_s``: wall-clock limit for the whole call;
    ``conflict_budget``: conflict limit per SAT call; ``prove_unique``: look for a second
    solution (else a found solution is reported as ``unique`` only when logic alone found it,
    ``multiple`` never, and ``unknown``-uniqueness is marked in ``counts['uniqueness_checked']``);
    ``solver_options``: CaDiCaL options (default :data:`CADICAL_OPTIONS`; ``{}`` = CaDiCaL's
    own defaults); ``fallback``: on problems with more than :data:`AUTO_SMALL_MAX_UNKNOWN`
    unknown cells, give the first SAT attempt :data:`FALLBACK_AFTER_CONFLICTS` conflicts and
    then switch to the fallback (``counts['fallback'] = 1``); ``hard``: the fallback's first
    method, one of :data:`HARD_METHODS` (``bp``: BP decimation, then Kissat; ``kissat``: Kissat
    only); ``bp_jobs``: processes running BP decimation's restart slices at once (1, the
    default: one after the other in this process, a deterministic path; N > 1: the next N
    slices of the schedule in N worker processes, the first model wins, so which grid is
    found first can depend on timing; see :func:`_bp_portfolio`); ``guide``: first-solution
    guidance on problems of at most :data:`AUTO_SMALL_MAX_UNKNOWN` unknown cells, one of
    :data:`GUIDES` (``bp``, the default: BP-ranked assumptions first, see :func:`_guided`;
    ``none``: one plain SAT call). Guidance changes which solution is found first, never the
    status: assumptions that admit no solution only end their stage.
    """
    if hard not in HARD_METHODS:
        raise ValueError(f"hard={hard!r}: use one of {', '.join(HARD_METHODS)}")
    if guide not in GUIDES:
        raise ValueError(f"guide={guide!r}: use one of {', '.join(GUIDES)}")
    if bp_jobs < 1:
        raise ValueError(f"bp_jobs={bp_jobs!r}: needs at least 1")
    clock = _Clock(timeout_s)
    times = dict.fromkeys(PHASES, 0.0)
    counts: dict[str, int] = {"n_cells": puzzle.height * puzzle.width}
    info: dict[str, str] = {}
    res = _solve(
        puzzle,
        solver_options,
        encoding,
        solver,
        probing,
        clock,
        conflict_budget,
        prove_unique,
        probe_limit_s,
        times,
        counts,
        info,
        fallback,
        hard,
        bp_jobs,
        guide,
    )
    times["total_s"] = time.perf_counter() - clock.t0
    res.times = times
    res.counts = counts
    res.solver = info.get("solver")
    return res


def _presolve(
    puzzle: Puzzle,
    probing: bool,
    clock: _Clock,
    probe_limit_s: float | None,
    times: dict[str, float],
    counts: dict[str, int],
) -> GridState | SolveResult:
    """Propagate (and probe, if ``probing``) ``puzzle``; return the resulting state, or the
    final :class:`SolveResult` when logic alone decided (``unique`` or ``unsat``). Fills
    ``propagate_s``/``probe_s`` (seconds) and the cell counts."""
    t = time.perf_counter()
    pst = PropagationStats()
    try:
        state = propagate(puzzle, stats=pst)
    except Contradiction as exc:
        times["propagate_s"] = time.perf_counter() - t
        return SolveResult("unsat", reason=f"propagation: {exc} has no completion")
    times["propagate_s"] = time.perf_counter() - t
    counts["line_solves"] = pst.line_solves
    counts["cells_by_propagation"] = state.n_known()
    counts["cells_by_probing"] = 0
    counts["probed"] = int(bool(probing))
    if probing and not state.is_complete():
        t = time.perf_counter()
        deadline = clock.deadline
        if probe_limit_s is not None:
            d2 = t + probe_limit_s
            deadline = d2 if deadline is None else min(deadline, d2)
        before = state.n_known()
        pr = ProbeStats()
        try:
            probe(puzzle, state, stats=pr, deadline=deadline)
        except Contradiction as exc:
            times["probe_s"] = time.perf_counter() - t
            return SolveResult("unsat", reason=f"probing: {exc}")
        times["probe_s"] = time.perf_counter() - t
        counts["probes"] = pr.probes
        counts["cells_by_probing"] = state.n_known() - before
    if state.is_complete():
        times["time_to_first_s"] = time.perf_counter() - clock.t0
        counts["uniqueness_checked"] = 1
        return SolveResult("unique", grid=_verified(puzzle, state.to_grid()))
    return state


def _solve(
    puzzle: Puzzle,
    solver_options: dict[str, int] | None,
    encoding: str,
    solver: str,
    probing: bool,
    clock: _Clock,
    conflict_budget: int | None,
    prove_unique: bool,
    probe_limit_s: float | None,
    times: dict[str, float],
    counts: dict[str, int],
    info: dict[str, str],
    fallback: bool = False,
    hard: str = "bp",
    bp_jobs: int = 1,
    guide: str = "none",
) -> SolveResult:
    pre = _presolve(puzzle, probing, clock, probe_limit_s, times, counts)
    if isinstance(pre, SolveResult):
        return pre
    state = pre
    if clock.expired():
        return SolveResult("unknown", reason="timeout before SAT")
    t = time.perf_counter()
    try:
        with _gc_paused():
            enc = remaining_encoding(puzzle, state, encoding)
    except Contradiction as exc:
        times["encode_s"] = time.perf_counter() - t
        return SolveResult("unsat", reason=f"encoding: {exc} has no completion")
    times["encode_s"] = time.perf_counter() - t
    counts["n_vars"] = enc.nvars
    counts["n_clauses"] = len(enc.clauses)
    n_unknown = counts["n_cells"] - state.n_known()
    solver = resolve_solver(solver, n_unknown)
    info["solver"] = solver
    counts["minisat"] = int(solver == "minisat22")
    staged = fallback and n_unknown > AUTO_SMALL_MAX_UNKNOWN
    first_budget = conflict_budget
    if staged:
        first_budget = min(conflict_budget or FALLBACK_AFTER_CONFLICTS, FALLBACK_AFTER_CONFLICTS)
    counts["fallback"] = 0
    counts["guide_stage"] = 0
    with (
        _new_solver(solver, enc.clauses, solver_options) as s,
        Watchdog(s, clock.deadline, solver) as wd,
    ):
        ok = None
        if guide == "bp" and not staged:
            ok = _guided(s, puzzle, state, clock, conflict_budget, solver, times, counts, wd)
        t = time.perf_counter()
        if not ok and not clock.expired():
            ok = solve_limited(
                s, solver, conflict_budget=first_budget, deadline=clock.deadline, watchdog=wd
            )
        times["solve_s"] += time.perf_counter() - t
        if ok is None:
            _stats(s, counts)
            if staged and not clock.expired() and first_budget != conflict_budget:
                s.delete()
                run = _Remaining(
                    puzzle, state, enc, clock, prove_unique, solver_options, times, counts, info
                )
                return _fallback(run, hard, encoding=encoding, bp_jobs=bp_jobs)
            return SolveResult("unknown", reason="timeout or conflict budget (first solution)")
        if not ok:
            _stats(s, counts)
            return SolveResult("unsat", reason="SAT solver: no solution")
        times["time_to_first_s"] = time.perf_counter() - clock.t0
        model = s.get_model()
        grid = _verified(puzzle, enc.decode(model))
        if not prove_unique:
            _stats(s, counts)
            counts["uniqueness_checked"] = 0
            return SolveResult("unknown", grid=grid, reason="uniqueness not checked")
        t = time.perf_counter()
        _block_model(s, model, state, puzzle.width)
        ok2 = solve_limited(
            s, solver, conflict_budget=conflict_budget, deadline=clock.deadline, watchdog=wd
        )
        times["uniqueness_s"] = time.perf_counter() - t
        _stats(s, counts)
        counts["uniqueness_checked"] = int(ok2 is not None)
        if ok2 is None:
            return SolveResult(
                "unknown", grid=grid, reason="timeout or conflict budget (uniqueness)"
            )
        if ok2:
            second = _verified(puzzle, enc.decode(s.get_model()))
            return SolveResult("multiple", grid=grid, second_grid=second)
        return SolveResult("unique", grid=grid)


def _guided(
    s: Solver,
    puzzle: Puzzle,
    state: GridState,
    clock: _Clock,
    conflict_budget: int | None,
    solver: str,
    times: dict[str, float],
    counts: dict[str, int],
    watchdog: Watchdog | None = None,
) -> bool | None:
    """Look for a first solution on ``s`` under BP-ranked assumptions; return True when a stage
    found a model (it is ``s``'s model), else None (the caller then solves without
    assumptions; a stage refuted or out of budget only ends that stage).

    Belief propagation (:func:`nonolab.sat.bpsolve.beliefs`, :data:`GUIDE_ITERS` sweeps, the
    compiled kernel when numba is installed) ranks the unknown cells by ``|belief - 0.5|``; stage ``(share, budget)``
    of :data:`GUIDE_STAGES` assumes the likelier value of the most polarised ``share`` of the
    unknown cells, with ``budget`` conflicts (at most ``conflict_budget``). ``guide_s`` gets
    the BP time (seconds), ``solve_s`` the stages'; ``counts['guide_stage']`` is the 1-based
    stage that found the model (0: none did).
    """
    import numpy as np

    from nonolab.sat.bpsolve import beliefs, line_automata

    t = time.perf_counter()
    known = np.array(state.to_cells(), dtype=np.int8)
    bel, _ = beliefs(
        (line_automata(puzzle.rows), line_automata(puzzle.cols)),
        known,
        iters=GUIDE_ITERS,
        compiled=True,
    )
    unknown = np.flatnonzero(known.ravel() == UNKNOWN)
    b = bel.ravel()[unknown]
    order = np.argsort(-np.abs(b - 0.5), kind="stable")
    lits = np.where(b[order] > 0.5, unknown[order] + 1, -(unknown[order] + 1)).tolist()
    times["guide_s"] += time.perf_counter() - t
    t = time.perf_counter()
    try:
        for stage, (share, budget) in enumerate(GUIDE_STAGES, 1):
            k = int(share * len(lits))
            if k == 0 or clock.expired():
                continue
            if conflict_budget is not None:
                budget = min(budget, conflict_budget)
            if solve_limited(
                s,
                solver,
                conflict_budget=budget,
                deadline=clock.deadline,
                assumptions=lits[:k],
                watchdog=watchdog,
            ):
                counts["guide_stage"] = stage
                return True
        return None
    finally:
        times["solve_s"] += time.perf_counter() - t


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (re-enabled after it, if it was
    on). The encoder allocates ~10k clause tuples for a 25x25 puzzle and holds no cycles; each
    700 allocations would start a collection, which on TAAI 2011 cost 1.3 of the 5.6 s spent
    encoding (docs/decisions.md)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _fallback(
    run: _Remaining, hard: str = "bp", *, encoding: str = "order", bp_jobs: int = 1
) -> SolveResult:
    """The fallback: with ``hard="bp"`` first :func:`_bp_stage`, then (unless it decided) the
    :mod:`nonolab.sat.hardsolve` stage (see there); times add to ``probe_s``, ``solve_s`` and
    ``uniqueness_s``."""
    from nonolab.sat.hardsolve import KISSAT, kissat_solve, probe_implications

    run.counts["fallback"] = 1
    if hard == "bp":
        res = _bp_stage(run, encoding=encoding, jobs=bp_jobs)
        if res is not None:
            return res
    run.info["solver"] = f"{run.info.get('solver', '')}+{KISSAT}"
    t = time.perf_counter()
    extra = probe_implications(run.puzzle, run.state, run.clock.deadline)
    run.times["probe_s"] += time.perf_counter() - t
    if extra is None:
        return SolveResult("unknown", reason="timeout (fallback: probing clauses)")
    run.counts["probe_clauses"] = len(extra)
    clauses = list(run.enc.clauses) + extra
    t = time.perf_counter()
    ok, model = kissat_solve(clauses, run.clock.deadline)
    run.times["solve_s"] += time.perf_counter() - t
    if ok is None:
        return SolveResult("unknown", reason="timeout (fallback: Kissat, first solution)")
    if not ok:
        return SolveResult("unsat", reason="SAT solver (Kissat fallback): no solution")
    assert model is not None
    return _after_first(
        run, model, lambda: _new_solver(AUTO_LARGE_SOLVER, clauses, run.solver_options)
    )


def _after_first(
    run: _Remaining, model: list[int], solver_for_second: Callable[[], Any]
) -> SolveResult:
    """The fallback's end once ``model`` (a first solution) is found: verify its grid, then look
    for a second solution as a 2x2 switch of it, else on the CaDiCaL instance (a context manager)
    ``solver_for_second()`` gives, with the model blocked and its cells as initial phases. Times
    add to ``uniqueness_s``."""
    from nonolab.sat.hardsolve import switch_neighbour

    run.times["time_to_first_s"] = time.perf_counter() - run.clock.t0
    grid = _verified(run.puzzle, run.enc.decode(model))
    if not run.prove_unique:
        run.counts["uniqueness_checked"] = 0
        return SolveResult("unknown", grid=grid, reason="uniqueness not checked")
    t = time.perf_counter()
    second = switch_neighbour(run.puzzle, grid)
    if second is not None:
        run.times["uniqueness_s"] += time.perf_counter() - t
        run.counts["uniqueness_checked"] = 1
        run.counts["second_by_switch"] = 1
        return SolveResult("multiple", grid=grid, second_grid=_verified(run.puzzle, second))
    n = run.puzzle.height * run.puzzle.width
    with solver_for_second() as s:
        _block_model(s, model, run.state, run.puzzle.width)
        s.set_phases([lit for lit in model if abs(lit) <= n])
        ok2 = solve_limited(s, AUTO_LARGE_SOLVER, deadline=run.clock.deadline)
        run.times["uniqueness_s"] += time.perf_counter() - t
        run.counts["uniqueness_checked"] = int(ok2 is not None)
        if ok2 is None:
            return SolveResult(
                "unknown", grid=grid, reason="timeout (fallback: uniqueness, solution-guided)"
            )
        if ok2:
            return SolveResult(
                "multiple",
                grid=grid,
                second_grid=_verified(run.puzzle, run.enc.decode(s.get_model())),
            )
    return SolveResult("unique", grid=grid)


def _bp_stage(run: _Remaining, *, encoding: str = "order", jobs: int = 1) -> SolveResult | None:
    """BP decimation (:func:`nonolab.sat.bpsolve.decimate`) for up to :data:`BP_LIMIT_S` seconds in
    the restart slices of :func:`nonolab.sat.bpsolve.schedule`, each on a fresh CaDiCaL 1.9.5: one
    after the other here (``jobs=1``), or ``jobs`` at a time in worker processes
    (:func:`_bp_portfolio`); then the uniqueness check (a 2x2 switch first, else the model
    blocked and its cells as phases, on the instance that found the model, or with ``jobs > 1``
    on a fresh one). Returns None when BP decimation ran out of its own time limit (the caller
    goes on with Kissat); times add to ``solve_s`` and ``uniqueness_s``; counts ``bp_*`` (summed
    over slices, ``bp_max_known`` the maximum, ``bp_guesses`` of the last slice to end;
    ``bp_restarts``: slices that ended without answer; ``bp_jobs``: ``jobs``; ``bp_slice``: the
    index in the schedule of the slice that found the model)."""
    from nonolab.sat import bpsolve
    from nonolab.sat.bpsolve import DecimationStats, decimate, schedule

    run.info["solver"] = f"{run.info.get('solver', '')}+bp"
    ds = DecimationStats()  # one for all slices: counters add up, max_known is the maximum
    run.counts["bp_restarts"] = 0
    run.counts["bp_jobs"] = jobs
    stage_end = time.perf_counter() + BP_LIMIT_S
    if run.clock.deadline is not None:
        stage_end = min(stage_end, run.clock.deadline)

    def answer(ok: bool, model: list[int] | None, solver_for_second: Callable) -> SolveResult:
        if not ok:
            return SolveResult("unsat", reason="SAT solver (BP fallback): no solution")
        assert model is not None
        return _after_first(run, model, solver_for_second)

    if jobs > 1:
        t = time.perf_counter()
        ok, model = _bp_portfolio(
            run.puzzle, run.state, encoding, run.solver_options, jobs, stage_end, ds, run.counts
        )
        run.times["solve_s"] += time.perf_counter() - t
        _bp_counts(ds, run.counts)
        if ok is not None:
            return answer(
                ok,
                model,
                lambda: _new_solver(AUTO_LARGE_SOLVER, run.enc.clauses, run.solver_options),
            )
        if run.clock.expired():
            return SolveResult("unknown", reason="timeout (fallback: BP decimation)")
        return None
    for index, (frac, max_checks, seed) in enumerate(schedule()):
        if time.perf_counter() >= stage_end:
            break
        t = time.perf_counter()
        with _new_solver(AUTO_LARGE_SOLVER, run.enc.clauses, run.solver_options) as s:
            ok, model = decimate(
                run.puzzle,
                run.state,
                s,
                frac=frac,
                check_conflicts=bpsolve.CHECK_CONFLICTS,
                deadline=stage_end,
                max_checks=ds.checks + max_checks,
                stats=ds,
                seed=seed,
            )
            run.times["solve_s"] += time.perf_counter() - t
            _bp_counts(ds, run.counts)
            if ok is not None:
                if ok:
                    run.counts["bp_slice"] = index
                return answer(ok, model, lambda s=s: contextlib.nullcontext(s))
        if run.clock.expired():
            return SolveResult("unknown", reason="timeout (fallback: BP decimation)")
        run.counts["bp_restarts"] += 1
    return None


def _bp_counts(ds: DecimationStats, counts: dict[str, int]) -> None:
    for k in ("rounds", "checks", "flips", "backtracks", "guesses", "max_known"):
        counts[f"bp_{k}"] = getattr(ds, k)


#: seconds :func:`_bp_portfolio` waits past its deadline for the slices still running to
#: report (each stops at its next check, ~1 s at 112x112); then they are killed
BP_PORTFOLIO_GRACE_S = 10.0


def _bp_portfolio(
    puzzle: Puzzle,
    state: GridState,
    encoding: str,
    solver_options: dict[str, int] | None,
    jobs: int,
    stage_end: float,
    ds: DecimationStats,
    counts: dict[str, int],
) -> tuple[bool | None, list[int] | None]:
    """Run the restart slices of :func:`nonolab.sat.bpsolve.schedule`, in schedule order, ``jobs``
    at a time in worker processes (:func:`_bp_slice_worker`, with checks of
    :data:`nonolab.sat.bpsolve.CHECK_CONFLICTS` conflicts; each re-encodes ``state`` with
    ``encoding``, so its model uses the caller's variable numbering); a new slice starts
    whenever one ends without answer, until ``stage_end`` (a ``time.perf_counter()`` value).

    Returns ``(True, model)`` from the first slice that finds a model (the others are killed:
    :class:`nonolab.core.workers.Workers`), ``(False, None)`` when a slice refuted the CNF under no
    guesses, ``(None, None)`` at the deadline. Each reported slice's counters are added to
    ``ds`` (a :class:`nonolab.sat.bpsolve.DecimationStats`) and ``counts['bp_restarts']`` counts the slices
    that ended without answer. Spawned workers, as in :func:`solve_cubes`: a script calling
    this needs the usual ``if __name__ == "__main__"`` guard.
    """
    from nonolab.core.workers import Workers
    from nonolab.sat import bpsolve

    slices = enumerate(bpsolve.schedule())
    conflicts = bpsolve.CHECK_CONFLICTS
    # time.time() is comparable across processes, time.perf_counter() is not
    deadline_epoch = time.time() + (stage_end - time.perf_counter())
    cells = state.to_cells()
    with Workers(jobs, _bp_slice_worker) as workers:

        def start_next() -> None:
            index, (frac, checks, seed) = next(slices)
            work = (puzzle, cells, encoding, solver_options, frac, checks, seed, conflicts)
            workers.submit(index, work + (deadline_epoch,))

        for _ in range(jobs):
            start_next()
        while workers.busy:
            wait = stage_end + BP_PORTFOLIO_GRACE_S - time.perf_counter()
            done = workers.next_result(timeout=max(wait, 0.0))
            if done is None:
                break
            index, rep = done
            ds.add(rep["stats"])
            if rep["ok"] is not None:
                if rep["ok"]:
                    counts["bp_slice"] = index
                return rep["ok"], rep["model"]
            counts["bp_restarts"] += 1
            if time.perf_counter() < stage_end:
                start_next()
    return None, None


def _bp_slice_worker(args: tuple) -> dict[str, Any]:
    """One restart slice of :func:`_bp_portfolio` in a worker process; returns ``{"ok",
    "model", "stats"}`` as :func:`nonolab.sat.bpsolve.decimate` gives them (the caller knows the
    slice's index in the schedule: it is the task's tag)."""
    from nonolab.sat.bpsolve import DecimationStats, decimate

    puzzle, cells, encoding, options, frac, checks, seed, conflicts, deadline_epoch = args
    deadline = time.perf_counter() + (deadline_epoch - time.time())
    stats = DecimationStats()
    ok, model = None, None
    if time.perf_counter() < deadline:
        state = GridState.from_cells(cells)
        enc = remaining_encoding(puzzle, state, encoding)
        with _new_solver(AUTO_LARGE_SOLVER, enc.clauses, options) as s:
            ok, model = decimate(
                puzzle,
                state,
                s,
                frac=frac,
                check_conflicts=conflicts,
                deadline=deadline,
                max_checks=checks,
                stats=stats,
                seed=seed,
            )
    return {"ok": ok, "model": model, "stats": stats}


def resolve_solver(name: str, n_unknown: int) -> str:
    """Return the python-sat solver to use: ``name``, or for ``"auto"``
    :data:`AUTO_SMALL_SOLVER` when ``n_unknown`` (cells unknown before SAT) is at most
    :data:`AUTO_SMALL_MAX_UNKNOWN`, else :data:`AUTO_LARGE_SOLVER`."""
    if name != "auto":
        return name
    return AUTO_SMALL_SOLVER if n_unknown <= AUTO_SMALL_MAX_UNKNOWN else AUTO_LARGE_SOLVER


def _new_solver(
    name: str, clauses: list[Sequence[int]], options: dict[str, int] | None = None
) -> Solver:
    """Return a python-sat solver loaded with ``clauses``.

    For CaDiCaL 1.9.5 the ``options`` (default :data:`CADICAL_OPTIONS`) are set first, then the
    clauses go straight to the extension's ``add_cl`` (python-sat's per-clause Python wrapper
    otherwise costs as much as the solving on 25x25 puzzles; see docs/decisions.md); other
    solvers ignore ``options``; MiniSat 2.2 is loaded through ``minisat22_add_cl`` the same way,
    the others with ``bootstrap_with``.
    """
    if name in ("cadical195", "cd195", "cd19", "cdl195", "cdl19"):
        s = Solver(name=name)
        opts = CADICAL_OPTIONS if options is None else options
        if opts:
            s.solver.configure(opts)
        return _load_direct(s, "cadical", "cadical195_add_cl", clauses)
    if name in ("minisat22", "msat22", "m22"):
        return _load_direct(Solver(name=name), "minisat", "minisat22_add_cl", clauses)
    return Solver(name=name, bootstrap_with=clauses)


def _load_direct(s: Solver, handle_attr: str, add_fn: str, clauses: list[Sequence[int]]) -> Solver:
    """Return ``s`` with ``clauses`` added through the extension function ``add_fn`` on the
    solver handle ``s.solver.<handle_attr>`` (no per-clause Python wrapper); falls back to
    ``append_formula`` if python-sat's internals changed."""
    try:
        import pysolvers

        handle = getattr(s.solver, handle_attr)
        add = getattr(pysolvers, add_fn)
    except (ImportError, AttributeError):  # python-sat internals changed: portable path
        s.append_formula(clauses)
        return s
    if not all(list(map(add, itertools.repeat(handle, len(clauses)), clauses))):
        s.solver.status = False  # an added clause made the formula trivially false
    return s


def _block_model(s: Solver, model: Sequence[int], state: GridState, width: int) -> None:
    """Add to ``s`` the clause excluding ``model``'s values of the cells unknown in ``state``
    (known cells are unit clauses already)."""
    unknown_vars = {r * width + c + 1 for r, c in state.unknown_cells()}
    s.add_clause([-lit for lit in model if abs(lit) in unknown_vars])


def _stats(s: Solver, counts: dict[str, int]) -> None:
    st = s.accum_stats() or {}
    for k in ("conflicts", "decisions", "propagations", "restarts"):
        if k in st:
            counts[k] = int(st[k])


# ---------------------------------------------------------------------------------------------
# cube-and-conquer across processes (for the hardest large puzzles)
# ---------------------------------------------------------------------------------------------


#: :func:`lookahead_cubes` re-scores at most this many of the root's best cells at each node
CUBE_CANDIDATES = 48


def lookahead_cubes(
    puzzle: Puzzle,
    state: GridState,
    depth: int,
    *,
    candidates: int = CUBE_CANDIDATES,
    deadline: float | None = None,
) -> list[tuple[list[int], GridState]]:
    """Split ``state`` (a propagation fixpoint) into disjoint cubes by lookahead; return
    ``[(literals, cube_state)]``.

    At the root every unknown cell is tried both ways with propagation
    (:func:`nonolab.sat.linesolver.probe_branches`) and ranked by ``(gain_filled + 1) *
    (gain_empty + 1)`` (cells each value sets, as in march-style lookahead). At each node of
    depth < ``depth`` the best ``candidates`` root-ranked cells still unknown there are tried
    again; a value that contradicts forces the other one (the node's state absorbs it); a node
    where both values of a cell contradict has no solution and yields no cube; otherwise the
    node branches on the best-scoring cell. ``literals`` are the branching decisions (cell
    (r, c) is variable ``r * width + c + 1``, negative = empty); ``cube_state`` is their
    propagation, which also holds every forced cell. Every solution of ``state`` lies in exactly
    one cube. If ``deadline`` (a ``time.perf_counter()`` value) passes during the root ranking,
    the cells rank in row-major order.
    """
    w = puzzle.width
    known0 = state.n_known()
    scores: dict[tuple[int, int], int] = {}
    try:
        for r, c, s1, s0 in probe_branches(puzzle, state, deadline):
            g1 = -1 if s1 is None else s1.n_known() - known0
            g0 = -1 if s0 is None else s0.n_known() - known0
            scores[(r, c)] = (g1 + 1) * (g0 + 1)
    except TimeoutError:
        pass
    ranked = sorted(state.unknown_cells(), key=lambda rc: (-scores.get(rc, 0), rc))
    out: list[tuple[list[int], GridState]] = []

    def node(s: GridState, lits: list[int], d: int) -> None:
        if d == 0 or s.is_complete():
            out.append((lits, s))
            return
        s = s.copy()  # this node's state: forced values found below are absorbed into it
        known = s.n_known()
        best = None
        for r, c, s1, s0 in itertools.islice(probe_branches(puzzle, s, cells=ranked), candidates):
            if s1 is None and s0 is None:
                return  # refuted: no solution in this node
            if s1 is None or s0 is None:
                _replace(s, s0 if s1 is None else s1)  # the forced value and its propagation
                known = s.n_known()
                best = None  # earlier scores were taken in a weaker state
                if s.is_complete():
                    out.append((lits, s))
                    return
                continue
            score = (s1.n_known() - known + 1) * (s0.n_known() - known + 1)
            if best is None or score > best[0]:
                best = (score, r, c, s1, s0)
        if best is None:  # nothing left to branch on among the candidates
            out.append((lits, s))
            return
        _, r, c, s1, s0 = best
        var = r * w + c + 1
        node(s1, [*lits, var], d - 1)
        node(s0, [*lits, -var], d - 1)

    node(state, [], depth)
    return out


def _cube_worker(args: tuple) -> dict[str, Any]:
    puzzle, cells, cube, encoding, solver, deadline_epoch, options = args
    t0 = time.perf_counter()
    remaining_s = None if deadline_epoch is None else max(deadline_epoch - time.time(), 0.0)
    if remaining_s is not None and remaining_s <= 0:
        return {"status": "unknown", "grids": [], "time_s": 0.0}
    state = GridState.from_cells(cells)
    enc = remaining_encoding(puzzle, state, encoding)
    solver = resolve_solver(solver, len(state.unknown_cells()))
    clock = _Clock(remaining_s)
    grids: list[Grid] = []
    with _new_solver(solver, enc.clauses, options) as s:
        for lit in cube:
            s.add_clause([lit])
        while len(grids) < 2:
            ok = solve_limited(s, solver, deadline=clock.deadline)
            if ok is None:
                return {"status": "unknown", "grids": grids, "time_s": time.perf_counter() - t0}
            if not ok:
                break
            model = s.get_model()
            grids.append(enc.decode(model))
            _block_model(s, model, state, puzzle.width)
    return {"status": "done", "grids": grids, "time_s": time.perf_counter() - t0}


def solve_cubes(
    puzzle: Puzzle,
    *,
    jobs: int = 2,
    cube_vars: int = 3,
    encoding: str = "order",
    solver: str = "cadical195",
    probing: bool = False,
    timeout_s: float | None = None,
    solver_options: dict[str, int] | None = None,
) -> SolveResult:
    """Solve ``puzzle`` by cube-and-conquer over ``jobs`` processes; return a
    :class:`SolveResult` (times in seconds).

    Propagation (and probing as in :func:`solve`) first; then :func:`lookahead_cubes` splits
    the rest to depth ``cube_vars`` (at most ``2**cube_vars`` disjoint sub-problems, fewer when
    lookahead refutes a branch, that together cover every solution; ``times['cube_s']`` is its
    time). Each cube (its propagated state, restricted CNF and its literals) is solved for up to
    two solutions in a worker process. Two solutions in total => ``multiple`` (the remaining
    cubes are abandoned); exactly one after every cube is exhausted => ``unique``; none =>
    ``unsat``; a cube out of time before two solutions are known => ``unknown``.
    ``times['solve_s']`` is the wall time of the cube phase, ``time_to_first_s`` when the first
    solution arrived.
    """
    clock = _Clock(timeout_s)
    times = {k: 0.0 for k in ("propagate_s", "probe_s", "encode_s", "solve_s", "uniqueness_s")}
    counts: dict[str, int] = {"n_cells": puzzle.height * puzzle.width, "cubes": 0}
    out = _solve_cubes(
        puzzle, jobs, cube_vars, encoding, solver, probing, solver_options, clock, times, counts
    )
    times["total_s"] = time.perf_counter() - clock.t0
    out.times, out.counts = times, counts
    return out


def _solve_cubes(
    puzzle: Puzzle,
    jobs: int,
    cube_vars: int,
    encoding: str,
    solver: str,
    probing: bool,
    solver_options: dict[str, int] | None,
    clock: _Clock,
    times: dict[str, float],
    counts: dict[str, int],
) -> SolveResult:
    from nonolab.core.workers import Workers

    pre = _presolve(puzzle, probing, clock, None, times, counts)
    if isinstance(pre, SolveResult):
        return pre
    t = time.perf_counter()
    cubes = lookahead_cubes(puzzle, pre, cube_vars, deadline=clock.deadline)
    times["cube_s"] = time.perf_counter() - t
    counts["cubes"] = len(cubes)
    if not cubes:
        return SolveResult("unsat", reason="lookahead refuted every cube")
    # one wall-clock deadline shared by every cube (time.time() is comparable across processes)
    deadline = None
    if clock.deadline is not None:
        deadline = time.time() + (clock.deadline - time.perf_counter())
    work = [
        (puzzle, cube_state.to_cells(), lits, encoding, solver, deadline, solver_options)
        for lits, cube_state in cubes
    ]
    t = time.perf_counter()
    grids: list[Grid] = []
    undecided = refuted = 0
    # spawned workers (no fork: a forked child can inherit locks held by the parent's threads,
    # BLAS, Arrow), killed when two solutions are in; start-up (~1 s) is small next to a hard
    # puzzle's cube search
    with Workers(jobs, _cube_worker) as workers:
        for _, res in workers.imap_unordered(work):
            for g in res["grids"]:
                if g not in grids:
                    grids.append(_verified(puzzle, g))
                    if len(grids) == 1:
                        times["time_to_first_s"] = time.perf_counter() - clock.t0
            if res["status"] == "unknown":
                undecided += 1
            elif not res["grids"]:
                refuted += 1
            if len(grids) >= 2:
                break
    times["solve_s"] = time.perf_counter() - t
    counts["cubes_undecided"] = undecided
    counts["cubes_refuted"] = refuted  # proved to hold no solution
    if len(grids) >= 2:
        return SolveResult("multiple", grid=grids[0], second_grid=grids[1])
    if undecided:
        return SolveResult("unknown", grid=grids[0] if grids else None, reason="timeout (cubes)")
    if grids:
        return SolveResult("unique", grid=grids[0])
    return SolveResult("unsat", reason="every cube unsatisfiable")
