"""Density-0.5 frontier experiment: belief-propagation decimation checked by CDCL.

Reruns the experiment of docs/decisions.md ("Density 0.5, fourth session") on the solve
benchmark's random 112x112 board (seed 20260301 by default):

1. Belief propagation (sum-product) between rows and columns: each line's cavity messages come
   from forward-backward over the line's automaton, all rows (then all columns) at once in numpy.
2. Decimation: each round guesses the most polarised ``--frac`` of the unknown cells (BP's likelier
   value), with line propagation after each guess.
3. Every round is checked by one incremental CaDiCaL 1.9.5 with all accepted guesses plus the
   round's as assumptions and a ``--budget`` conflict limit. A model ends the run (the grid is
   verified against every clue). A refuted round is bisected down to one culprit guess, whose
   other value is accepted; when both values of the culprit are refuted, the previous round is
   bisected instead.

Not part of ``nonolab solve``: one board solved once, kept so the claim can be rerun. Writes
``results/bench/bp_frontier.json``. Usage: ``python benchmarks/bp_frontier.py [--budget 5000]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solve_bench import random_suite  # noqa: E402

from nonolab.fastsolve import _new_solver, _verified, remaining_encoding  # noqa: E402
from nonolab.linesolver import UNKNOWN, Contradiction, _assume, propagate  # noqa: E402


def line_tables(clues: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    """Return padded automaton tables (lines x states): has_one, loop0, end, accept (0/1)."""
    m = max(sum(c) + len(c) + 1 for c in clues)
    has_one, loop0, end, acc = (np.zeros((len(clues), m)) for _ in range(4))
    for i, clue in enumerate(clues):
        loop0[i, 0] = 1  # start state: zeros before the first block
        if clue:
            has_one[i, 0] = 1
        else:
            acc[i, 0] = 1
        q = 1
        for k, b in enumerate(clue):
            for j in range(1, b + 1):  # j-th cell of block k
                if j < b:
                    has_one[i, q] = 1
                else:
                    end[i, q] = 1
                    acc[i, q] = k == len(clue) - 1
                q += 1
            loop0[i, q] = 1  # the gap after block k (or the trailing zeros)
            if k < len(clue) - 1:
                has_one[i, q] = 1
            else:
                acc[i, q] = 1
            q += 1
    return has_one, loop0, end, acc


def _shift(a: np.ndarray, by: int) -> np.ndarray:
    out = np.zeros_like(a)
    if by > 0:
        out[:, by:] = a[:, :-by]
    else:
        out[:, :by] = a[:, -by:]
    return out


def cavity_messages(tab: tuple[np.ndarray, ...], w1: np.ndarray, w0: np.ndarray) -> np.ndarray:
    """Return each line's message P(cell filled) to each cell, excluding that cell's own weight.

    ``w1``/``w0`` (lines x n): incoming weights of filled/empty per cell.
    """
    has_one, loop0, end, acc = tab
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


def beliefs(tabs, known: np.ndarray, init, iters: int = 30, damp: float = 0.5):
    """Return (P(filled) per cell, messages) after at most ``iters`` damped BP sweeps.

    ``known``: -1/0/1 per cell; ``init``: messages of a previous call (warm start) or None.
    """
    rows_t, cols_t = tabs
    rm, cm = init if init is not None else (np.full(known.shape, 0.5),) * 2
    ev1 = np.where(known == 0, 0.0, 1.0)
    ev0 = np.where(known == 1, 0.0, 1.0)
    for _ in range(iters):
        r_new = cavity_messages(rows_t, cm * ev1, (1 - cm) * ev0)
        c_new = cavity_messages(cols_t, (r_new * ev1).T, ((1 - r_new) * ev0).T).T
        delta = max(np.abs(r_new - rm).max(), np.abs(c_new - cm).max())
        rm = damp * rm + (1 - damp) * r_new
        cm = damp * cm + (1 - damp) * c_new
        if delta < 1e-4:
            break
    num = rm * cm * ev1
    den = num + (1 - rm) * (1 - cm) * ev0
    return num / np.where(den == 0, 1, den), (rm, cm)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20260301)
    ap.add_argument("--density", type=float, default=0.5)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--frac", type=float, default=0.02, help="share of unknown cells per round")
    ap.add_argument("--budget", type=int, default=5000, help="conflicts per CaDiCaL check")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds")
    ap.add_argument("--out", default="results/bench/bp_frontier.json")
    args = ap.parse_args()
    puzzle, _meta = random_suite([args.density], 1, args.size, args.seed)[0]
    w = puzzle.width
    t0 = time.perf_counter()
    tabs = (
        line_tables([tuple(c) for c in puzzle.rows]),
        line_tables([tuple(c) for c in puzzle.cols]),
    )
    st0 = propagate(puzzle)
    enc = remaining_encoding(puzzle, st0)
    solver = _new_solver("cadical195", enc.clauses)
    rounds: list[list[int]] = []
    stats = {"checks": 0, "check_s": 0.0, "flips": 0}
    found: list = []  # the verified grid, once a check finds a model

    def accepted() -> list[int]:
        return [lit for r in rounds for lit in r]

    def check(guesses: list[int]) -> bool | None:
        solver.conf_budget(args.budget)
        t = time.perf_counter()
        res = solver.solve_limited(assumptions=accepted() + guesses)
        stats["checks"] += 1
        stats["check_s"] += time.perf_counter() - t
        if res:
            found.append(_verified(puzzle, enc.decode(solver.get_model())))  # raises if wrong
        return res

    def bisect(guesses: list[int]) -> None:
        while True:
            if found or time.perf_counter() - t0 > args.timeout:
                return
            if len(guesses) == 1:
                if check([-guesses[0]]) is False:  # both values refuted: history is wrong
                    if not rounds:
                        raise SystemExit("refuted without guesses: the puzzle is unsat")
                    guesses = rounds.pop()
                    continue
                rounds.append([-guesses[0]])
                stats["flips"] += 1
                return
            a, b = guesses[: len(guesses) // 2], guesses[len(guesses) // 2 :]
            if check(a) is False:
                guesses = a
                continue
            rounds.append(a)
            if found or check(b) is not False:
                rounds.append(b)
                return
            guesses = b

    def state_of(lits: list[int]):
        """Return the propagation of ``st0`` with every literal set, or None (contradiction)."""
        s = st0.copy()
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

    msgs = None
    state = st0
    max_known = 0
    while not found and time.perf_counter() - t0 < args.timeout:
        known = np.array(state.to_cells())
        bel, msgs = beliefs(tabs, known, msgs)
        pol = np.where(known < 0, np.abs(bel - 0.5), -1)
        k = max(1, int(args.frac * (known < 0).sum()))
        new: list[int] = []
        s = state
        for flat in np.argsort(-pol, axis=None)[:k]:
            r, c = divmod(int(flat), w)
            if s.get(r, c) != UNKNOWN:
                continue
            v = int(bel[r, c] > 0.5)
            ns = _assume(puzzle, s, r, c, v)
            if ns is not None:
                new.append((r * w + c + 1) * (1 if v else -1))
                s = ns
        if not new:
            rounds.pop()
        elif check(new) is False:
            bisect(new)
        elif not found:
            rounds.append(new)
        nxt = state_of(accepted())
        while nxt is None:
            rounds.pop()
            nxt = state_of(accepted())
        state = nxt
        max_known = max(max_known, state.n_known())
        print(
            f"known {state.n_known()} guesses {len(accepted())} flips {stats['flips']} "
            f"checks {stats['checks']} {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
    out = {
        "puzzle": {"size": args.size, "density": args.density, "seed": args.seed},
        "params": {"frac": args.frac, "budget": args.budget, "timeout_s": args.timeout},
        "status": "solved (grid verified against every clue)" if found else "unknown",
        "time_s": round(time.perf_counter() - t0, 1),
        "guesses_at_end": len(accepted()),
        "known_at_end": state.n_known(),
        "max_known": max_known,
        "checks": stats["checks"],
        "check_s": round(stats["check_s"], 1),
        "flips": stats["flips"],
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
