"""Cube-and-conquer across processes, for the hardest large puzzles.

:func:`lookahead_cubes` splits a propagation fixpoint into disjoint cubes by march-style
lookahead; :func:`solve_cubes` solves each cube for up to two solutions in a worker process
(:class:`nonolab.core.workers.Workers`) and combines their answers into one status.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from nonolab.sat.fastsolve import presolve
from nonolab.sat.linesolver import GridState, _replace, probe_branches
from nonolab.sat.puzzles import Grid, Puzzle
from nonolab.sat.remaining import block_model, new_solver, remaining_encoding, resolve_solver
from nonolab.sat.result import Clock, SolveResult, verified
from nonolab.sat.solvers import solve_limited

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
    """Solve one cube in a worker process for up to two solutions; return ``{"status"``
    (``done``, or ``unknown`` when the shared deadline passed first), ``"grids"`` (the solutions
    found, unverified), ``"time_s"}`` (seconds in this worker)."""
    puzzle, cells, cube, encoding, solver, deadline_epoch, options = args
    t0 = time.perf_counter()
    remaining_s = None if deadline_epoch is None else max(deadline_epoch - time.time(), 0.0)
    if remaining_s is not None and remaining_s <= 0:
        return {"status": "unknown", "grids": [], "time_s": 0.0}
    state = GridState.from_cells(cells)
    enc = remaining_encoding(puzzle, state, encoding)
    solver = resolve_solver(solver, len(state.unknown_cells()))
    clock = Clock(remaining_s)
    grids: list[Grid] = []
    with new_solver(solver, enc.clauses, options) as s:
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
            block_model(s, model, state, puzzle.width)
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

    Propagation (and probing as in :func:`nonolab.sat.fastsolve.solve`) first; then
    :func:`lookahead_cubes` splits the rest to depth ``cube_vars`` (at most ``2**cube_vars``
    disjoint sub-problems, fewer when lookahead refutes a branch, that together cover every
    solution; ``times['cube_s']`` is its time). Each cube (its propagated state, restricted CNF and
    its literals) is solved for up to two solutions in a worker process. Two solutions in total =>
    ``multiple`` (the remaining cubes are abandoned); exactly one after every cube is exhausted =>
    ``unique``; none => ``unsat``; a cube out of time before two solutions are known => ``unknown``.
    ``times['solve_s']`` is the wall time of the cube phase, ``time_to_first_s`` when the first
    solution arrived.
    """
    clock = Clock(timeout_s)
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
    clock: Clock,
    times: dict[str, float],
    counts: dict[str, int],
) -> SolveResult:
    from nonolab.core.workers import Workers

    pre = presolve(puzzle, probing, clock, None, times, counts)
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
                    grids.append(verified(puzzle, g))
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
