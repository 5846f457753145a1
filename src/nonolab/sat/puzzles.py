"""Nonogram puzzles: clues, solutions and their canonical identity.

A puzzle is identified by a content hash of its clues (:func:`puzzle_hash`), never by a row
position or a study's numbering; a study id is kept as a ``label`` only.

Conventions used across nonolab:

* a clue is a tuple of positive block lengths; an empty line is the empty tuple ``()``
  (a written ``0`` clue is normalised to ``()``);
* ``rows`` are listed top to bottom (blocks left to right), ``cols`` left to right (blocks top
  to bottom);
* a grid is a tuple of tuples of 0/1 ints, ``grid[r][c]``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nonolab.core.strict import DuplicateKeyError, json_loads, normalise_id

Clue = tuple[int, ...]
Grid = tuple[tuple[int, ...], ...]

HASH_PREFIX_LEN = 12


class PuzzleError(ValueError):
    """A puzzle is malformed: clues that contradict a solution, impossible clues, bad shapes."""


def normalise_clue(clue: Iterable[int]) -> Clue:
    """Return ``clue`` as a tuple of positive ints, with ``[0]`` and ``[]`` both meaning empty.

    Raises :class:`PuzzleError` for negative, zero-inside or non-integer lengths.
    """
    out = []
    items = list(clue)
    for x in items:
        if (
            isinstance(x, bool)
            or not isinstance(x, int | float)
            or (isinstance(x, float) and not math.isfinite(x))
            or int(x) != x
        ):
            raise PuzzleError(f"clue {items!r}: block length {x!r} is not an integer")
        out.append(int(x))
    if out == [0]:
        return ()
    if any(x <= 0 for x in out):
        raise PuzzleError(f"clue {items!r}: block lengths must be positive (or a single 0)")
    return tuple(out)


def line_clue(line: Sequence[int]) -> Clue:
    """Return the clue (block lengths, in order) of one line of 0/1 cells."""
    blocks: list[int] = []
    run = 0
    for v in line:
        if v:
            run += 1
        elif run:
            blocks.append(run)
            run = 0
    if run:
        blocks.append(run)
    return tuple(blocks)


def clue_min_length(clue: Clue) -> int:
    """Return the fewest cells a line needs to hold ``clue`` (blocks plus one gap between each)."""
    return sum(clue) + max(len(clue) - 1, 0)


@dataclass(frozen=True)
class Puzzle:
    """A rectangular Nonogram: row and column clues, optionally a solution and a label.

    ``height`` = number of rows, ``width`` = number of columns.
    """

    rows: tuple[Clue, ...]
    cols: tuple[Clue, ...]
    solution: Grid | None = field(default=None, compare=False)
    label: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(normalise_clue(c) for c in self.rows))
        object.__setattr__(self, "cols", tuple(normalise_clue(c) for c in self.cols))
        if not self.rows or not self.cols:
            raise PuzzleError(f"puzzle {self.label!r}: needs at least one row and one column")
        for kind, clues, length in (
            ("row", self.rows, self.width),
            ("column", self.cols, self.height),
        ):
            for i, clue in enumerate(clues):
                if clue_min_length(clue) > length:
                    raise PuzzleError(
                        f"puzzle {self.label!r}: {kind} {i} clue {list(clue)} needs "
                        f"{clue_min_length(clue)} cells but the line has {length}"
                    )
        if sum(map(sum, self.rows)) != sum(map(sum, self.cols)):
            raise PuzzleError(
                f"puzzle {self.label!r}: row clues fill {sum(map(sum, self.rows))} cells but "
                f"column clues fill {sum(map(sum, self.cols))}; no grid satisfies both"
            )
        if self.solution is not None:
            sol = solution_grid(self.solution, self.label)
            object.__setattr__(self, "solution", sol)
            check_solution(self, sol)

    @property
    def height(self) -> int:
        """Number of rows."""
        return len(self.rows)

    @property
    def width(self) -> int:
        """Number of columns."""
        return len(self.cols)

    @property
    def hash(self) -> str:
        """Canonical content hash of the clues (hex sha256); see :func:`puzzle_hash`."""
        return puzzle_hash(self.rows, self.cols)

    @property
    def short_hash(self) -> str:
        """First 12 hex digits of :attr:`hash`, for display."""
        return self.hash[:HASH_PREFIX_LEN]

    @classmethod
    def from_grid(cls, grid: Sequence[Sequence[int]], label: str | None = None) -> Puzzle:
        """Return the puzzle whose clues are read off ``grid`` (which becomes its solution)."""
        g = tuple(tuple(int(bool(v)) for v in row) for row in grid)
        if not g or len({len(r) for r in g}) != 1:
            raise PuzzleError("grid must be a non-empty rectangle")
        rows = tuple(line_clue(r) for r in g)
        cols = tuple(line_clue(col) for col in zip(*g, strict=True))
        return cls(rows, cols, solution=g, label=label)

    def clues_dict(self) -> dict[str, list[list[int]]]:
        """Return the clues as ``{"rows": [...], "columns": [...]}`` lists (the study's layout)."""
        return {"rows": [list(c) for c in self.rows], "columns": [list(c) for c in self.cols]}


def solution_grid(grid: Sequence[Sequence[object]], label: str | None = None) -> Grid:
    """Return ``grid`` as a tuple of tuples of 0/1 ints.

    Raises :class:`PuzzleError` naming the puzzle and the first cell (row, column) whose value
    is not 0 or 1 (true/false count as 1/0; 2, 0.5, NaN, text or a nested list do not).
    """
    try:
        rows = [list(row) for row in grid]
    except TypeError:
        raise PuzzleError(f"puzzle {label!r}: solution is not a list of rows") from None
    for r, row in enumerate(rows):
        for c, v in enumerate(row):
            try:
                ok = not isinstance(v, str | bytes) and bool(v == 0 or v == 1)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise PuzzleError(f"puzzle {label!r}: solution cell ({r},{c}) is {v!r}, not 0 or 1")
    return tuple(tuple(int(v) for v in row) for row in rows)


def puzzle_hash(rows: Sequence[Sequence[int]], cols: Sequence[Sequence[int]]) -> str:
    """Return the canonical hash of a puzzle's clues: hex sha256 of a canonical JSON text.

    The text is ``{"cols":[[...],...],"rows":[[...],...]}`` with no spaces, empty lines as
    ``[]``. Independent of file format, label, solution and whitespace.
    """
    payload = {
        "cols": [list(normalise_clue(c)) for c in cols],
        "rows": [list(normalise_clue(c)) for c in rows],
    }
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def check_solution(puzzle: Puzzle, grid: Sequence[Sequence[int]]) -> None:
    """Raise :class:`PuzzleError` naming the first line whose clue ``grid`` does not satisfy."""
    if len(grid) != puzzle.height or any(len(r) != puzzle.width for r in grid):
        raise PuzzleError(
            f"puzzle {puzzle.label!r}: solution is not {puzzle.height}x{puzzle.width}"
        )
    for r, row in enumerate(grid):
        got = line_clue(row)
        if got != puzzle.rows[r]:
            raise PuzzleError(
                f"puzzle {puzzle.label!r}: row {r} clue {list(puzzle.rows[r])} does not match "
                f"its solution row (which reads {list(got)})"
            )
    for c in range(puzzle.width):
        got = line_clue([grid[r][c] for r in range(puzzle.height)])
        if got != puzzle.cols[c]:
            raise PuzzleError(
                f"puzzle {puzzle.label!r}: column {c} clue {list(puzzle.cols[c])} does not "
                f"match its solution column (which reads {list(got)})"
            )


def satisfies(puzzle: Puzzle, grid: Sequence[Sequence[int]]) -> bool:
    """Return True when ``grid`` satisfies every clue of ``puzzle``."""
    try:
        check_solution(puzzle, grid)
    except PuzzleError:
        return False
    return True


def grid_to_strings(grid: Sequence[Sequence[int]]) -> list[str]:
    """Return ``grid`` as row strings of ``#`` (filled) and ``.`` (empty)."""
    return ["".join("#" if v else "." for v in row) for row in grid]


def load_study_puzzles(path: str | Path) -> list[Puzzle]:
    """Return the puzzles of a study puzzle file (a JSON list of ``{id, solution, clues}``).

    Each puzzle is labelled with its study id (as a string). Anything unusable raises
    :class:`PuzzleError` naming the file (and the puzzle id): not JSON (also ``NaN``/``Infinity``
    constants and nesting too deep to parse), a clue that is not a finite whole number (``1e400``
    parses as infinity), a solution cell other than 0/1. The clues given in the file are
    checked against the solution; a mismatch raises :class:`PuzzleError` naming the file, the
    puzzle id and the line. A puzzle with no ``clues`` gets them from its solution; one with no
    ``solution`` is loaded from its clues alone.
    """
    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark is not content; NaN/Infinity are not JSON numbers
        data = json_loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise FileNotFoundError(f"puzzle file {path} does not exist") from None
    except DuplicateKeyError as exc:
        raise PuzzleError(f"{path}: {exc} (which value is meant is unknown)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise PuzzleError(f"{path}: not a JSON puzzle file ({exc})") from None
    except RecursionError:
        raise PuzzleError(f"{path}: not a JSON puzzle file (nested too deeply)") from None
    if isinstance(data, dict) and "puzzles" in data:
        data = data["puzzles"]
    if not isinstance(data, list):
        raise PuzzleError(f"{path}: expected a JSON list of puzzles")
    out: list[Puzzle] = []
    seen: dict[str, object] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise PuzzleError(f"{path}: entry {i} is not an object")
        raw_id = item.get("id", i)
        if isinstance(raw_id, bool) or not isinstance(raw_id, int | str) or raw_id == "":
            raise PuzzleError(
                f"{path}: entry {i}: puzzle id {json.dumps(raw_id)} is not an integer or a "
                "non-empty string"
            )
        label = normalise_id(raw_id) if isinstance(raw_id, str) else str(raw_id)
        if label in seen:
            other = seen[label]
            how = (
                f" (as {json.dumps(other)} and {json.dumps(raw_id)}: the same text in Unicode "
                'normal form C, or 3 and "3")'
                if other != raw_id
                else ""
            )
            raise PuzzleError(f"{path}: puzzle id {label} appears twice{how}")
        seen[label] = raw_id
        sol = item.get("solution")
        clues = item.get("clues")
        try:
            if clues is None:
                if sol is None:
                    raise PuzzleError("neither clues nor solution given")
                p = Puzzle.from_grid(solution_grid(sol, label), label=label)
            else:
                p = Puzzle(rows=clues["rows"], cols=clues["columns"], solution=sol, label=label)
        except (PuzzleError, KeyError, TypeError, ValueError, OverflowError) as exc:
            raise PuzzleError(f"{path}: puzzle id {label}: {exc}") from None
        out.append(p)
    return out
