"""The board of one study attempt, replayed from its logged events.

This is the single statement of what a logged event does to the board; the ingest (previous
cell values), the features (final boards) and the solve trajectories all replay through it, and
the study platform (:mod:`nonolab.collect.session`) plays every participant's board and decides
"solved" (:meth:`Board.mismatches`) with it.

Cell values: ``1`` filled, ``0`` empty, ``-1`` crossed (marked empty).

* ``move`` sets one cell to its logged value;
* ``drag`` sets every cell of its rectangle: ``flip`` -> 1, ``cross`` -> -1, ``cross_toggle``:
  -1 -> 0, anything else -> -1 (the ingest events table records each cell's resulting value);
* ``undo`` restores the cells of the last move, drag or reset (nothing when there is none);
* ``reset`` clears the board (undoable);
* ``hint`` does not change the board. The study platform's hint only names a cell that differs
  from the solution (the server picks it and logs it; the page highlights it); the participant
  then changes the cell with an ordinary, logged move. In the public logs the next move on a
  hinted cell changes its replayed value 636 times in 645; had the hint set the cell to its
  solution state, 411 of those moves would have set the value the cell already held, which a
  click never does (docs/decisions.md, "Ingest and logs").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

#: event types that change the board (a hint does not)
BOARD_EVENTS = ("move", "drag", "undo", "reset")


class Board:
    """One attempt's board with the platform's undo stack (a snapshot of the changed cells per
    move, drag or reset, with the name of the action that made it)."""

    def __init__(self, height: int, width: int):
        self.h, self.w = height, width
        self._cells: list[int] = [0] * (height * width)
        self._stack: list[list[tuple[int, int]]] = []
        self._labels: list[str] = []

    @classmethod
    def restore(cls, height: int, width: int, cells: list[int], stack: list[Any]) -> Board:
        """Return the board saved by :meth:`saved`: ``cells`` (row-major -1/0/1) and ``stack``
        (``[label, [[cell index, previous value], ...]]`` per undo step, oldest first)."""
        b = cls(height, width)
        b._cells = [int(v) for v in cells]
        b._stack = [[(int(i), int(v)) for i, v in snap] for _, snap in stack]
        b._labels = [str(label) for label, _ in stack]
        return b

    def saved(self) -> tuple[list[int], list[list[Any]]]:
        """Return ``(cells, stack)`` as plain JSON-able lists (see :meth:`restore`)."""
        stack = [
            [lab, [[i, v] for i, v in snap]]
            for lab, snap in zip(self._labels, self._stack, strict=True)
        ]
        return list(self._cells), stack

    def _push(self, label: str, snap: list[tuple[int, int]]) -> None:
        self._stack.append(snap)
        self._labels.append(label)

    @property
    def cells(self) -> np.ndarray:
        """Return a copy of the board as a ``(height, width)`` int8 array of -1/0/1."""
        return np.array(self._cells, dtype=np.int8).reshape(self.h, self.w)

    def move(self, r: int, c: int, value: int) -> int:
        """Set cell (r, c) to ``value`` (one undo step); return its previous value."""
        i = r * self.w + c
        old = self._cells[i]
        self._cells[i] = value
        self._push("move", [(i, old)])
        return old

    def drag(self, mode: str, cells: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Apply a drag in ``mode`` over ``cells`` (one undo step); return
        ``[(previous value, new value)]`` per cell."""
        out, snap = [], []
        board = self._cells
        for r, c in cells:
            i = r * self.w + c
            old = board[i]
            if mode == "flip":
                new = 1
            elif mode == "cross":
                new = -1
            else:
                new = 0 if old == -1 else -1
            board[i] = new
            snap.append((i, old))
            out.append((old, new))
        if snap:
            self._push("drag", snap)
        return out

    def set_cells(self, cells: Iterable[tuple[int, int, int]], label: str = "move") -> None:
        """Set each ``(r, c, value)`` of one logged move or drag (one undo step named
        ``label``; none for no cells)."""
        snap = []
        board = self._cells
        for r, c, v in cells:
            i = r * self.w + c
            snap.append((i, board[i]))
            board[i] = v
        if snap:
            self._push(label, snap)

    def hint(self, r: int, c: int) -> None:
        """A hint on cell (r, c): the board does not change (see the module docstring)."""

    def undo(self) -> tuple[str, int] | None:
        """Restore the cells of the last move, drag or reset; return ``(its label, cells
        restored)``, or None (nothing changed) when there is none."""
        if not self._stack:
            return None
        board = self._cells
        snap = self._stack.pop()
        for i, old in reversed(snap):
            board[i] = old
        return self._labels.pop(), len(snap)

    def reset(self) -> None:
        """Clear the board, keeping an undo snapshot of the filled and crossed cells."""
        self._push("reset", [(i, v) for i, v in enumerate(self._cells) if v != 0])
        self._cells = [0] * (self.h * self.w)

    def mismatches(self, solution: Any) -> list[tuple[int, int]]:
        """Return the cells ``(r, c)``, row-major, whose filled state differs from
        ``solution`` (a 0/1 grid of the board's shape; a crossed cell counts as empty). The
        attempt is solved when there are none: the platform's check and the analysis agree
        because both ask this board."""
        sol = np.asarray(solution).ravel().tolist()
        w = self.w
        return [
            divmod(i, w)
            for i, (v, x) in enumerate(zip(self._cells, sol, strict=True))
            if (1 if v == 1 else 0) != x
        ]

    def filled_correct(self, solution: np.ndarray) -> int:
        """Return the number of filled cells that are filled in ``solution`` (a 0/1 array of
        the board's shape)."""
        sol = np.asarray(solution).ravel()
        return sum(1 for v, s in zip(self._cells, sol.tolist(), strict=True) if v == 1 and s == 1)


