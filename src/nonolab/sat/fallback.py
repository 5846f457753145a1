"""The hybrid solver's fallback for large remaining problems that the first CaDiCaL attempt
leaves undecided (Knotty, Faase, density-0.5 112x112 boards).

:func:`run_fallback` runs, with ``hard="bp"``, belief-propagation decimation checked by CaDiCaL
(:mod:`nonolab.sat.bpsolve`) for up to :data:`BP_LIMIT_S` seconds in restart slices, one after
the other or ``bp_jobs`` at a time in worker processes (:func:`_bp_portfolio`); then (or with
``hard="kissat"`` at once) probing clauses + Kissat (:mod:`nonolab.sat.hardsolve`). A first
solution is followed by the uniqueness check: a 2x2 switch of the grid, else solution-guided
CaDiCaL with the model blocked.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nonolab.sat import remaining  # constants read at call time, so that setting one takes effect
from nonolab.sat.encodings import Encoding
from nonolab.sat.linesolver import GridState
from nonolab.sat.puzzles import Puzzle
from nonolab.sat.remaining import block_model, new_solver, remaining_encoding
from nonolab.sat.result import Clock, SolveResult, verified
from nonolab.sat.solvers import solve_limited

if TYPE_CHECKING:  # imported lazily, where the fallback runs
    from nonolab.sat.bpsolve import DecimationStats

#: seconds BP decimation gets before the fallback hands over to Kissat (a complete search; BP
#: decimation proves unsat only when CaDiCaL refutes the CNF under no guesses)
BP_LIMIT_S = 1800.0


@dataclass
class FallbackRun:
    """What the fallback's stages share: the puzzle, its propagated ``state``, the CNF ``enc``
    of what remains unknown, the call's clock and options, and the ``times`` (seconds),
    ``counts`` and ``info`` of its :class:`SolveResult`, filled in as the stages run."""

    puzzle: Puzzle
    state: GridState
    enc: Encoding
    clock: Clock
    prove_unique: bool
    solver_options: dict[str, int] | None
    times: dict[str, float]
    counts: dict[str, int]
    info: dict[str, str]


def run_fallback(
    run: FallbackRun, hard: str = "bp", *, encoding: str = "order", bp_jobs: int = 1
) -> SolveResult:
    """Run the fallback on ``run`` and return the call's :class:`SolveResult`: with
    ``hard="bp"`` first :func:`_bp_stage`, then (unless it decided) the
    :mod:`nonolab.sat.hardsolve` stage (see there); times add to ``probe_s``, ``solve_s`` and
    ``uniqueness_s`` (seconds)."""
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
        run, model, lambda: new_solver(remaining.AUTO_LARGE_SOLVER, clauses, run.solver_options)
    )


def _after_first(
    run: FallbackRun, model: list[int], solver_for_second: Callable[[], Any]
) -> SolveResult:
    """The fallback's end once ``model`` (a first solution) is found: verify its grid, then look
    for a second solution as a 2x2 switch of it, else on the CaDiCaL instance (a context manager)
    ``solver_for_second()`` gives, with the model blocked and its cells as initial phases. Times
    add to ``uniqueness_s``."""
    from nonolab.sat.hardsolve import switch_neighbour

    run.times["time_to_first_s"] = time.perf_counter() - run.clock.t0
    grid = verified(run.puzzle, run.enc.decode(model))
    if not run.prove_unique:
        run.counts["uniqueness_checked"] = 0
        return SolveResult("unknown", grid=grid, reason="uniqueness not checked")
    t = time.perf_counter()
    second = switch_neighbour(run.puzzle, grid)
    if second is not None:
        run.times["uniqueness_s"] += time.perf_counter() - t
        run.counts["uniqueness_checked"] = 1
        run.counts["second_by_switch"] = 1
        return SolveResult("multiple", grid=grid, second_grid=verified(run.puzzle, second))
    n = run.puzzle.height * run.puzzle.width
    with solver_for_second() as s:
        block_model(s, model, run.state, run.puzzle.width)
        s.set_phases([lit for lit in model if abs(lit) <= n])
        ok2 = solve_limited(s, remaining.AUTO_LARGE_SOLVER, deadline=run.clock.deadline)
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
                second_grid=verified(run.puzzle, run.enc.decode(s.get_model())),
            )
    return SolveResult("unique", grid=grid)


def _bp_stage(run: FallbackRun, *, encoding: str = "order", jobs: int = 1) -> SolveResult | None:
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
                lambda: new_solver(
                    remaining.AUTO_LARGE_SOLVER, run.enc.clauses, run.solver_options
                ),
            )
        if run.clock.expired():
            return SolveResult("unknown", reason="timeout (fallback: BP decimation)")
        return None
    for index, (frac, max_checks, seed) in enumerate(schedule()):
        if time.perf_counter() >= stage_end:
            break
        t = time.perf_counter()
        with new_solver(remaining.AUTO_LARGE_SOLVER, run.enc.clauses, run.solver_options) as s:
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
    """Copy the counters of ``ds`` into ``counts`` as ``bp_<name>``."""
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
    guesses, ``(None, None)`` at the deadline. Each reported slice's counters are added to ``ds`` (a
    :class:`nonolab.sat.bpsolve.DecimationStats`) and ``counts['bp_restarts']`` counts the slices
    that ended without answer. Spawned workers, as in :func:`nonolab.sat.cubes.solve_cubes`: a
    script calling this needs the usual ``if __name__ == "__main__"`` guard.
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
        with new_solver(remaining.AUTO_LARGE_SOLVER, enc.clauses, options) as s:
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
