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
   :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN` cells are unknown, else CaDiCaL 1.9.5) - on
   such small problems first under assumptions from belief propagation (``guide="bp"``,
   :func:`nonolab.sat.guided.guided_search`) - then prove uniqueness on the same solver instance by
   blocking the model over the unknown cell variables and solving again;
5. on a large remaining problem (more than :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN`
   unknown cells) whose first CaDiCaL attempt finds no solution in :data:`FALLBACK_AFTER_CONFLICTS`
   conflicts, the fallback: by default (``hard="bp"``) belief-propagation decimation checked by
   CaDiCaL (:mod:`nonolab.sat.bpsolve`) for up to :data:`nonolab.sat.fallback.BP_LIMIT_S` seconds,
   then (or with ``hard="kissat"`` at once) :mod:`nonolab.sat.hardsolve` (probing clauses + Kissat);
   a second solution by a 2x2 switch or solution-guided CaDiCaL.

A propagation/probing fixpoint that is complete is the unique solution (both steps only set
cells forced in every solution). Every grid returned is checked against the clues first.
A timeout or conflict budget that runs out gives status ``unknown``.

This module holds the pipeline, its presolve step (:func:`presolve`, shared with
:func:`nonolab.sat.cubes.solve_cubes`) and its options; the CNF of step 3 and the solvers are in
:mod:`nonolab.sat.remaining`, the guidance of step 4 in :mod:`nonolab.sat.guided`, the fallback of
step 5 in :mod:`nonolab.sat.fallback`, and the result record in :mod:`nonolab.sat.result`.
"""

from __future__ import annotations

import time

from nonolab.sat import remaining  # constants read at call time, so that setting one takes effect
from nonolab.sat.fallback import FallbackRun, run_fallback
from nonolab.sat.guided import guided_search
from nonolab.sat.linesolver import (
    Contradiction,
    GridState,
    ProbeStats,
    PropagationStats,
    probe,
    propagate,
)
from nonolab.sat.puzzles import Puzzle
from nonolab.sat.remaining import (
    block_model,
    gc_paused,
    new_solver,
    record_stats,
    remaining_encoding,
    resolve_solver,
)
from nonolab.sat.result import Clock, SolveResult, verified
from nonolab.sat.solvers import Watchdog, solve_limited

#: with ``fallback=True``, the first SAT attempt on a problem of more than
#: :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN` unknown cells gets this many conflicts; if
#: it finds no solution, :mod:`nonolab.sat.hardsolve` takes over (probing clauses + Kissat, then a
#: second solution by a 2x2 switch or solution-guided CaDiCaL). Knotty and Faase need it; 50k
#: conflicts is ~3-7 s of CaDiCaL on 40x40-112x112 puzzles (docs/decisions.md).
FALLBACK_AFTER_CONFLICTS = 50_000

#: the fallback's methods for a first solution (``hard``): ``bp`` = BP decimation checked by CaDiCaL
#: (:mod:`nonolab.sat.bpsolve`) for up to :data:`nonolab.sat.fallback.BP_LIMIT_S` seconds, then
#: Kissat; ``kissat`` = probing clauses + Kissat only. BP decimation found first solutions of Knotty
#: in 1.8 s and Faase in 4.5 s (Kissat with probing clauses: 79 s and 99 s) and of the solve
#: benchmark's density-0.5 112x112 board in ~10 min (Kissat: none in 890 s); docs/decisions.md
HARD_METHODS = ("bp", "kissat")

#: first-solution guidance (``guide``) for problems of at most
#: :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN` unknown cells: ``bp`` = belief propagation
#: (:data:`nonolab.sat.guided.GUIDE_ITERS` sweeps; the numba kernel when numba, an optional
#: dependency, is installed, else numpy: equal messages up to rounding, which can reorder tied cells
#: and so change conflict counts, never statuses) ranks the unknown cells by how polarised their
#: beliefs are, and the SAT solver first looks for a solution under the likelier values of the most
#: polarised cells as assumptions, in the stages of :data:`nonolab.sat.guided.GUIDE_STAGES`, then
#: without assumptions on the same instance (learnt clauses kept); ``none`` = one plain call. On
#: TAAI 2011 ``bp`` cut MiniSat's conflicts (first solutions and uniqueness) from 2,359,575 to
#: 371,487 with numba (docs/decisions.md)
GUIDES = ("bp", "none")

#: the phase times (seconds) of :attr:`SolveResult.times` from :func:`solve`, in pipeline order
#: (the record also has ``time_to_first_s`` and ``total_s``)
PHASES = ("propagate_s", "probe_s", "encode_s", "guide_s", "solve_s", "uniqueness_s")


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
    ``"auto"`` (default; see :func:`nonolab.sat.remaining.resolve_solver`);
    ``probing``: run single-cell probing after propagation (bounded by ``probe_limit_s`` seconds
    when given, and by ``timeout_s``); off by default: with the current encoder, SAT on the
    remaining problem was as fast or faster on every benchmark puzzle measured (random 112x112
    at density 0.6: 0.5-0.6 s without probing, 1.3-9 s with; docs/decisions.md);
    ``timeout_s``: wall-clock limit for the whole call; ``conflict_budget``: conflict limit per SAT
    call; ``prove_unique``: look for a second solution (else a found solution is reported as
    ``unique`` only when logic alone found it, ``multiple`` never, and ``unknown``-uniqueness is
    marked in ``counts['uniqueness_checked']``); ``solver_options``: CaDiCaL options (default
    :data:`nonolab.sat.remaining.CADICAL_OPTIONS`; ``{}`` = CaDiCaL's own defaults); ``fallback``:
    on problems with more than :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN` unknown cells,
    give the first SAT attempt :data:`FALLBACK_AFTER_CONFLICTS` conflicts and then switch to the
    fallback (``counts['fallback'] = 1``); ``hard``: the fallback's first method, one of
    :data:`HARD_METHODS` (``bp``: BP decimation, then Kissat; ``kissat``: Kissat only); ``bp_jobs``:
    processes running BP decimation's restart slices at once (1, the default: one after the other in
    this process, a deterministic path; N > 1: the next N slices of the schedule in N worker
    processes, the first model wins, so which grid is found first can depend on timing; see
    :mod:`nonolab.sat.fallback`); ``guide``: first-solution guidance on problems of at most
    :data:`nonolab.sat.remaining.AUTO_SMALL_MAX_UNKNOWN` unknown cells, one of :data:`GUIDES`
    (``bp``, the default: BP-ranked assumptions first, see :func:`nonolab.sat.guided.guided_search`;
    ``none``: one plain SAT call). Guidance changes which solution is found first, never the status:
    assumptions that admit no solution only end their stage.
    """
    if hard not in HARD_METHODS:
        raise ValueError(f"hard={hard!r}: use one of {', '.join(HARD_METHODS)}")
    if guide not in GUIDES:
        raise ValueError(f"guide={guide!r}: use one of {', '.join(GUIDES)}")
    if bp_jobs < 1:
        raise ValueError(f"bp_jobs={bp_jobs!r}: needs at least 1")
    clock = Clock(timeout_s)
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


