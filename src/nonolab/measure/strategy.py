"""Human-strategy measures of one puzzle: footholds, propagation chains, probing along the path.

Built on the exact line solver (:mod:`nonolab.sat.linesolver`). Definitions (the registry,
:mod:`nonolab.measure.registry`, names and documents each measure):

* **footholds**: the cells that single-line reasoning fixes on the empty grid (each row and
  each column solved alone with no cell known), and the lines that fix at least one;
* **propagation chain**: parallel rounds of single-line reasoning from the empty grid: round
  ``k`` solves every line against the cells known after round ``k - 1`` and adds every cell any
  line fixes; the chain ends at the first round that fixes nothing (the line-solving fixpoint,
  the same cells as :func:`nonolab.sat.linesolver.propagation_fixpoint`). Round 1 fixes exactly
  the footholds;
* **solve path with probing**: from the fixpoint, while cells are unknown (a *stall*), try each
  unknown cell both ways with propagation (depth-1 probing); a cell is *productive* when one
  branch contradicts or both branches agree on a cell not yet known. The path applies the first
  productive cell (row-major) and propagates again. The path records the stalls, the share of
  cells known at the first stall, and the fewest productive cells at any stall (the hardest
  step: fewest ways forward). A stall with no productive cell ends the path unsolved
  (single-cell probing is not enough).
"""

from __future__ import annotations

from dataclasses import dataclass

from nonolab.sat.linesolver import (
    Contradiction,
    GridState,
    probe_branches,
    propagate,
    solve_line,
)
from nonolab.sat.puzzles import Puzzle


@dataclass(frozen=True)
class Footholds:
    """Cells fixed by single-line reasoning on the empty grid.

    ``cells``: the fixed cells ``(row, col)``, sorted; ``lines``: the lines that fix at least one
    cell, as ``("row", i)`` / ``("col", j)``, rows first; ``line_cells``: per such line, how
    many cells it fixes."""

    cells: tuple[tuple[int, int], ...]
    lines: tuple[tuple[str, int], ...]
    line_cells: tuple[int, ...]


def footholds(puzzle: Puzzle) -> Footholds:
    """Return the footholds of ``puzzle`` (see :class:`Footholds`). Raises
    :class:`nonolab.sat.linesolver.Contradiction` when a clue does not fit its line."""
    cells: set[tuple[int, int]] = set()
    lines, counts = [], []
    for kind, clues, n in (("row", puzzle.rows, puzzle.width), ("col", puzzle.cols, puzzle.height)):
        for i, clue in enumerate(clues):
            res = solve_line(clue, n, 0, 0)
            if res is None:
                raise Contradiction(f"{kind} {i}")
            known = res[0] | res[1]
            if not known:
                continue
            lines.append((kind, i))
            counts.append(known.bit_count())
            for j in range(n):
                if (known >> j) & 1:
                    cells.add((i, j) if kind == "row" else (j, i))
    return Footholds(tuple(sorted(cells)), tuple(lines), tuple(counts))


def propagation_rounds(puzzle: Puzzle) -> tuple[list[int], GridState]:
    """Return ``(cells fixed in each round, fixpoint state)`` of parallel single-line reasoning
    from the empty grid (module docstring). The list has one entry per round that fixed at
    least one cell (empty when no line fixes anything on the empty grid). Raises
    :class:`nonolab.sat.linesolver.Contradiction` when a line has no completion."""
    h, w = puzzle.height, puzzle.width
    state = GridState.blank(h, w)
    per_round: list[int] = []
    while True:
        new: dict[tuple[int, int], int] = {}
        for r in range(h):
            res = solve_line(puzzle.rows[r], w, state.row_fill[r], state.row_empty[r])
            if res is None:
                raise Contradiction(f"row {r}")
            _collect(new, res, state.row_fill[r] | state.row_empty[r], w, lambda j, r=r: (r, j))
        for c in range(w):
            res = solve_line(puzzle.cols[c], h, state.col_fill[c], state.col_empty[c])
            if res is None:
                raise Contradiction(f"column {c}")
            _collect(new, res, state.col_fill[c] | state.col_empty[c], h, lambda j, c=c: (j, c))
        if not new:
            return per_round, state
        for (r, c), v in new.items():
            state.set(r, c, v)
        per_round.append(len(new))


