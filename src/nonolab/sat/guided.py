"""BP-guided first solution: belief propagation ranks the unknown cells, and the SAT solver
first looks for a solution under the likelier values of the most polarised ones.

:func:`guided_search` runs the stages of :data:`GUIDE_STAGES` on the caller's solver instance
(:func:`nonolab.sat.fastsolve.solve` with ``guide="bp"``, except on a large problem whose first
attempt can hand over to the fallback); a stage whose assumptions admit no solution, or that
runs out of its conflicts, only ends that stage.
"""

from __future__ import annotations

import time

from pysat.solvers import Solver

from nonolab.sat.linesolver import UNKNOWN, GridState
from nonolab.sat.puzzles import Puzzle
from nonolab.sat.result import Clock
from nonolab.sat.solvers import Watchdog, solve_limited

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


def guided_search(
    s: Solver,
    puzzle: Puzzle,
    state: GridState,
    clock: Clock,
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
    compiled kernel when numba is installed) ranks the unknown cells by ``|belief - 0.5|``; stage
    ``(share, budget)`` of :data:`GUIDE_STAGES` assumes the likelier value of the most polarised
    ``share`` of the unknown cells, with ``budget`` conflicts (at most ``conflict_budget``).
    ``guide_s`` gets the BP time (seconds), ``solve_s`` the stages'; ``counts['guide_stage']`` is
    the 1-based stage that found the model (0: none did).
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