def replay_attempts(
    events: pd.DataFrame, shapes: Mapping[tuple[str, int], tuple[int, int]]
) -> Iterator[tuple[tuple[str, int], int, Board]]:
    """Replay every attempt's board from ingest event rows.

    ``events`` has ``participant_id``, ``order``, ``line_no``, ``type``, ``r``, ``c`` and
    ``value`` (a move's or drag cell's resulting value), sorted so that each attempt's rows are
    contiguous and in log order (a drag's cells are consecutive rows of one line). ``shapes``
    maps ``(participant_id, order)`` to the puzzle's ``(height, width)``.

    Yields ``(attempt key, position of the line's first row in events, board)`` after each
    line of a :data:`BOARD_EVENTS` type; other rows (hints included) leave the board as it is.
    The board object is the attempt's live board: copy what must outlive the next step.
    """
    n = len(events)
    if not n:
        return
    pids = events["participant_id"].tolist()
    orders = events["order"].tolist()
    lines = events["line_no"].tolist()
    types = events["type"].tolist()
    rs = events["r"].tolist()
    cs = events["c"].tolist()
    vs = events["value"].tolist()
    key = None
    board = Board(0, 0)
    i = 0
    while i < n:
        k = (pids[i], orders[i])
        if k != key:
            key = k
            board = Board(*shapes[k])
        typ, line = types[i], lines[i]
        j = i + 1
        while j < n and lines[j] == line and pids[j] == k[0] and orders[j] == k[1]:
            j += 1
        if typ == "move" or typ == "drag":
            board.set_cells(
                (
                    (int(rs[m]), int(cs[m]), int(vs[m]))
                    for m in range(i, j)
                    if types[m] == "move" or types[m] == "drag"
                ),
                typ,
            )
        elif typ == "undo":
            board.undo()
        elif typ == "reset":
            board.reset()
        if typ in BOARD_EVENTS:
            yield key, i, board
        i = j


def final_boards(
    events: pd.DataFrame, shapes: Mapping[tuple[str, int], tuple[int, int]]
) -> dict[tuple[str, int], np.ndarray]:
    """Return ``{(participant_id, order): final board}`` (int8 arrays of -1/0/1) of the attempts
    with at least one board event, replayed by :func:`replay_attempts` (same ``events`` and
    ``shapes``)."""
    last: dict[tuple[str, int], Board] = {}
    for key, _, board in replay_attempts(events, shapes):
        last[key] = board
    return {k: b.cells for k, b in last.items()}
