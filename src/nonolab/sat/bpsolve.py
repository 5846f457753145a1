"""Belief-propagation decimation checked by CDCL: a first solution for very hard large puzzles.

Random 112x112 puzzles at fill density 0.5 sit at a phase transition: propagation sets almost no
cell, and neither CaDiCaL nor Kissat (nor CP-SAT) found a solution of the solve benchmark's board
in 15 minutes. This module finds one (docs/decisions.md, "Density 0.5"):

1. **Belief propagation** (sum-product) between rows and columns. A line's message to each of
   its cells is the probability that the cell is filled over the line's completions, each
   completion weighted by the other cells' incoming messages (a *cavity* message: the cell's own
   incoming weight is left out). It is computed exactly by forward-backward over the clue's
   automaton, for all rows (then all columns) at once in numpy (:func:`cavity_messages`).
2. **Decimation**: each round guesses the most polarised ``frac`` of the unknown cells at
   BP's likelier value, with line propagation after each guess (a guess that contradicts
   propagation is skipped).
3. **Checks**: every round is checked by one incremental CDCL solver on the remaining problem's
   CNF, with all accepted guesses plus the round's as assumptions and ``check_conflicts``
   conflicts. A model ends the search. A refuted round is bisected down to one culprit guess,
   whose other value is accepted instead; when both values of the culprit are refuted, the
   accepted guesses themselves are contradictory and the previous round is bisected instead.

Soundness: a model is a model of the puzzle's CNF (the caller verifies the grid against the
clues). ``unsat`` is reported only when the solver refutes the CNF under no assumptions at all.
Everything else (the guesses, an unrefuted check) is heuristic and can only cost time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from pysat.solvers import Solver

from nonolab.sat.linesolver import UNKNOWN, Contradiction, GridState, _assume, propagate
from nonolab.sat.puzzles import Puzzle

#: share of the unknown cells guessed per decimation round
DECIMATION_FRAC = 0.02
#: restart slices of :func:`schedule`: (share per round, CDCL checks), each slice on a fresh
#: solver; the cycle repeats, first with BP's most polarised guesses (deterministic), then with
#: seeded random guesses (seeds 1, 2, ...). Slices are counted in checks, not seconds, so a run
#: takes the same path on any machine. On the solve benchmark's four density-0.5 112x112
#: boards, unseeded 4 % rounds solved boards 1 and 2 (105 checks each), 3 % board 3 (12
#: checks), 2 % board 0 (423 checks), and every other share thrashed for 269-1,826 checks
#: without a solution; seeded 3 % rounds solved 5 of 11 runs in 11-77 checks
#: (docs/decisions.md)
SCHEDULE: tuple[tuple[float, int], ...] = ((0.04, 150), (0.03, 150), (0.02, 450))
#: conflicts per CDCL check of a round; 5,000 solved the benchmark's density-0.5 board, 20,000
#: did not within 900 s (a check that neither refutes nor finds a model lets bad rounds through
#: and costs more; docs/decisions.md)
CHECK_CONFLICTS = 5000
#: BP sweeps per round at most (warm-started from the previous round's messages), the damping
#: of the message updates and the convergence tolerance (largest message change)
BP_ITERS = 30
BP_DAMPING = 0.5
BP_TOL = 1e-4
#: with a seed, :func:`decimate` guesses a random ``k`` of the ``SEED_POOL * k`` most polarised
#: unknown cells of each round (``k`` being the round's share)
SEED_POOL = 1.5


@dataclass(frozen=True)
class LineAutomata:
    """Padded automata of a set of line clues, one row per line, one column per state.

    State 0 is the leading gap; each block cell has a state; after each block comes a gap state.
    ``has_one[i, q]``: state q of line i moves to q+1 on a filled cell; ``loop0[i, q]``: stays on
    an empty cell; ``end[i, q]``: last cell of a block, moves to q+1 on an empty cell;
    ``accept[i, q]``: q is accepting. All 0.0/1.0 floats.
    """

    has_one: np.ndarray
    loop0: np.ndarray
    end: np.ndarray
    accept: np.ndarray


def line_automata(clues: Sequence[Sequence[int]]) -> LineAutomata:
    """Return the :class:`LineAutomata` of ``clues`` (each a tuple of block lengths; ``()`` is
    an empty line)."""
    m = max(sum(c) + len(c) + 1 for c in clues)
    has_one, loop0, end, acc = (np.zeros((len(clues), m)) for _ in range(4))
    for i, clue in enumerate(clues):
        loop0[i, 0] = 1
        if clue:
            has_one[i, 0] = 1
        else:
            acc[i, 0] = 1
        q = 1
        for k, b in enumerate(clue):
            for j in range(1, b + 1):
                if j < b:
                    has_one[i, q] = 1
                else:
                    end[i, q] = 1
                    acc[i, q] = k == len(clue) - 1
                q += 1
            loop0[i, q] = 1
            if k < len(clue) - 1:
                has_one[i, q] = 1
            else:
                acc[i, q] = 1
            q += 1
    return LineAutomata(has_one, loop0, end, acc)


def _shift(a: np.ndarray, by: int) -> np.ndarray:
    out = np.zeros_like(a)
    if by > 0:
        out[:, by:] = a[:, :-by]
    else:
        out[:, :by] = a[:, -by:]
    return out


def cavity_messages(
    aut: LineAutomata, w1: np.ndarray, w0: np.ndarray, compiled: bool = False
) -> np.ndarray:
    """Return each line's cavity message to each of its cells: P(cell filled), over the line's
    completions weighted by the *other* cells' weights (lines x cells, floats in [0, 1]).

    ``w1``/``w0`` (lines x cells, non-negative): each cell's incoming weight of filled/empty.
    A cell with no completion on either value gets 0.0. Forward and backward vectors are
    normalised at every step, so long lines do not underflow.

    ``compiled``: use the numba kernel (:func:`_cavity_compiled`, ~20x faster on 25-cell
    lines) when numba is installed (optional), else the numpy recurrences. It computes the same recurrences cell by cell, so its
    messages equal numpy's up to rounding (sums are taken in another order), which can reorder
    cells whose beliefs tie; the decimation keeps numpy so that its measured paths stay
    reproducible (docs/decisions.md).
    """
    kernel = _compiled_kernel() if compiled else None
    if kernel is not None:
        return kernel(
            aut.has_one,
            aut.loop0,
            aut.end,
            aut.accept,
            np.ascontiguousarray(w1, dtype=np.float64),
            np.ascontiguousarray(w0, dtype=np.float64),
        )
    has_one, loop0, end, acc = aut.has_one, aut.loop0, aut.end, aut.accept
    n_lines, n = w1.shape
    alpha = np.zeros((n + 1, n_lines, has_one.shape[1]))
    alpha[0, :, 0] = 1
    for i in range(n):
        a = alpha[i]
        nxt = _shift(a * has_one, 1) * w1[:, i : i + 1]
        nxt += (a * loop0 + _shift(a * end, 1)) * w0[:, i : i + 1]
        s = nxt.sum(1, keepdims=True)
        alpha[i + 1] = nxt / np.where(s == 0, 1, s)
    beta = acc.copy()
    m1 = np.zeros((n_lines, n))
    m0 = np.zeros((n_lines, n))
    for i in range(n - 1, -1, -1):
        one = has_one * _shift(beta, -1)
        zero = loop0 * beta + end * _shift(beta, -1)
        m1[:, i] = (alpha[i] * one).sum(1)
        m0[:, i] = (alpha[i] * zero).sum(1)
        prev = one * w1[:, i : i + 1] + zero * w0[:, i : i + 1]
        s = prev.sum(1, keepdims=True)
        beta = prev / np.where(s == 0, 1, s)
    tot = m1 + m0
    return m1 / np.where(tot == 0, 1, tot)


def _cavity_compiled(
    has_one: np.ndarray,
    loop0: np.ndarray,
    end: np.ndarray,
    acc: np.ndarray,
    w1: np.ndarray,
    w0: np.ndarray,
) -> np.ndarray:  # pragma: no cover - runs compiled; tested against the numpy version
    """:func:`cavity_messages` line by line and state by state (the numba kernel): the same
    forward and backward recurrences over the automaton (arguments as in :class:`LineAutomata`;
    ``w1``/``w0`` lines x cells), normalised at every step. Returns lines x cells."""
    n_lines, n = w1.shape
    m = has_one.shape[1]
    out = np.zeros((n_lines, n))
    alpha = np.zeros((n + 1, m))
    beta = np.zeros(m + 1)
    nxt = np.zeros(m)
    for ln in range(n_lines):
        alpha[:] = 0.0
        alpha[0, 0] = 1.0
        for i in range(n):
            f1 = w1[ln, i]
            f0 = w0[ln, i]
            tot = 0.0
            for q in range(m):
                v = alpha[i, q] * loop0[ln, q] * f0
                if q > 0:
                    v += alpha[i, q - 1] * (has_one[ln, q - 1] * f1 + end[ln, q - 1] * f0)
                alpha[i + 1, q] = v
                tot += v
            if tot > 0.0:
                for q in range(m):
                    alpha[i + 1, q] /= tot
        beta[:] = 0.0
        for q in range(m):
            beta[q] = acc[ln, q]
        for i in range(n - 1, -1, -1):
            m1 = 0.0
            m0 = 0.0
            tot = 0.0
            for q in range(m):
                one = has_one[ln, q] * beta[q + 1]
                zero = loop0[ln, q] * beta[q] + end[ln, q] * beta[q + 1]
                m1 += alpha[i, q] * one
                m0 += alpha[i, q] * zero
                v = one * w1[ln, i] + zero * w0[ln, i]
                nxt[q] = v
                tot += v
            for q in range(m):
                beta[q] = nxt[q] / tot if tot > 0.0 else nxt[q]
            out[ln, i] = m1 / (m1 + m0) if m1 + m0 > 0.0 else 0.0
    return out


@functools.cache
def _compiled_kernel() -> Callable[..., np.ndarray] | None:
    """Return :func:`_cavity_compiled` compiled by numba (imported on first use, ~0.15 s;
    compiled once and cached on disk, or in memory only, ~1 s per process, where no cache
    directory is writable), or None when numba is not installed (it is optional: the extra
    ``nonolab[fast]``; without it ``compiled=True`` runs the numpy recurrences)."""
    try:
        from numba import njit
    except ImportError:
        return None
    try:
        return njit(cache=True, nogil=True)(_cavity_compiled)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(nogil=True)(_cavity_compiled)


Messages = tuple[np.ndarray, np.ndarray]


def beliefs(
    automata: tuple[LineAutomata, LineAutomata],
    known: np.ndarray,
    init: Messages | None = None,
    iters: int = BP_ITERS,
    damping: float = BP_DAMPING,
    tol: float = BP_TOL,
    compiled: bool = False,
) -> tuple[np.ndarray, Messages]:
    """Return ``(belief, messages)`` after at most ``iters`` damped BP sweeps (rows, then
    columns), stopping once no message moves by more than ``tol``.

    ``automata``: (rows, columns); ``known`` (height x width): -1 unknown, 0 empty, 1 filled
    (known cells are evidence); ``init``: the row and column messages of a previous call (warm
    start), else all 0.5. ``belief`` (height x width) is each cell's P(filled): 1.0/0.0 on known
    cells. ``messages`` can be passed back as ``init``. ``compiled``: the numba line kernel (see
    :func:`cavity_messages`).
    """
    rows_a, cols_a = automata
    if init is None:
        rm = cm = np.full(known.shape, 0.5)
    else:
        rm, cm = init
    ev1 = np.where(known == 0, 0.0, 1.0)
    ev0 = np.where(known == 1, 0.0, 1.0)
    for _ in range(iters):
        r_new = cavity_messages(rows_a, cm * ev1, (1 - cm) * ev0, compiled)
        c_new = cavity_messages(cols_a, (r_new * ev1).T, ((1 - r_new) * ev0).T, compiled).T
        delta = max(np.abs(r_new - rm).max(), np.abs(c_new - cm).max())
        rm = damping * rm + (1 - damping) * r_new
        cm = damping * cm + (1 - damping) * c_new
        if delta < tol:
            break
    num = rm * cm * ev1
    den = num + (1 - rm) * (1 - cm) * ev0
    return num / np.where(den == 0, 1, den), (rm, cm)


@dataclass
class DecimationStats:
    """Counters of :func:`decimate` runs (times in seconds); passed to several runs, the counts
    and times add up and ``max_known`` is the maximum.

    ``rounds``: decimation rounds; ``checks``/``check_s``: CDCL checks and their time;
    ``bp_s``: time in BP; ``flips``: culprit guesses replaced by their other value;
    ``backtracks``: rounds dropped (both values of a culprit refuted, or propagation
    contradicted the accepted guesses); ``guesses``: accepted guesses at the end;
    ``known``/``max_known``: cells known by propagation of the accepted guesses at the end / at
    most.
    """

    rounds: int = 0
    checks: int = 0
    check_s: float = 0.0
    bp_s: float = 0.0
    flips: int = 0
    backtracks: int = 0
    guesses: int = 0
    known: int = 0
    max_known: int = 0

    def add(self, other: DecimationStats) -> None:
        """Add the counters and times of ``other`` (another run) to these; ``guesses`` and
        ``known`` become ``other``'s (the run that ended last), ``max_known`` the maximum."""
        for k in ("rounds", "checks", "check_s", "bp_s", "flips", "backtracks"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.guesses, self.known = other.guesses, other.known
        self.max_known = max(self.max_known, other.max_known)


def decimate(
    puzzle: Puzzle,
    state: GridState,
    solver: Solver,
    *,
    frac: float = DECIMATION_FRAC,
    check_conflicts: int = CHECK_CONFLICTS,
    deadline: float | None = None,
    max_checks: int | None = None,
    stats: DecimationStats | None = None,
    seed: int | None = None,
) -> tuple[bool | None, list[int] | None]:
    """Search a first solution of ``puzzle`` by BP decimation checked by ``solver``.

    ``state``: a line-propagation fixpoint of ``puzzle``; ``solver``: a python-sat solver
    loaded with a CNF of the puzzle restricted to ``state`` whose variable ``r * width + c + 1``
    is cell (r, c) (e.g. :func:`nonolab.sat.remaining.remaining_encoding`); ``deadline``: a
    ``time.perf_counter()`` value; ``max_checks``: give up after this many CDCL checks;
    ``seed``: None guesses the round's most polarised cells (deterministic; equally polarised
    cells in row-major order), an integer guesses a random share of them instead
    (:data:`SEED_POOL`; the same seed gives the same run), so that restarts take different
    paths.

    Returns ``(True, model)`` when a check found a model (the caller decodes and verifies it;
    the solver still holds it), ``(False, None)`` when the solver refuted the CNF under no
    assumptions (no solution), ``(None, None)`` at the deadline or the check limit.
    """
    st = stats if stats is not None else DecimationStats()
    st.guesses, st.known = 0, state.n_known()  # the end-of-run values, reset for a reused stats
    w = puzzle.width
    automata = (line_automata(puzzle.rows), line_automata(puzzle.cols))
    base = state
    rounds: list[list[int]] = []
    model: list[int] = []

    def accepted() -> list[int]:
        return [lit for r in rounds for lit in r]

    def timed_out() -> bool:
        if max_checks is not None and st.checks >= max_checks:
            return True
        return deadline is not None and time.perf_counter() > deadline

    def check(guesses: list[int]) -> bool | None:
        solver.conf_budget(check_conflicts)
        t = time.perf_counter()
        res = solver.solve_limited(assumptions=accepted() + guesses)
        st.checks += 1
        st.check_s += time.perf_counter() - t
        if res:
            model.extend(solver.get_model())
        return res

    def bisect(guesses: list[int]) -> bool:
        """Repair a refuted set of ``guesses`` (refuted together with the accepted ones);
        return False when the CNF itself was refuted."""
        while not model and not timed_out():
            if len(guesses) == 1:
                if check([-guesses[0]]) is False:
                    if not rounds:
                        return False
                    guesses = rounds.pop()
                    st.backtracks += 1
                    continue
                rounds.append([-guesses[0]])
                st.flips += 1
                return True
            a, b = guesses[: len(guesses) // 2], guesses[len(guesses) // 2 :]
            if check(a) is False:
                guesses = a
                continue
            rounds.append(a)
            if model or check(b) is not False:
                rounds.append(b)
                return True
            guesses = b
        return True

    def state_of(lits: list[int]) -> GridState | None:
        s = base.copy()
        for lit in lits:
            r, c = divmod(abs(lit) - 1, w)
            cur = s.get(r, c)
            if cur == UNKNOWN:
                s.set(r, c, int(lit > 0))
            elif cur != int(lit > 0):
                return None
        try:
            return propagate(puzzle, s)
        except Contradiction:
            return None

    rng = None if seed is None else np.random.default_rng(seed)
    msgs: Messages | None = None
    cur = base
    while not model and not timed_out():
        st.rounds += 1
        known = np.array(cur.to_cells())
        t = time.perf_counter()
        bel, msgs = beliefs(automata, known, msgs)
        st.bp_s += time.perf_counter() - t
        pol = np.where(known < 0, np.abs(bel - 0.5), -1)
        n_unknown = int((known < 0).sum())
        k = max(1, int(frac * n_unknown))
        # stable: cells of equal polarisation in row-major order (numpy's default sort orders
        # ties by CPU and version, which would make the path machine-dependent)
        order = np.argsort(-pol, axis=None, kind="stable")
        if rng is None:
            picks = order[:k]
        else:  # k of the SEED_POOL * k most polarised, still in order of polarisation
            pool = min(n_unknown, int(np.ceil(SEED_POOL * k)))
            picks = order[np.sort(rng.choice(pool, size=min(k, pool), replace=False))]
        new: list[int] = []
        forced: list[tuple[int, int, int]] = []
        s = cur
        for flat in picks:
            r, c = divmod(int(flat), w)
            if s.get(r, c) != UNKNOWN:
                continue
            v = int(bel[r, c] > 0.5)
            ns = _assume(puzzle, s, r, c, v)
            if ns is not None:
                new.append((r * w + c + 1) * (1 if v else -1))
                s = ns
            elif not rounds and not new:
                forced.append((r, c, 1 - v))  # refuted at the base state: a proven fact
        if not new:
            if rounds:
                rounds.pop()
                st.backtracks += 1
            else:  # every candidate refuted by propagation at the base: strengthen the base
                b2 = base.copy()
                for r, c, v in forced:
                    b2.set(r, c, v)
                try:
                    base = propagate(puzzle, b2)
                except Contradiction:
                    return False, None
        elif check(new) is False:
            if not bisect(new):
                return False, None
        elif not model:
            rounds.append(new)
        nxt = state_of(accepted())
        while nxt is None:
            rounds.pop()
            st.backtracks += 1
            nxt = state_of(accepted())
        cur = nxt
        st.known = cur.n_known()
        st.max_known = max(st.max_known, st.known)
        st.guesses = len(accepted())
        if cur.is_complete() and not model:
            # propagation completed the grid: the solver should find the model at once; if it
            # refutes the accepted guesses instead, drop the last round
            res = check([])
            if res is False and not rounds:
                return False, None
            if not res and rounds:
                rounds.pop()
                st.backtracks += 1
    if model:
        return True, model
    return None, None


def schedule(
    slices: Sequence[tuple[float, int]] | None = None,
) -> Iterator[tuple[float, int, int | None]]:
    """Yield restart slices ``(frac, max_checks, seed)`` without end: ``slices`` (default
    :data:`SCHEDULE`) in order with seed None, then again with seed 1, then 2, and so on. The
    caller stops at its own time limit."""
    slices = SCHEDULE if slices is None else tuple(slices)
    if not slices or any(checks < 1 for _, checks in slices):
        raise ValueError("schedule: needs slices of at least one check each")
    seed: int | None = None
    while True:
        for frac, checks in slices:
            yield frac, checks, seed
        seed = 1 if seed is None else seed + 1
