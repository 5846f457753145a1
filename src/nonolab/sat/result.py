"""What a solve call returns and the clock it runs under.

:class:`SolveResult` is the record of :func:`nonolab.sat.fastsolve.solve` and
:func:`nonolab.sat.cubes.solve_cubes` (and of the fallback stages in between), :data:`STATUSES`
its statuses; :class:`Clock` holds a call's start and deadline; :func:`verified` checks a grid
against the clues before any of them returns it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from nonolab.sat.puzzles import Grid, Puzzle, check_solution

#: the statuses of :attr:`SolveResult.status`
STATUSES = ("unique", "multiple", "unsat", "unknown")


@dataclass
class SolveResult:
    """Outcome of :func:`nonolab.sat.fastsolve.solve` or :func:`nonolab.sat.cubes.solve_cubes`.

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


class Clock:
    """The clock of one solve call: ``t0`` is its start and ``deadline`` its end (both
    ``time.perf_counter()`` values, seconds), or None without a timeout."""

    def __init__(self, timeout_s: float | None):
        self.t0 = time.perf_counter()
        self.deadline = None if timeout_s is None else self.t0 + timeout_s

    def expired(self) -> bool:
        """Return True once the deadline has passed (never without a timeout)."""
        return self.deadline is not None and time.perf_counter() > self.deadline


def verified(puzzle: Puzzle, grid: Grid) -> Grid:
    """Return ``grid`` once it is checked against ``puzzle``'s clues (raises
    :class:`nonolab.sat.puzzles.PuzzleError` naming the first wrong line)."""
    check_solution(puzzle, grid)  # raises PuzzleError naming the first wrong line
    return grid
