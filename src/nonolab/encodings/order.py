"""Order (ladder) encoding of Nonograms, for large puzzles.

Per line and block ``k`` (length ``b_k``) with feasible starts ``lo_k..hi_k``, one Boolean
``X(k, p)`` = "block k starts at or after p" for ``p = lo_k+1 .. hi_k`` (``X(k, p)`` is the
constant true for ``p <= lo_k`` and false for ``p > hi_k``, so no variable is spent on them).
Block k starts at p iff ``X(k, p) and not X(k, p+1)``. Clauses, per line in this order:

1. monotonicity, block by block, p ascending: ``X(k, p+1) -> X(k, p)``;
2. forbidden starts inside the range (only for a restricted encoding, see ``placements``):
   ``not (X(k, p) and not X(k, p+1))``;
3. separation of consecutive blocks, p ascending: ``X(k, p) -> X(k+1, p + b_k + 1)``;
4. cell linkage: (a) block by block, cell ascending, for every cell c block k can cover,
   ``(not X(k, c+1) and X(k, c-b_k+1)) -> cell`` (a covering block fills the cell); (b) cell by
   cell, ``cell -> not X(0, c+1)`` (some block has started by c); (c) block by block, cell
   ascending, ``cell and not X(k, c+1) and X(k+1, c+1) -> X(k, c-b_k+1)`` (the last block
   started by c still covers c). Lines with no blocks give a unit ``not cell`` per cell.

Constants are folded (clauses with a true literal dropped, false literals removed), so every
clause has at most 4 literals and there are no auxiliary variables besides the ``X``. Cell (r, c)
is variable ``r * width + c + 1``; the ``X`` of rows come next (rows top to bottom, blocks left
to right, p ascending), then those of columns. Feasible ranges are the usual leftmost/rightmost
packings (the block-start encoding's), or, when ``placements`` is given, the min and max of the
allowed starts.
"""

from __future__ import annotations

from collections.abc import Sequence

from nonolab.encodings import Encoding, register
from nonolab.puzzles import Clue, Puzzle

_TRUE = 0  # sentinel literal "constant true" (never a real variable)
_FALSE = None  # sentinel literal "constant false"


def packed_ranges(clue: Clue, n: int) -> list[tuple[int, int]]:
    """Return ``[(lo_k, hi_k)]``: earliest and latest start of each block in a line of ``n``."""
    lo, pos = [], 0
    for b in clue:
        lo.append(pos)
        pos += b + 1
    hi, pos = [], n
    for b in reversed(clue):
        pos -= b
        hi.append(pos)
        pos -= 1
    hi.reverse()
    return list(zip(lo, hi, strict=True))


