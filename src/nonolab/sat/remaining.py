"""The SAT side of the hybrid solver: the CNF of what line logic leaves unknown, and the
python-sat solvers that search it.

:func:`remaining_encoding` encodes only the remaining problem (the order encoding over the
block starts still feasible, known cells as unit clauses); :func:`resolve_solver` picks the
solver for ``solver="auto"`` by the number of unknown cells; :func:`new_solver` loads the
clauses straight into MiniSat 2.2 or CaDiCaL 1.9.5 (with :data:`CADICAL_OPTIONS`);
:func:`block_model` excludes a found solution, :func:`record_stats` copies the solver's
counters, and :func:`gc_paused` keeps the garbage collector out of encoding.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator, Sequence

from pysat.solvers import Solver

from nonolab.sat.encodings import Encoding, get_encoding
from nonolab.sat.encodings.order import SKIP, encode_order
from nonolab.sat.linesolver import Contradiction, GridState, line_placements
from nonolab.sat.puzzles import Puzzle

#: CaDiCaL 1.9.5 options used by default (python-sat ``configure``): stable-mode search only and
#: no bounded variable elimination. On two disjoint 40-puzzle samples of TAAI 2011 this cut
#: conflicts 2.5-3x and time ~3x against the defaults (docs/decisions.md).
CADICAL_OPTIONS: dict[str, int] = {"stabilizeonly": 1, "elim": 0}

#: ``solver="auto"`` uses :data:`AUTO_SMALL_SOLVER` when at most this many cells are unknown
#: before SAT (every 25x25 puzzle), else :data:`AUTO_LARGE_SOLVER`. On TAAI 2011 MiniSat 2.2
#: was ~1.3-1.4x faster overall than CaDiCaL 1.9.5 with :data:`CADICAL_OPTIONS`
#: (docs/decisions.md); problems with many unknown cells (Knotty, density-0.5 112x112) keep
#: CaDiCaL, where MiniSat was not measured.
AUTO_SMALL_MAX_UNKNOWN = 1000
AUTO_SMALL_SOLVER = "minisat22"
AUTO_LARGE_SOLVER = "cadical195"


def remaining_encoding(puzzle: Puzzle, state: GridState, encoding: str = "order") -> Encoding:
    """Return a CNF of the part of ``puzzle`` left unknown in ``state``.

    For ``order``: fully known lines are dropped, the others are encoded over the block starts
    still feasible, and known cells are unit clauses. For another registered encoding: its full
    encoding plus the units. Raises :class:`Contradiction` if a line has no completion.
    """
    known = state.to_cells()
    if encoding != "order":
        enc = get_encoding(encoding)(puzzle)
        w = puzzle.width
        for r, row in enumerate(known):
            for c, v in enumerate(row):
                if v == 1:
                    enc.clauses.append([r * w + c + 1])
                elif v == 0:
                    enc.clauses.append([-(r * w + c + 1)])
        return enc
    rpl = _line_plans(puzzle.rows, state.row_fill, state.row_empty, puzzle.width, "row")
    cpl = _line_plans(puzzle.cols, state.col_fill, state.col_empty, puzzle.height, "column")
    return encode_order(puzzle, known=known, row_placements=rpl, col_placements=cpl)


def _line_plans(
    clues: Sequence[Sequence[int]],
    fills: Sequence[int],
    empties: Sequence[int],
    length: int,
    kind: str,
) -> list:
    """Return, per line, :data:`SKIP` (fully known), None (nothing known: the packed ranges are
    exact) or the block-start placements still feasible; ``fills``/``empties`` are the known
    cells as bit masks. Raises :class:`Contradiction` naming the line when none is."""
    full = (1 << length) - 1
    plans: list = []
    for i, (clue, f, e) in enumerate(zip(clues, fills, empties, strict=True)):
        if f | e == full:
            plans.append(SKIP)
        elif not f | e:
            plans.append(None)
        else:
            pl = line_placements(clue, length, f, e)
            if pl is None:
                raise Contradiction(f"{kind} {i}")
            plans.append(pl)
    return plans


def resolve_solver(name: str, n_unknown: int) -> str:
    """Return the python-sat solver to use: ``name``, or for ``"auto"``
    :data:`AUTO_SMALL_SOLVER` when ``n_unknown`` (cells unknown before SAT) is at most
    :data:`AUTO_SMALL_MAX_UNKNOWN`, else :data:`AUTO_LARGE_SOLVER`."""
    if name != "auto":
        return name
    return AUTO_SMALL_SOLVER if n_unknown <= AUTO_SMALL_MAX_UNKNOWN else AUTO_LARGE_SOLVER


def new_solver(
    name: str, clauses: list[Sequence[int]], options: dict[str, int] | None = None
) -> Solver:
    """Return a python-sat solver loaded with ``clauses``.

    For CaDiCaL 1.9.5 the ``options`` (default :data:`CADICAL_OPTIONS`) are set first, then the
    clauses go straight to the extension's ``add_cl`` (python-sat's per-clause Python wrapper
    otherwise costs as much as the solving on 25x25 puzzles; see docs/decisions.md); other
    solvers ignore ``options``; MiniSat 2.2 is loaded through ``minisat22_add_cl`` the same way,
    the others with ``bootstrap_with``.
    """
    if name in ("cadical195", "cd195", "cd19", "cdl195", "cdl19"):
        s = Solver(name=name)
        opts = CADICAL_OPTIONS if options is None else options
        if opts:
            s.solver.configure(opts)
        return _load_direct(s, "cadical", "cadical195_add_cl", clauses)
    if name in ("minisat22", "msat22", "m22"):
        return _load_direct(Solver(name=name), "minisat", "minisat22_add_cl", clauses)
    return Solver(name=name, bootstrap_with=clauses)


def _load_direct(s: Solver, handle_attr: str, add_fn: str, clauses: list[Sequence[int]]) -> Solver:
    """Return ``s`` with ``clauses`` added through the extension function ``add_fn`` on the
    solver handle ``s.solver.<handle_attr>`` (no per-clause Python wrapper); falls back to
    ``append_formula`` if python-sat's internals changed."""
    try:
        import pysolvers

        handle = getattr(s.solver, handle_attr)
        add = getattr(pysolvers, add_fn)
    except (ImportError, AttributeError):  # python-sat internals changed: portable path
        s.append_formula(clauses)
        return s
    if not all(list(map(add, itertools.repeat(handle, len(clauses)), clauses))):
        s.solver.status = False  # an added clause made the formula trivially false
    return s


def block_model(s: Solver, model: Sequence[int], state: GridState, width: int) -> None:
    """Add to ``s`` the clause excluding ``model``'s values of the cells unknown in ``state``
    (known cells are unit clauses already)."""
    unknown_vars = {r * width + c + 1 for r, c in state.unknown_cells()}
    s.add_clause([-lit for lit in model if abs(lit) in unknown_vars])


def record_stats(s: Solver, counts: dict[str, int]) -> None:
    """Copy ``s``'s counters (``conflicts``, ``decisions``, ``propagations``, ``restarts``;
    cumulative over the instance's life, as ``accum_stats()`` reports them) into ``counts``."""
    st = s.accum_stats() or {}
    for k in ("conflicts", "decisions", "propagations", "restarts"):
        if k in st:
            counts[k] = int(st[k])


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (re-enabled after it, if it was
    on). The encoder allocates ~10k clause tuples for a 25x25 puzzle and holds no cycles; each
    700 allocations would start a collection, which on TAAI 2011 cost 1.3 of the 5.6 s spent
    encoding (docs/decisions.md)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