def presolve(
    puzzle: Puzzle,
    probing: bool,
    clock: Clock,
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
        return SolveResult("unique", grid=verified(puzzle, state.to_grid()))
    return state


def _solve(
    puzzle: Puzzle,
    solver_options: dict[str, int] | None,
    encoding: str,
    solver: str,
    probing: bool,
    clock: Clock,
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
    pre = presolve(puzzle, probing, clock, probe_limit_s, times, counts)
    if isinstance(pre, SolveResult):
        return pre
    state = pre
    if clock.expired():
        return SolveResult("unknown", reason="timeout before SAT")
    t = time.perf_counter()
    try:
        with gc_paused():
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
    staged = fallback and n_unknown > remaining.AUTO_SMALL_MAX_UNKNOWN
    first_budget = conflict_budget
    if staged:
        first_budget = min(conflict_budget or FALLBACK_AFTER_CONFLICTS, FALLBACK_AFTER_CONFLICTS)
    counts["fallback"] = 0
    counts["guide_stage"] = 0
    with (
        new_solver(solver, enc.clauses, solver_options) as s,
        Watchdog(s, clock.deadline, solver) as wd,
    ):
        ok = None
        if guide == "bp" and not staged:
            ok = guided_search(s, puzzle, state, clock, conflict_budget, solver, times, counts, wd)
        t = time.perf_counter()
        if not ok and not clock.expired():
            ok = solve_limited(
                s, solver, conflict_budget=first_budget, deadline=clock.deadline, watchdog=wd
            )
        times["solve_s"] += time.perf_counter() - t
        if ok is None:
            record_stats(s, counts)
            if staged and not clock.expired() and first_budget != conflict_budget:
                s.delete()
                run = FallbackRun(
                    puzzle, state, enc, clock, prove_unique, solver_options, times, counts, info
                )
                return run_fallback(run, hard, encoding=encoding, bp_jobs=bp_jobs)
            return SolveResult("unknown", reason="timeout or conflict budget (first solution)")
        if not ok:
            record_stats(s, counts)
            return SolveResult("unsat", reason="SAT solver: no solution")
        times["time_to_first_s"] = time.perf_counter() - clock.t0
        model = s.get_model()
        grid = verified(puzzle, enc.decode(model))
        if not prove_unique:
            record_stats(s, counts)
            counts["uniqueness_checked"] = 0
            return SolveResult("unknown", grid=grid, reason="uniqueness not checked")
        t = time.perf_counter()
        block_model(s, model, state, puzzle.width)
        ok2 = solve_limited(
            s, solver, conflict_budget=conflict_budget, deadline=clock.deadline, watchdog=wd
        )
        times["uniqueness_s"] = time.perf_counter() - t
        record_stats(s, counts)
        counts["uniqueness_checked"] = int(ok2 is not None)
        if ok2 is None:
            return SolveResult(
                "unknown", grid=grid, reason="timeout or conflict budget (uniqueness)"
            )
        if ok2:
            second = verified(puzzle, enc.decode(s.get_model()))
            return SolveResult("multiple", grid=grid, second_grid=second)
        return SolveResult("unique", grid=grid)