def line_clauses(
    clue: Clue,
    cells: Sequence[int],
    next_var: int,
    clauses: list[list[int]],
    placements: Sequence[Sequence[int]] | None = None,
) -> int:
    """Append the order-encoding clauses of one line to ``clauses``; return the next free var.

    ``cells``: the line's cell variables in order; ``next_var``: first variable available for the
    ``X``; ``placements``: optional allowed starts per block (sorted, non-empty), restricting the
    encoding to them.
    """
    n = len(cells)
    k_n = len(clue)
    if k_n == 0:
        clauses.extend([-v] for v in cells)
        return next_var
    if placements is None:
        ranges = packed_ranges(clue, n)
        allowed = None
    else:
        ranges = [(pl[0], pl[-1]) for pl in placements]
        allowed = [set(pl) for pl in placements]
    lo = [a for a, _ in ranges]
    hi = [b for _, b in ranges]
    base = []
    v = next_var
    for k in range(k_n):
        base.append(v - lo[k] - 1)  # X(k, p) = base[k] + p for lo < p <= hi
        v += hi[k] - lo[k]
    app = clauses.append

    def x(k: int, p: int) -> int | None:
        if k >= k_n or p <= lo[k]:
            return _TRUE
        if p > hi[k]:
            return _FALSE
        return base[k] + p

    def emit(lits: list) -> None:
        out = []
        for lit in lits:
            if lit is _FALSE:
                continue
            if lit is _TRUE:
                return
            out.append(lit)
        if not out:
            raise ValueError(f"clue {list(clue)}: restricted placements are inconsistent")
        app(out)

    # 1. monotonicity
    for k in range(k_n):
        bk = base[k]
        clauses.extend([-(bk + p + 1), bk + p] for p in range(lo[k] + 1, hi[k]))
    # 2. forbidden starts
    if allowed is not None:
        for k in range(k_n):
            bk = base[k]
            for p in range(lo[k] + 1, hi[k]):
                if p not in allowed[k]:
                    app([-(bk + p), bk + p + 1])
    # 3. separation
    for k in range(k_n - 1):
        gap = clue[k] + 1
        lo1, hi1, b1 = lo[k + 1], hi[k + 1], base[k + 1]
        for p in range(lo[k], hi[k] + 1):
            q = p + gap
            if q <= lo1:
                continue
            a = x(k, p)
            if q > hi1:
                emit([-a if a is not _TRUE else _FALSE])
            elif a is _TRUE:
                app([b1 + q])
            else:
                app([-a, b1 + q])
    # 4a. a covering block fills the cell: (not X(k, c+1) and X(k, c-b+1)) -> cell
    for k in range(k_n):
        bk, lk, hk, b = base[k], lo[k], hi[k], clue[k]
        for c in range(lk, hk + b):
            cl = [cells[c]]
            if c + 1 <= hk:
                cl.append(bk + c + 1)
            if c - b + 1 > lk:
                cl.append(-(bk + c - b + 1))
            app(cl)
    # 4b. a filled cell has some block started by it: cell -> not X(0, c+1)
    b0, l0, h0 = base[0], lo[0], hi[0]
    for c in range(min(h0, n)):
        if c + 1 <= l0:
            app([-cells[c]])
        else:
            app([-cells[c], -(b0 + c + 1)])
    # 4c. the last block started by c covers it:
    #     cell and not X(k, c+1) and X(k+1, c+1) -> X(k, c-b+1)
    for k in range(k_n):
        bk, lk, hk, b = base[k], lo[k], hi[k], clue[k]
        last = k == k_n - 1
        c_end = n - 1 if last else hi[k + 1] - 1
        if not last:
            bn, ln = base[k + 1], lo[k + 1]
        for c in range(lk + b, c_end + 1):
            cl = [-cells[c]]
            if c + 1 <= hk:
                cl.append(bk + c + 1)
            if not last and c + 1 > ln:
                cl.append(-(bn + c + 1))
            if c - b + 1 <= hk:
                cl.append(bk + c - b + 1)
            app(cl)
    return v


def _neg(lit: int | None) -> int | None:
    if lit is _TRUE:
        return _FALSE
    if lit is _FALSE:
        return _TRUE
    return -lit


def encode_order(
    puzzle: Puzzle,
    *,
    known: Sequence[Sequence[int]] | None = None,
    row_placements: Sequence[Sequence[Sequence[int]] | None] | None = None,
    col_placements: Sequence[Sequence[Sequence[int]] | None] | None = None,
) -> Encoding:
    """Return the order encoding of ``puzzle`` (see the module docstring).

    ``known`` (optional, rows of -1/0/1): known cells, given as unit clauses after the lines'
    clauses. ``row_placements``/``col_placements`` (optional, per line): allowed starts per block,
    or ``None`` for a line that needs no clauses (all its cells known and given in ``known``).
    Without them every line is encoded over its packed feasible ranges.
    """
    h, w = puzzle.height, puzzle.width
    clauses: list[list[int]] = []
    v = h * w + 1
    for r in range(h):
        pl = None
        if row_placements is not None:
            pl = row_placements[r]
            if pl is None:
                continue
        v = line_clauses(puzzle.rows[r], range(r * w + 1, r * w + w + 1), v, clauses, pl)
    for c in range(w):
        pl = None
        if col_placements is not None:
            pl = col_placements[c]
            if pl is None:
                continue
        v = line_clauses(puzzle.cols[c], range(c + 1, h * w + 1, w), v, clauses, pl)
    if known is not None:
        for r, row in enumerate(known):
            for c, val in enumerate(row):
                if val == 1:
                    clauses.append([r * w + c + 1])
                elif val == 0:
                    clauses.append([-(r * w + c + 1)])
    return Encoding(name="order", height=h, width=w, nvars=v - 1, clauses=clauses)


@register("order")
def encode(puzzle: Puzzle) -> Encoding:
    """Return the full (unrestricted) order encoding of ``puzzle``."""
    return encode_order(puzzle)
