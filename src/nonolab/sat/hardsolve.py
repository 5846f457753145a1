"""Fallback for large puzzles that plain CDCL leaves undecided (Knotty, Faase).

Used by :mod:`nonolab.sat.fallback` (for :func:`nonolab.sat.fastsolve.solve`) when the first SAT
attempt on a large remaining problem runs out of its conflict budget
(:data:`nonolab.sat.fastsolve.FALLBACK_AFTER_CONFLICTS`):

1. **probing implications**: every unknown cell is tried filled and empty with line
   propagation; a refuted value gives a unit clause, and every cell the other propagation sets
   gives a binary clause ``value -> implied cell`` (:func:`probe_implications`). These carry
   the line solver's deductions, which unit propagation on the order encoding misses, into the
   CNF;
2. **first solution with Kissat 4.0.4** on the CNF plus those clauses, in a child process killed
   at the deadline (python-sat cannot interrupt Kissat; :func:`kissat_solve`);
3. **second solution**: first a 2x2 switch of the first grid that keeps every clue
   (:func:`switch_neighbour`, cheap and common on puzzles with several solutions); else
   CaDiCaL 1.9.5 on the same CNF with the first grid blocked and its cells as initial phases, so
   the search starts next to the first solution.

Every grid is checked against the clues by the caller. Measured on 2026-11-29 (docs/decisions.md):
Kissat without the probing clauses found no Knotty solution in 220 s; with them, 79 s.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from collections.abc import Sequence

from nonolab.sat.linesolver import GridState, probe_branches
from nonolab.sat.puzzles import Grid, Puzzle, line_clue

#: python-sat name of the solver used for the first solution
KISSAT = "kissat404"


def probe_implications(
    puzzle: Puzzle, state: GridState, deadline: float | None = None
) -> list[tuple[int, ...]] | None:
    """Return the probing clauses of ``state`` (a propagation fixpoint), or None when the
    deadline (a ``time.perf_counter()`` value) passed first.

    For each unknown cell (row-major) and value: if propagating the value contradicts, the unit
    clause of the other value; else, for every other cell the propagation sets, the binary clause
    ``not value or implied``. Cell (r, c) is variable ``r * width + c + 1``. The state is not
    changed.
    """
    w = puzzle.width
    out: list[tuple[int, ...]] = []
    try:
        for r, c, s1, s0 in probe_branches(puzzle, state, deadline):
            var = r * w + c + 1
            for lit, branch in ((var, s1), (-var, s0)):
                if branch is None:
                    out.append((-lit,))
                    continue
                for rr in range(state.height):
                    new_f = branch.row_fill[rr] & ~state.row_fill[rr]
                    new_e = branch.row_empty[rr] & ~state.row_empty[rr]
                    for d, sign in ((new_f, 1), (new_e, -1)):
                        while d:
                            low = d & -d
                            cc = low.bit_length() - 1
                            d ^= low
                            if rr != r or cc != c:
                                out.append((-lit, sign * (rr * w + cc + 1)))
    except TimeoutError:
        return None
    return out


def kissat_solve(
    clauses: list[Sequence[int]], deadline: float | None
) -> tuple[bool | None, list[int] | None]:
    """Solve ``clauses`` with Kissat in a child process; return ``(True, model)``,
    ``(False, None)`` (unsatisfiable) or ``(None, None)`` when the deadline (a
    ``time.perf_counter()`` value) passed and the child was killed.

    The child is ``python -m nonolab.sat.hardsolve PARENT_PID`` reading the clauses (pickled) on
    stdin and writing ``(ok, model)`` (pickled) on stdout, so callers need no ``__main__``
    guard; it dies with its caller (:func:`nonolab.core.workers.die_with_parent`)."""
    payload = pickle.dumps([tuple(c) for c in clauses], protocol=pickle.HIGHEST_PROTOCOL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nonolab.sat.hardsolve", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    timeout = None if deadline is None else max(deadline - time.perf_counter(), 0.01)
    try:
        out, err = proc.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, None
    finally:
        if proc.poll() is None:  # interrupted otherwise (KeyboardInterrupt, ...): no orphan
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"Kissat child failed ({proc.returncode}): {err.decode()[-500:]}")
    ok, model = pickle.loads(out)
    return ok, model


def _child_main() -> None:  # pragma: no cover - runs in the child process
    from pysat.solvers import Solver

    from nonolab.core.workers import die_with_parent

    # Kissat cannot be interrupted: it must not outlive its caller
    die_with_parent(int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid())
    clauses = pickle.loads(sys.stdin.buffer.read())
    with Solver(name=KISSAT, bootstrap_with=clauses) as s:
        ok = s.solve()
        model = s.get_model() if ok else None
    sys.stdout.buffer.write(pickle.dumps((ok, model), protocol=pickle.HIGHEST_PROTOCOL))


def _line_moves(line: Sequence[int]) -> set[tuple[int, int]]:
    """Return the single-cell moves ``(from, to)`` (a filled cell emptied, an empty cell
    filled) that keep the line's runs: a block shifted by one cell, or a one-cell block moved
    inside its gap."""
    n = len(line)
    blocks = []
    i = 0
    while i < n:
        if line[i]:
            j = i
            while j + 1 < n and line[j + 1]:
                j += 1
            blocks.append((i, j))
            i = j + 1
        else:
            i += 1
    moves: set[tuple[int, int]] = set()
    for k, (a, e) in enumerate(blocks):
        lo = blocks[k - 1][1] + 2 if k else 0  # first cell this block may occupy
        hi = blocks[k + 1][0] - 2 if k + 1 < len(blocks) else n - 1
        if e + 1 <= hi:
            moves.add((a, e + 1))
        if a - 1 >= lo:
            moves.add((e, a - 1))
        if a == e:
            moves.update((a, t) for t in range(lo, hi + 1) if abs(t - a) > 1)
    return moves


def switch_neighbour(puzzle: Puzzle, grid: Grid) -> Grid | None:
    """Return a different grid with the same clues obtained from ``grid`` by one 2x2 switch
    (cells (r1, c1), (r2, c2) filled and (r1, c2), (r2, c1) empty, or the reverse, all four
    flipped), or None if there is none. ``grid`` must satisfy the clues; the two rows and two
    columns the switch changes are checked again, so the result satisfies every clue."""
    h, w = puzzle.height, puzzle.width
    row_mv = [_line_moves(grid[r]) for r in range(h)]
    col_mv = [_line_moves([grid[r][c] for r in range(h)]) for c in range(w)]
    for r1 in range(h):
        for c1, c2 in sorted(row_mv[r1]):
            for r2 in sorted(t for f, t in col_mv[c1] if f == r1):
                if (c2, c1) in row_mv[r2] and (r2, r1) in col_mv[c2]:
                    g = [list(row) for row in grid]
                    g[r1][c1], g[r1][c2], g[r2][c2], g[r2][c1] = 0, 1, 0, 1
                    out = tuple(tuple(row) for row in g)
                    if all(line_clue(out[r]) == puzzle.rows[r] for r in (r1, r2)) and all(
                        line_clue([out[r][c] for r in range(h)]) == puzzle.cols[c] for c in (c1, c2)
                    ):
                        return out
    return None


if __name__ == "__main__":  # pragma: no cover
    _child_main()
