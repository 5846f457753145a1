"""Random Nonograms with a unique solution (METHODS.md section 1).

* :func:`random_grid`: a grid with exactly ``filled`` filled cells, chosen uniformly.
* :func:`random_unique_puzzle`: random grids until one whose clues have a unique solution
  (proven with a SAT solver and a blocking clause, :func:`nonolab.sat.solvers.uniqueness`).

The paper's selection from a pool (a table) is :func:`nonolab.measure.tables.select_study_puzzles`.

Every random step takes a ``numpy.random.Generator``, so one seed reproduces everything.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from nonolab.sat.puzzles import Grid, Puzzle
from nonolab.sat.solvers import uniqueness


class GenerationError(RuntimeError):
    """No puzzle with the requested properties was found within the attempt limit."""


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
) -> Puzzle:
    """Return a puzzle read off a random grid (:func:`random_grid`) whose solution is unique.

    Grids are drawn from ``rng`` until :func:`nonolab.sat.solvers.uniqueness` answers ``unique``
    (an ``unknown`` answer under ``conf_budget`` counts as rejected). The grid is the puzzle's
    solution. Raises :class:`GenerationError` after ``max_attempts`` rejected grids.
    """
    for _ in range(max_attempts):
        grid = random_grid(height, width, filled, rng)
        puzzle = Puzzle.from_grid(grid, label=label)
        res = uniqueness(puzzle, encoding, solver, conf_budget=conf_budget)
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
    **kwargs,
) -> Iterator[Puzzle]:
    """Yield ``count`` puzzles from :func:`random_unique_puzzle`, labelled ``"0"``, ``"1"``, ..."""
    for i in range(count):
        yield random_unique_puzzle(height, width, filled, rng, label=str(i), **kwargs)
