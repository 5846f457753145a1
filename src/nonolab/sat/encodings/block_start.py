"""The block-start encoding of He, Ju, Calver and Gao (2026), METHODS.md section 2.

Variables: cell (r, c) is ``r * width + c + 1`` (true = filled). Then, for every line in the order
all rows (top to bottom), then all columns (left to right), every clue block allocates one
variable per feasible start position, block by block, positions ascending. A block's feasible
starts run from its earliest start (all earlier blocks packed left with one gap) to its latest
start (all later blocks packed right).

Clauses, line by line in the same order; within a line:

1. for each block: the at-least-one clause over its starts, then the pairwise at-most-one
   clauses ``(-a, -b)`` for start pairs in lexicographic order;
2. for each pair of consecutive blocks (j, j+1): ``(-start_j(p), -start_{j+1}(q))`` for every
   start p of block j and q of block j+1 (p, then q, ascending) with ``q < p + len_j + 1``;
3. for each block and start: span fill ``(-start, cell)`` for each cell of the span in order;
4. for each cell of the line: coverage ``(-cell, starts covering it ...)`` block by block,
   positions ascending. A line with no blocks therefore gets one unit clause ``(-cell)`` per
   cell ("lines with no blocks are all empty").

This order reproduces the published variable/clause counts and MiniSat22/Glucose42/CaDiCaL195
statistics of the six served puzzles (see ``tests/sat/test_encodings_block_start.py``).
"""

from __future__ import annotations

from nonolab.sat.encodings import Encoding, register
from nonolab.sat.puzzles import Clue, Puzzle


def block_start_ranges(clue: Clue, length: int) -> list[range]:
    """Return, per block of ``clue``, the range of feasible 0-based start positions in a line."""
    k = len(clue)
    out = []
    earliest = 0
    # suffix[j] = cells needed by blocks j..k-1 including the gaps between them
    suffix = [0] * (k + 1)
    for j in range(k - 1, -1, -1):
        suffix[j] = clue[j] + (suffix[j + 1] + 1 if j < k - 1 else 0)
    for j in range(k):
        latest = length - suffix[j]
        out.append(range(earliest, latest + 1))
        earliest += clue[j] + 1
    return out


def _line_clauses(
    clue: Clue,
    cells: list[int],
    next_var: int,
    clauses: list[list[int]],
    aux: dict[tuple, int] | None,
    key: tuple,
) -> int:
    """Append the clauses of one line to ``clauses``; return the next free variable."""
    n = len(cells)
    if not clue:
        clauses.extend([-v] for v in cells)
        return next_var
    ranges = block_start_ranges(clue, n)
    # Start variables of block j are consecutive: position p -> base[j] + (p - first[j]).
    base: list[int] = []
    for j, rng in enumerate(ranges):
        base.append(next_var)
        if aux is not None:
            for p in rng:
                aux[(*key, j, p)] = next_var + p - rng.start
        next_var += len(rng)
    # 1. exactly one start per block
    for j, rng in enumerate(ranges):
        vs = list(range(base[j], base[j] + len(rng)))
        clauses.append(vs)
        for i, a in enumerate(vs):
            clauses.extend([-a, -b] for b in vs[i + 1 :])
    # 2. ordering of consecutive blocks: start q of block j+1 must be >= p + len_j + 1
    for j in range(len(clue) - 1):
        r0, r1 = ranges[j], ranges[j + 1]
        b1 = base[j + 1]
        for p in r0:
            a = base[j] + p - r0.start
            hi = min(r1.stop, p + clue[j] + 1)  # q < p + len + 1
            clauses.extend([-a, -(b1 + q - r1.start)] for q in range(r1.start, hi))
    # 3. a chosen start fills its span
    for j, rng in enumerate(ranges):
        lj = clue[j]
        for p in rng:
            a = -(base[j] + p - rng.start)
            clauses.extend([a, cells[i]] for i in range(p, p + lj))
    # 4. a filled cell is covered by some chosen start (starts p with p <= i < p + len)
    for i, cell in enumerate(cells):
        cl = [-cell]
        for j, rng in enumerate(ranges):
            lo = max(rng.start, i - clue[j] + 1)
            hi = min(rng.stop, i + 1)
            cl.extend(range(base[j] + lo - rng.start, base[j] + hi - rng.start))
        clauses.append(cl)
    return next_var


@register("block_start")
def encode(puzzle: Puzzle, *, with_aux: bool = False) -> Encoding:
    """Return the block-start CNF of ``puzzle`` (variables and clause order as in METHODS 2).

    ``with_aux=True`` also fills ``Encoding.aux`` with ``("row"|"col", line, block, start) ->
    variable`` (costs memory on large puzzles).
    """
    h, w = puzzle.height, puzzle.width
    clauses: list[list[int]] = []
    aux: dict[tuple, int] | None = {} if with_aux else None
    next_var = h * w + 1
    for r, clue in enumerate(puzzle.rows):
        cells = [r * w + c + 1 for c in range(w)]
        next_var = _line_clauses(clue, cells, next_var, clauses, aux, ("row", r))
    for c, clue in enumerate(puzzle.cols):
        cells = [r * w + c + 1 for r in range(h)]
        next_var = _line_clauses(clue, cells, next_var, clauses, aux, ("col", c))
    return Encoding(
        name="block_start",
        height=h,
        width=w,
        nvars=next_var - 1,
        clauses=clauses,
        aux=aux or {},
    )