def _collect(new: dict, res: tuple[int, int], known: int, n: int, cell) -> None:
    fill, empty = res
    for j in range(n):
        bit = 1 << j
        if known & bit:
            continue
        if fill & bit or empty & bit:
            key = cell(j)
            v = 1 if fill & bit else 0
            if new.get(key, v) != v:
                raise Contradiction(f"cell {key}")
            new[key] = v


@dataclass(frozen=True)
class ProbePath:
    """The solve path with depth-1 probing (module docstring).

    ``stalls``: stalls along the path (0 = line-solvable); ``productive``: productive cells at
    each stall; ``known_at_stall``: cells known at each stall; ``solved``: the path completes the
    grid (False when some stall had no productive cell)."""

    stalls: int
    productive: tuple[int, ...]
    known_at_stall: tuple[int, ...]
    solved: bool


def probe_path(puzzle: Puzzle) -> ProbePath:
    """Return the depth-1 probing solve path of ``puzzle`` (see :class:`ProbePath`)."""
    state = propagate(puzzle, GridState.blank(puzzle.height, puzzle.width))
    productive: list[int] = []
    known: list[int] = []
    while not state.is_complete():
        known.append(state.n_known())
        first: GridState | None = None
        count = 0
        for _r, _c, s1, s0 in probe_branches(puzzle, state):
            if s1 is None and s0 is None:
                raise Contradiction("a cell can be neither filled nor empty")
            if s1 is None or s0 is None:
                nxt = s0 if s1 is None else s1
            else:
                nxt = _agreed(state, s1, s0)
            if nxt is not None:
                count += 1
                if first is None:
                    first = nxt
        productive.append(count)
        if first is None:
            return ProbePath(len(productive), tuple(productive), tuple(known), False)
        state = propagate(puzzle, first)
    return ProbePath(len(productive), tuple(productive), tuple(known), True)


def _agreed(state: GridState, a: GridState, b: GridState) -> GridState | None:
    """Return a copy of ``state`` with the cells both branches agree on, or None if they agree
    on no unknown cell."""
    out = state.copy()
    new = False
    for r in range(state.height):
        df = a.row_fill[r] & b.row_fill[r] & ~state.row_fill[r]
        de = a.row_empty[r] & b.row_empty[r] & ~state.row_empty[r]
        for d, v in ((df, 1), (de, 0)):
            while d:
                low = d & -d
                out.set(r, low.bit_length() - 1, v)
                d ^= low
                new = True
    return out if new else None


def strategy_profile(puzzle: Puzzle) -> dict[str, float | None]:
    """Return the human-strategy measures of ``puzzle`` (registry names, see
    :mod:`nonolab.measure.registry`): ``foothold_cells``, ``foothold_lines`` (counts),
    ``foothold_share`` (of the cells), ``chain_rounds`` (rounds), ``chain_cells_per_round``
    (cells per round; None when no round fixes a cell), ``propagation_share`` (of the cells),
    ``probe_stalls`` (count), ``first_stall_share`` (share of cells known at the first stall;
    None when line-solvable), ``hardest_step_options`` (fewest productive cells at a stall;
    None when line-solvable, 0 when single-cell probing is not enough)."""
    n = puzzle.height * puzzle.width
    fh = footholds(puzzle)
    rounds, state = propagation_rounds(puzzle)
    path = probe_path(puzzle)
    return {
        "foothold_cells": float(len(fh.cells)),
        "foothold_lines": float(len(fh.lines)),
        "foothold_share": len(fh.cells) / n,
        "chain_rounds": float(len(rounds)),
        "chain_cells_per_round": sum(rounds) / len(rounds) if rounds else None,
        "propagation_share": state.n_known() / n,
        "probe_stalls": float(path.stalls),
        "first_stall_share": path.known_at_stall[0] / n if path.stalls else None,
        "hardest_step_options": float(min(path.productive)) if path.stalls else None,
    }
