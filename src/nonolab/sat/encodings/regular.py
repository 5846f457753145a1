"""Regular-constraint (unrolled automaton) encoding of Nonograms: unit propagation is the
complete line solver.

A clue ``(b1, ..., bk)`` is the regular language ``0* 1^b1 0+ 1^b2 ... 1^bk 0*``; its automaton
(the line solver's, :mod:`nonolab.sat.linesolver`) has states ``0..M`` (``M = sum(b) + k - 1``;
state ``q`` = "the first ``q`` pattern symbols are consumed") and is deterministic: from ``q`` a
``1`` leads to ``q+1`` when pattern symbol ``q`` is a ``1``; a ``0`` stays in ``q`` when ``q`` is
the start, a gap or the accept state, and leads to ``q+1`` when pattern symbol ``q`` is a ``0``.

Per line of ``n`` cells the automaton is unrolled over layers ``0..n`` (the decomposition of the
REGULAR constraint by Quimper & Walsh 2006 and Bacchus 2007):

* a state variable ``Q(i, q)`` for every state ``q`` alive at layer ``i`` (reachable from the
  start in ``i`` cells and able to reach acceptance in ``n - i``; dead states are constants and
  get no variable);
* a transition variable ``T(i, q, a)`` for every transition at cell ``i`` between alive states,
  reading symbol ``a`` (1 = filled);

and the clauses, per line in this order:

1. ``Q(0, 0)`` and ``Q(n, M)`` (units);
2. per cell ``i`` and transition ``t = T(i, q, a)`` into ``q'``: ``t -> Q(i, q)``,
   ``t -> lit(a)``, ``t -> Q(i+1, q')`` (``lit(1)`` = the cell, ``lit(0)`` = its negation);
3. per cell ``i``: every alive ``Q(i, q)`` implies one of its outgoing transitions, every alive
   ``Q(i+1, q')`` one of its incoming transitions, and ``lit(a)`` one of cell ``i``'s
   transitions reading ``a``.

The CNF is equivalent to the clue (a model's transitions trace an accepting run), and unit
propagation on it enforces generalized arc consistency on each line: a cell value without an
accepting run through it loses every transition supporting it, so exactly the cells the line
solver fixes are fixed (tested on generated lines: ``tests/sat/test_regular_encoding.py``). Unit
propagation over a whole puzzle's encoding therefore reaches the line-solving fixpoint
(:func:`nonolab.sat.linesolver.propagation_fixpoint`). Cell (r, c) is variable
``r * width + c + 1``; the lines' variables follow (rows top to bottom, then columns).
"""

from __future__ import annotations

from collections.abc import Sequence

from nonolab.sat.encodings import Encoding, register
from nonolab.sat.puzzles import Clue, Puzzle

NAME = "regular"


def _pattern(clue: Clue) -> list[int]:
    out: list[int] = []
    for j, b in enumerate(clue):
        if j:
            out.append(0)
        out.extend([1] * b)
    return out


def _alive(clue: Clue, n: int) -> list[set[int]]:
    """Return, per layer ``0..n``, the automaton states reachable from the start and able to
    reach acceptance on a line of ``n`` unknown cells (empty sets when the clue does not fit)."""
    pat = _pattern(clue)
    m = len(pat)

    def step(q: int) -> list[tuple[int, int]]:
        out = []
        if q < m and pat[q] == 1:
            out.append((1, q + 1))
        if q == 0 or q == m or (q > 0 and pat[q - 1] == 0):
            out.append((0, q))  # start, gap or accept: 0 loops
        elif q < m and pat[q] == 0:
            out.append((0, q + 1))
        return out

    fwd = [set() for _ in range(n + 1)]
    fwd[0] = {0}
    for i in range(n):
        fwd[i + 1] = {t for q in fwd[i] for _a, t in step(q)}
    bwd = [set() for _ in range(n + 1)]
    bwd[n] = {m} & fwd[n]
    for i in range(n - 1, -1, -1):
        bwd[i] = {q for q in fwd[i] if any(t in bwd[i + 1] for _a, t in step(q))}
    return [bwd[i] for i in range(n + 1)]


