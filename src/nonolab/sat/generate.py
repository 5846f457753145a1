"""Random Nonograms with a unique solution (METHODS.md section 1).

* :func:`random_grid`: a grid with exactly ``filled`` filled cells, chosen uniformly.
* :func:`random_unique_puzzle`: random grids until one whose clues have a unique solution
  (proven with a SAT solver and a blocking clause, :func:`nonolab.sat.solvers.uniqueness`).

The paper's selection from a pool (a table) is :func:`nonolab.measure.tables.select_study_puzzles`.

Every random step takes a ``numpy.random.Generator``, so one seed reproduces everything.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Container, Iterator
from typing import Any

import numpy as np

from nonolab.sat.puzzles import Grid, Puzzle
from nonolab.sat.solvers import uniqueness


class GenerationError(RuntimeError):
    """No puzzle with the requested properties was found within the attempt limit."""


class GenerationTimeout(GenerationError):
    """No puzzle with the requested properties was found before the deadline."""


def random_grid(height: int, width: int, filled: int, rng: np.random.Generator) -> Grid:
    """Return a ``height`` x ``width`` 0/1 grid with exactly ``filled`` filled cells.

    The filled cells are a uniform random subset (``rng.choice`` without replacement).
    Raises ``ValueError`` for a non-positive size or ``filled`` outside ``0..height*width``.
    """
    if height < 1 or width < 1:
        raise ValueError(f"grid size must be positive, got {height}x{width}")
    n = height * width
    if not 0 <= filled <= n:
        raise ValueError(f"filled={filled} cells do not fit a {height}x{width} grid")
    flat = np.zeros(n, dtype=np.int8)
    flat[rng.choice(n, size=filled, replace=False)] = 1
    return tuple(tuple(int(v) for v in flat[r * width : (r + 1) * width]) for r in range(height))


def random_unique_puzzle(
    height: int,
    width: int,
    filled: int,
    rng: np.random.Generator,
    *,
    encoding: str = "block_start",
    solver: str = "minisat22",
    max_attempts: int = 10_000,
    conf_budget: int | None = None,
    label: str | None = None,
    exclude: Container[str] = (),
    deadline: float | None = None,
    on_attempt: Callable[[], None] | None = None,
) -> Puzzle:
    """Return a puzzle read off a random grid (:func:`random_grid`) whose solution is unique.

    Grids are drawn from ``rng`` until :func:`nonolab.sat.solvers.uniqueness` answers ``unique``
    (an ``unknown`` answer under ``conf_budget`` counts as rejected). The grid is the puzzle's
    solution. A puzzle whose hash is in ``exclude`` is rejected too (without a SAT call).
    ``on_attempt`` is called after every grid tried. Raises :class:`GenerationError` after
    ``max_attempts`` rejected grids, and :class:`GenerationTimeout` when ``time.monotonic()``
    passes ``deadline`` (checked before every grid).
    """
    for _ in range(max_attempts):
        if deadline is not None and time.monotonic() >= deadline:
            raise GenerationTimeout(f"no unique {height}x{width} puzzle found in time")
        grid = random_grid(height, width, filled, rng)
        puzzle = Puzzle.from_grid(grid, label=label)
        if exclude and puzzle.hash in exclude:
            if on_attempt is not None:
                on_attempt()
            continue
        res = uniqueness(puzzle, encoding, solver, conf_budget=conf_budget)
        if on_attempt is not None:
            on_attempt()
        if res.status == "unique":
            return puzzle
    raise GenerationError(
        f"no unique {height}x{width} puzzle with {filled} filled cells in {max_attempts} attempts"
    )


def random_unique_puzzles(
    count: int,
    height: int,
    width: int,
    filled: int,
    rng: np.random.Generator,
    *,
    distinct: bool = False,
    timeout_s: float | None = None,
    **kwargs: Any,
) -> Iterator[Puzzle]:
    """Yield ``count`` puzzles from :func:`random_unique_puzzle`, labelled ``"0"``, ``"1"``, ...

    ``distinct``: no puzzle twice (a repeat counts as a rejected grid); raises
    :class:`GenerationError` at once when fewer than ``count`` grids of that size and number of
    filled cells exist. ``timeout_s``: wall seconds for all of them, after which
    :class:`GenerationTimeout` says how many were found. Other keywords go to
    :func:`random_unique_puzzle`.
    """
    if distinct:
        n_grids = math.comb(height * width, filled) if 0 <= filled <= height * width else 0
        if n_grids < count:
            raise GenerationError(
                f"only {n_grids} distinct {height}x{width} grid{'s' * (n_grids != 1)} with "
                f"{filled} filled cells exist, fewer than the {count} puzzles asked for"
            )
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    seen: set[str] = set()
    for i in range(count):
        try:
            p = random_unique_puzzle(
                height,
                width,
                filled,
                rng,
                label=str(i),
                exclude=seen,
                deadline=deadline,
                **kwargs,
            )
        except GenerationTimeout:
            raise GenerationTimeout(
                f"timed out after {timeout_s:g} s with {i} of {count} unique {height}x{width} "
                f"puzzles ({filled} filled cells)"
            ) from None
        if distinct:
            seen.add(p.hash)
        yield p
