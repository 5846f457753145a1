"""Random Nonograms and the paper's puzzle selection (METHODS.md section 1).

* :func:`random_grid`: a grid with exactly ``filled`` filled cells, chosen uniformly.
* :func:`random_unique_puzzle`: random grids until one whose clues have a unique solution
  (proven with a SAT solver and a blocking clause, :func:`nonolab.sat.solvers.uniqueness`).
* :func:`select_study_puzzles`: drop the top fraction of a pool by a metric (conflicts), then
  take the lowest, the nearest-median and the highest puzzles.

Every random step takes a ``numpy.random.Generator``, so one seed reproduces everything.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

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


SELECTION_GROUPS = ("lowest", "median", "highest")


def select_study_puzzles(
    stats_df: pd.DataFrame,
    n_drop_frac: float = 0.05,
    *,
    metric: str = "conflicts",
    n_low: int = 2,
    n_median: int = 2,
    n_high: int = 2,
    tie_break: str = "order",
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Return the paper's selection from a pool: one row per selected puzzle.

    ``stats_df`` has one row per pool puzzle with a numeric ``metric`` column (one solver and
    encoding). Steps: drop the ``floor(n * n_drop_frac)`` rows with the highest ``metric``;
    from the rest take the ``n_low`` lowest, then the ``n_median`` nearest the median of the
    kept rows (absolute distance), then the ``n_high`` highest, never the same row twice.

    Ties are broken by row order (``tie_break="order"``: earlier rows first, as pandas
    ``nsmallest``/``nlargest`` with ``keep="first"``) or by a random permutation drawn from
    ``rng`` (``tie_break="random"``). The result keeps the input columns and adds
    ``selection`` (lowest/median/highest), ``selection_rank`` (0-based within the group) and
    ``pool_median`` (the median of ``metric`` after the drop), in selection order.
    """
    if metric not in stats_df.columns:
        raise ValueError(f"selection metric {metric!r} is not a column of the pool table")
    if not 0 <= n_drop_frac < 1:
        raise ValueError(f"n_drop_frac must be in [0, 1), got {n_drop_frac}")
    if tie_break not in ("order", "random"):
        raise ValueError(f"tie_break must be 'order' or 'random', got {tie_break!r}")
    df = stats_df.reset_index(drop=True)
    values = pd.to_numeric(df[metric], errors="raise")
    if values.isna().any():
        raise ValueError(f"selection metric {metric!r} has missing values")
    n = len(df)
    # tie-break key: position in the (optionally shuffled) order
    if tie_break == "random":
        if rng is None:
            raise ValueError("tie_break='random' needs rng")
        order = pd.Series(rng.permutation(n), index=df.index)
    else:
        order = pd.Series(np.arange(n), index=df.index)
    n_drop = int(np.floor(n * n_drop_frac))
    by_desc = sorted(df.index, key=lambda i: (-values[i], order[i]))
    kept = sorted(set(df.index) - set(by_desc[:n_drop]))
    if len(kept) < n_low + n_median + n_high:
        raise ValueError(
            f"pool of {n} puzzles ({len(kept)} after the drop) is too small to select "
            f"{n_low}+{n_median}+{n_high}"
        )
    median = float(np.median(values[kept]))
    chosen: list[tuple[int, str, int]] = []
    taken: set[int] = set()

    def take(keyfn, k: int, group: str) -> None:
        cands = sorted((i for i in kept if i not in taken), key=keyfn)
        for rank, i in enumerate(cands[:k]):
            chosen.append((i, group, rank))
            taken.add(i)

    take(lambda i: (values[i], order[i]), n_low, "lowest")
    take(lambda i: (abs(values[i] - median), order[i]), n_median, "median")
    take(lambda i: (-values[i], order[i]), n_high, "highest")
    out = df.loc[[i for i, _, _ in chosen]].copy()
    out["selection"] = [g for _, g, _ in chosen]
    out["selection_rank"] = [r for _, _, r in chosen]
    out["pool_median"] = median
    return out.reset_index(drop=True)