def transitions(clue: Clue, n: int) -> list[list[tuple[int, int, int]]]:
    """Return, per cell ``i``, the transitions ``(q, a, q')`` between alive states of layers
    ``i`` and ``i + 1`` (``a`` 1 = filled, 0 = empty), in order of ``q`` then ``a``."""
    pat = _pattern(clue)
    m = len(pat)
    alive = _alive(clue, n)
    out: list[list[tuple[int, int, int]]] = []
    for i in range(n):
        cell = []
        for q in sorted(alive[i]):
            if q < m and pat[q] == 1 and q + 1 in alive[i + 1]:
                cell.append((q, 1, q + 1))
            if q == 0 or q == m or pat[q - 1] == 0:
                if q in alive[i + 1]:
                    cell.append((q, 0, q))
            elif q < m and pat[q] == 0 and q + 1 in alive[i + 1]:
                cell.append((q, 0, q + 1))
        out.append(sorted(cell, key=lambda t: (t[0], -t[1])))
    return out


def line_clauses(
    clue: Clue, cells: Sequence[int], next_var: int, clauses: list[Sequence[int]]
) -> int:
    """Append the regular encoding's clauses of one line to ``clauses`` (see the module
    docstring); return the next free variable.

    ``cells``: the line's cell variables in order; ``next_var``: first variable available for
    the state and transition variables. A clue that does not fit the line gives the empty
    clause.
    """
    n = len(cells)
    m = len(_pattern(clue))
    alive = _alive(clue, n)
    if not alive[0]:
        clauses.append([])
        return next_var
    v = next_var
    qvar: dict[tuple[int, int], int] = {}
    for i in range(n + 1):
        for q in sorted(alive[i]):
            qvar[i, q] = v
            v += 1
    clauses.append([qvar[0, 0]])
    clauses.append([qvar[n, m]])
    trans = transitions(clue, n)
    for i, cell_trans in enumerate(trans):
        x = cells[i]
        out_of: dict[int, list[int]] = {}
        into: dict[int, list[int]] = {}
        by_symbol: dict[int, list[int]] = {0: [], 1: []}
        for q, a, q2 in cell_trans:
            t = v
            v += 1
            clauses.append([-t, qvar[i, q]])
            clauses.append([-t, x if a else -x])
            clauses.append([-t, qvar[i + 1, q2]])
            out_of.setdefault(q, []).append(t)
            into.setdefault(q2, []).append(t)
            by_symbol[a].append(t)
        for q in sorted(alive[i]):
            clauses.append([-qvar[i, q], *out_of.get(q, [])])
        for q2 in sorted(alive[i + 1]):
            clauses.append([-qvar[i + 1, q2], *into.get(q2, [])])
        clauses.append([-x, *by_symbol[1]])
        clauses.append([x, *by_symbol[0]])
    return v


def encode_regular(puzzle: Puzzle) -> Encoding:
    """Return the regular encoding of ``puzzle`` (see the module docstring): rows top to bottom,
    then columns left to right."""
    h, w = puzzle.height, puzzle.width
    clauses: list[Sequence[int]] = []
    v = h * w + 1
    for r in range(h):
        v = line_clauses(puzzle.rows[r], range(r * w + 1, r * w + w + 1), v, clauses)
    for c in range(w):
        v = line_clauses(puzzle.cols[c], range(c + 1, h * w + 1, w), v, clauses)
    return Encoding(name=NAME, height=h, width=w, nvars=v - 1, clauses=clauses)


@register(NAME)
def encode(puzzle: Puzzle) -> Encoding:
    """Return the regular (unrolled-automaton) encoding of ``puzzle``."""
    return encode_regular(puzzle)
