"""One attempt's interaction events: how a simulated participant fills a puzzle.

:func:`simulate_attempt` plans the cells line by line (random lines, cells in line order, some
empty cells crossed), then places them one move or one drag gesture at a time, with wrong fills
(undone at once or corrected later), hints, check presses, a possible reset and, for a skipped
attempt, an early stop. The events carry no times yet (:mod:`nonolab.sim.events` adds them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nonolab.sat.puzzles import Puzzle
from nonolab.sim.model import SimParams


def _mismatches(board: np.ndarray, solution: np.ndarray) -> list[list[int]]:
    rows, cols = np.nonzero((board == 1) != (solution == 1))
    return [[int(r), int(c)] for r, c in zip(rows, cols, strict=True)]


@dataclass
class Attempt:
    """One simulated attempt: its events (without times yet) and outcome."""

    puzzle_id: int
    events: list[dict[str, Any]]  # interaction events, in order, without "t"
    solved: bool
    skipped: bool
    n_errors: int
    n_hints: int


def _line_plan(
    targets: dict[tuple[int, int], int], h: int, w: int, rng: np.random.Generator
) -> list[tuple[int, int, int]]:
    """Order ``targets`` (cell -> value) line by line: random lines, cells in line order.

    The lines (rows ``0..h-1``, then columns) are taken in a random order; each cell goes with
    the first of its row and column in that order, at its place along that line.
    """
    order = rng.permutation(h + w)
    if not targets:
        return []
    pos = np.empty(h + w, dtype=np.intp)
    pos[order] = np.arange(h + w)
    rc = np.array(list(targets), dtype=np.intp)
    values = list(targets.values())
    at_row, at_col = pos[rc[:, 0]], pos[h + rc[:, 1]]
    by_row = at_row < at_col
    line = np.where(by_row, at_row, at_col)
    along = np.where(by_row, rc[:, 1], rc[:, 0])
    idx = np.lexsort((along, line)).tolist()
    cells = rc.tolist()
    return [(cells[i][0], cells[i][1], values[i]) for i in idx]


@dataclass
class _Play:
    """The state of one attempt while its events are drawn (board, plan, pending corrections).

    ``plan``: the cells still to fill or cross, in order ``(r, c, value)``; ``pending``: wrong
    fills to correct later, ``(due step, r, c)``; ``step``: cells placed so far.
    """

    sol: np.ndarray
    targets: dict[tuple[int, int], int]
    plan: list[tuple[int, int, int]]
    rng: np.random.Generator
    board: np.ndarray = field(init=False)
    events: list[dict[str, Any]] = field(default_factory=list)
    pending: list[tuple[int, int, int]] = field(default_factory=list)
    step: int = 0
    n_errors: int = 0
    n_hints: int = 0

    def __post_init__(self) -> None:
        self.board = np.zeros_like(self.sol)

    def move(self, r: int, c: int, v: int) -> None:
        """Set cell ``(r, c)`` to ``v`` (1 filled, -1 crossed, 0 empty) and log the move."""
        self.board[r, c] = v
        self.events.append({"type": "move", "r": r, "c": c, "value": v})

    def undo_last(self, r: int, c: int) -> None:
        """Clear cell ``(r, c)`` and log an undo of the one-cell move that set it."""
        self.board[r, c] = 0
        self.events.append({"type": "undo", "label": "cell", "diffs_len": 1})

    def correct(self, r: int, c: int) -> None:
        """Clear or cross ``(r, c)`` if it is still wrongly filled."""
        if self.board[r, c] == 1 and self.sol[r, c] == 0:
            self.move(r, c, -1 if self.rng.random() < 0.6 else 0)

    def reset(self) -> None:
        """Clear the board, drop pending corrections and re-plan every placed or planned cell."""
        self.events.append({"type": "reset"})
        board = self.board
        placed = {(r, c): int(board[r, c]) for r, c in zip(*np.nonzero(board), strict=True)}
        board[:] = 0
        self.pending.clear()
        redo = {cell: self.targets[cell] for cell in placed if cell in self.targets}
        rest = {(r, c): v for r, c, v in self.plan}
        h, w = self.sol.shape
        self.plan = _line_plan({**redo, **rest}, h, w, self.rng)

    def due_corrections(self) -> None:
        """Make the pending corrections that are due at this step."""
        for due in [p for p in self.pending if p[0] <= self.step]:
            self.pending.remove(due)
            self.correct(due[1], due[2])

    def hints(self, hint_at: list[int]) -> None:
        """Take the hints due at this step (``hint_at``: ascending steps, consumed)."""
        while hint_at and hint_at[0] <= self.step:
            hint_at.pop(0)
            r, c, v = self.plan.pop(int(self.rng.integers(len(self.plan))))
            self.events.append({"type": "hint", "r": r, "c": c})
            self.move(r, c, v)
            self.n_hints += 1
            self.step += 1
            if not self.plan:
                break

    def checks(self, check_at: list[int], puzzle_id: int) -> None:
        """Press check at the due steps; a check with nothing wrong solves the puzzle (the plan
        is cleared)."""
        while check_at and check_at[0] <= self.step:
            check_at.pop(0)
            mm = _mismatches(self.board, self.sol)
            if not mm:  # every filled cell already right: this check solves the puzzle
                self.plan.clear()
                break
            self.events.append(
                {"type": "check_bank", "puzzle_id": puzzle_id, "solved": False, "mismatches": mm}
            )

    def wrong_fill(self) -> None:
        """Fill a random wrong empty cell (if any), then undo it at once or later (drawn with
        the error probability before each gesture)."""
        empties = np.argwhere((self.sol == 0) & (self.board == 0))
        if not len(empties):
            return
        r, c = (int(x) for x in empties[int(self.rng.integers(len(empties)))])
        self.move(r, c, 1)
        self.n_errors += 1
        if self.rng.random() < 0.5:
            self.undo_last(r, c)
        else:
            self.pending.append((self.step + int(self.rng.integers(1, 15)), r, c))

    def _drag_run(self, r: int, c: int, v: int) -> list[tuple[int, int]]:
        """Return the straight run of empty same-valued planned cells from ``(r, c)`` (up to
        6 cells, taken off the plan)."""
        run = [(r, c)]
        step_rc: tuple[int, int] | None = None
        while self.plan and len(run) < 6:
            r2, c2, v2 = self.plan[0]
            d = (r2 - run[-1][0], c2 - run[-1][1])
            if v2 != v or d not in ((0, 1), (1, 0)) or self.board[r2, c2] != 0:
                break
            if step_rc is not None and d != step_rc:
                break
            step_rc = d
            run.append((r2, c2))
            self.plan.pop(0)
        return run

    def next_gesture(self, drag_ui: float) -> None:
        """Place the next planned cell: one move, or (drag interface) maybe one drag gesture
        over a run of same-valued cells of its line."""
        r, c, v = self.plan.pop(0)
        run = [(r, c)]
        if drag_ui and self.rng.random() < 0.35 and self.board[r, c] == 0:
            run = self._drag_run(r, c, v)
        if len(run) > 1:  # (r, c) is empty: a run starts only there
            for rr, cc in run:
                self.board[rr, cc] = v
            a, b = run[0], run[-1]
            self.events.append(
                {
                    "type": "drag",
                    "mode": "flip" if v == 1 else "cross_toggle",
                    "start": {"r": a[0], "c": a[1]},
                    "end": {"r": b[0], "c": b[1]},
                    "normalized_start": {"r": a[0], "c": a[1]},
                    "normalized_end": {"r": b[0], "c": b[1]},
                    "changed_cells": len(run),
                }
            )
            self.step += len(run)
            return
        self.move(r, c, v)
        self.step += 1
        if self.rng.random() < 0.01:  # second thoughts: undo a correct move and redo it
            self.undo_last(r, c)
            self.move(r, c, v)

    def finish(self, puzzle_id: int) -> bool:
        """Make the remaining corrections, maybe press an empty hint, and check; return
        whether the board is solved (the final ``check_bank`` says so)."""
        for _, r, c in self.pending:
            self.correct(r, c)
        self.pending.clear()
        if self.rng.random() < 0.05:
            self.events.append({"type": "hint_none"})
        mm = _mismatches(self.board, self.sol)
        self.events.append(
            {"type": "check_bank", "puzzle_id": puzzle_id, "solved": not mm, "mismatches": mm}
        )
        return not mm


def simulate_attempt(
    puzzle: Puzzle,
    puzzle_id: int,
    severity: float,
    style: Mapping[str, float],
    params: SimParams,
    rng: np.random.Generator,
) -> Attempt:
    """Return one attempt's interaction events (no times) for a participant ``style``.

    ``severity``: standardised difficulty minus expertise (raises errors, hints, skips).
    ``style``: ``cross_frac`` (share of empty cells crossed), ``hint_bias`` (log-rate shift),
    ``drag_ui`` (1 = the interface logs drags as ``drag`` events). A skipped attempt stops
    after a random share of its cells; otherwise it ends with a check (solved when right).
    """
    assert puzzle.solution is not None
    sol = np.array(puzzle.solution)
    h, w = sol.shape
    k = params.behaviour_difficulty_effect
    p_err = 1 / (1 + math.exp(-(params.error_logit + k * severity)))
    n_hints = int(rng.poisson(math.exp(params.hint_log_rate + k * severity + style["hint_bias"])))
    skipped = bool(rng.random() < 1 / (1 + math.exp(-(params.skip_logit + k * severity))))
    stop_frac = float(rng.uniform(0.15, 0.9)) if skipped else 2.0
    reset_at = float(rng.uniform(0.05, 0.6)) if rng.random() < params.reset_prob else None
    n_checks = int(rng.poisson(0.25))

    targets = {(r, c): 1 for r, c in np.argwhere(sol == 1).tolist()}
    empty = np.argwhere(sol == 0).tolist()
    # one uniform per empty cell, in row-major order (the same draws as one call per cell)
    for (r, c), u in zip(empty, rng.random(len(empty)).tolist(), strict=True):
        if u < style["cross_frac"]:
            targets[(r, c)] = -1
    play = _Play(sol, targets, _line_plan(targets, h, w, rng), rng)
    total = len(play.plan)
    hint_at = sorted(int(x) for x in rng.integers(0, total, size=min(n_hints, total)))
    check_at = sorted(int(x) for x in rng.integers(1, total, size=n_checks))
    stop_at = stop_frac * total
    reset_step = reset_at * total if reset_at is not None else math.inf
    drag_ui = style["drag_ui"]
    while play.plan:
        if play.step >= stop_at:
            break
        if play.step >= reset_step:
            reset_step = math.inf  # one reset at most
            play.reset()
            continue
        # the steps below are the _Play methods, each entered only when it has work to do
        if play.pending:
            play.due_corrections()
        if hint_at and hint_at[0] <= play.step:
            play.hints(hint_at)
        if play.plan and check_at and check_at[0] <= play.step:
            play.checks(check_at, puzzle_id)
        if not play.plan:
            break
        if rng.random() < p_err:
            play.wrong_fill()
        play.next_gesture(drag_ui)
    solved = False
    if not play.plan and not (stop_frac <= 1.0 and play.step >= stop_frac * total):
        solved = play.finish(puzzle_id)
    return Attempt(puzzle_id, play.events, solved, not solved, play.n_errors, play.n_hints)
