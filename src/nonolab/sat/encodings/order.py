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

from nonolab.sat.encodings import Encoding, register
from nonolab.sat.puzzles import Clue, Puzzle

#: placement marker: the line needs no clauses (see :func:`encode_order`)
SKIP = "skip"


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
    clauses: list[Sequence[int]],
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
    ext = clauses.extend
    neg = [-x for x in cells]
    # The families below enumerate the index intervals in which each literal is a variable or a
    # folded constant, and build each interval's clauses as tuples with ``zip`` over ``range``s
    # and slices (no per-clause Python bytecode; same clauses, same order as literal lists).
    # 1. monotonicity: X(k, p+1) -> X(k, p)
    for k in range(k_n):
        bk, lk, hk = base[k], lo[k], hi[k]
        ext(
            zip(range(-(bk + lk + 2), -(bk + hk + 1), -1), range(bk + lk + 1, bk + hk), strict=True)
        )
    # 2. forbidden starts: not (X(k, p) and not X(k, p+1))
    if allowed is not None:
        for k in range(k_n):
            bk, ak = base[k], allowed[k]
            ext((-(bk + p), bk + p + 1) for p in range(lo[k] + 1, hi[k]) if p not in ak)
    # 3. separation: X(k, p) -> X(k+1, p + b_k + 1)
    for k in range(k_n - 1):
        gap = clue[k] + 1
        lk, hk, bk = lo[k], hi[k], base[k]
        lo1, hi1, b1 = lo[k + 1], hi[k + 1], base[k + 1]
        q = lk + gap  # p = lo_k: X(k, p) is true
        if q > hi1:
            raise ValueError(f"clue {list(clue)}: restricted placements are inconsistent")
        if q > lo1:
            app((b1 + q,))
        p0, p1 = max(lk + 1, lo1 - gap + 1), min(hk, hi1 - gap)  # p in [p0, p1]
        ext(
            zip(
                range(-(bk + p0), -(bk + p1 + 1), -1),
                range(b1 + p0 + gap, b1 + p1 + gap + 1),
                strict=True,
            )
        )
        p0 = max(lk + 1, hi1 - gap + 1)
        ext(zip(range(-(bk + p0), -(bk + hk + 1), -1)))
    # 4a. a covering block fills the cell: (not X(k, c+1) and X(k, c-b+1)) -> cell
    for k in range(k_n):
        bk, lk, hk, b = base[k], lo[k], hi[k], clue[k]
        m = min(lk + b, hk)
        ext(zip(cells[lk:m], range(bk + lk + 1, bk + m + 1), strict=True))
        if lk + b < hk:
            ext(
                zip(
                    cells[lk + b : hk],
                    range(bk + lk + b + 1, bk + hk + 1),
                    range(-(bk + lk + 1), -(bk + hk - b + 1), -1),
                    strict=True,
                )
            )
        else:
            ext(zip(cells[hk : lk + b]))
        c0 = max(lk + b, hk)
        ext(zip(cells[c0 : hk + b], range(-(bk + c0 - b + 1), -(bk + hk + 1), -1), strict=True))
    # 4b. a filled cell has some block started by it: cell -> not X(0, c+1)
    b0, l0, h0 = base[0], lo[0], hi[0]
    ext(zip(neg[:l0]))
    ext(zip(neg[l0:h0], range(-(b0 + l0 + 1), -(b0 + h0 + 1), -1), strict=True))
    # 4c. the last block started by c covers it:
    #     cell and not X(k, c+1) and X(k+1, c+1) -> X(k, c-b+1)
    for k in range(k_n):
        bk, lk, hk, b = base[k], lo[k], hi[k], clue[k]
        last = k == k_n - 1
        if last:
            c_end, bn, ln = n - 1, 0, n + 1
        else:
            c_end, bn, ln = hi[k + 1] - 1, base[k + 1], lo[k + 1]
        hkb = hk + b
        c0 = lk + b
        mid_lo = max(c0, ln) if not last else c0
        mid_hi = min(hk - 1, c_end)
        if last:
            # no X(k+1) literal: interior has [-cell, X(k, c+1), X(k, c-b+1)]
            ext(
                zip(
                    neg[c0 : mid_hi + 1],
                    range(bk + c0 + 1, bk + mid_hi + 2),
                    range(bk + c0 - b + 1, bk + mid_hi - b + 2),
                    strict=True,
                )
            )
            edge = range(max(c0, mid_hi + 1), c_end + 1)
        else:
            edge = [c for c in range(c0, c_end + 1) if not (mid_lo <= c <= mid_hi)]
            ext(
                zip(
                    neg[mid_lo : mid_hi + 1],
                    range(bk + mid_lo + 1, bk + mid_hi + 2),
                    range(-(bn + mid_lo + 1), -(bn + mid_hi + 2), -1),
                    range(bk + mid_lo - b + 1, bk + mid_hi - b + 2),
                    strict=True,
                )
            )
        for c in edge:
            cl = [neg[c]]
            if c < hk:
                cl.append(bk + c + 1)
            if c >= ln:
                cl.append(-(bn + c + 1))
            if c < hkb:
                cl.append(bk + c - b + 1)
            app(cl)
    return v


def encode_order(
    puzzle: Puzzle,
    *,
    known: Sequence[Sequence[int]] | None = None,
    row_placements: Sequence[Sequence[Sequence[int]] | None] | None = None,
    col_placements: Sequence[Sequence[Sequence[int]] | None] | None = None,
) -> Encoding:
    """Return the order encoding of ``puzzle`` (see the module docstring).

    ``known`` (optional, rows of -1/0/1): known cells, given as unit clauses after the lines'
    clauses. ``row_placements``/``col_placements`` (optional, per line): allowed starts per block
    (sorted lists), ``None`` for the packed feasible ranges, or :data:`SKIP` for a line that needs
    no clauses (all its cells known and given in ``known``). Without them every line is encoded
    over its packed feasible ranges.
    """
    h, w = puzzle.height, puzzle.width
    clauses: list[Sequence[int]] = []
    v = h * w + 1
    lines = [(puzzle.rows[r], range(r * w + 1, r * w + w + 1)) for r in range(h)]
    lines += [(puzzle.cols[c], range(c + 1, h * w + 1, w)) for c in range(w)]
    placements = [
        *(row_placements if row_placements is not None else [None] * h),
        *(col_placements if col_placements is not None else [None] * w),
    ]
    for (clue, cells), pl in zip(lines, placements, strict=True):
        if pl is not SKIP:  # rows first, then columns: the clause order is part of the CNF
            v = line_clauses(clue, cells, v, clauses, pl)
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
