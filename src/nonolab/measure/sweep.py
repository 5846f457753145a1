"""Sharded puzzle-pool sweeps: generate a pool of random unique puzzles, compute solver metrics
shard by shard, merge the shards, and apply the paper's selection (METHODS 1).

Design (see docs/decisions.md, "Scale-out"):

* Pool entry ``i`` (``pool_index``, 0-based) is generated from its own random stream,
  ``numpy.random.default_rng(SeedSequence(seed).spawn(size)[i])`` (computed directly as
  ``SeedSequence(seed, spawn_key=(i,))``). The pool therefore depends only on ``(seed, height,
  width, filled, size)`` and never on the number of shards: shard ``k`` of ``K`` computes the
  contiguous index range :func:`shard_bounds` gives it, and the merged pool is identical for
  every ``K``. Every shard job is an independent process; nothing is shared but files.
* Solver metrics are deterministic; wall times are not, so they are split off into separate
  timing tables (:func:`split_timing`) that the determinism checks skip.

Tables (all keyed by ``pool_index`` and ``puzzle_hash``):

* pool: ``pool_index``, ``puzzle_hash``, ``height``, ``width``, ``filled``, ``rows`` and
  ``cols`` (clues as compact JSON), ``solution`` (row strings of ``#``/``.`` joined by ``/``).
* metrics: ``pool_index``, ``puzzle_hash``, ``encoding``, ``solver``, ``variables``,
  ``clauses``, ``decisions``, ``propagations``, ``conflicts``, ``restarts``, ``status``.
* timing: ``pool_index``, ``puzzle_hash``, ``encoding``, ``solver``, ``time_s`` (seconds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from nonolab.sat.puzzles import Puzzle, grid_to_strings
from nonolab.sat.solvers import RECORD_COLUMNS

POOL_COLUMNS = [
    "pool_index",
    "puzzle_hash",
    "height",
    "width",
    "filled",
    "rows",
    "cols",
    "solution",
]
#: the solver records' columns (:data:`nonolab.sat.solvers.RECORD_COLUMNS`) keyed by pool index
#: instead of puzzle id, without the wall time
METRIC_COLUMNS = [
    "pool_index",
    *(c for c in RECORD_COLUMNS if c not in ("puzzle_id", "time_s")),
]
TIMING_COLUMNS = ["pool_index", "puzzle_hash", "encoding", "solver", "time_s"]

PuzzleMaker = Callable[[int, int, int, np.random.Generator], Puzzle]


class SweepError(ValueError):
    """A sweep configuration or a set of shard tables is inconsistent."""


def study_pool_grid(puzzles: Sequence[Puzzle]) -> tuple[dict[str, int] | None, str | None]:
    """Return ``(grid, reason)``: the candidate-pool grid that matches a study's puzzles,
    ``{"height", "width", "filled"}`` (their one grid size and the lower median of their
    solutions' filled cells; half the cells when no solution is given) with ``reason`` None;
    or ``(None, reason)`` when no one pool matches them (several grid sizes, or no puzzles)."""
    sizes = sorted({(p.height, p.width) for p in puzzles})
    if len(sizes) != 1:
        listed = ", ".join(f"{h}x{w}" for h, w in sizes) or "none"
        return None, (
            f"the study's puzzles have {len(sizes)} grid sizes ({listed}): no one candidate "
            "pool matches them (set config pool.height, pool.width and pool.filled to "
            "generate one anyway)"
        )
    (h, w), filled = sizes[0], []
    for p in puzzles:
        if p.solution is not None:
            filled.append(int(np.asarray(p.solution).sum()))
    med = int(sorted(filled)[(len(filled) - 1) // 2]) if filled else (h * w) // 2
    return {"height": h, "width": w, "filled": med}, None


def shard_bounds(size: int, shards: int) -> list[tuple[int, int]]:
    """Return the ``[start, stop)`` pool-index range of every shard, in shard order.

    Ranges are contiguous, cover ``0..size-1`` exactly once, and differ in length by at most
    one (the first ``size % shards`` shards hold one more). Raises :class:`SweepError` unless
    ``1 <= shards <= size``.
    """
    if size < 1:
        raise SweepError(f"pool size must be at least 1, got {size}")
    if not 1 <= shards <= size:
        raise SweepError(f"shards must be between 1 and the pool size ({size}), got {shards}")
    base, extra = divmod(size, shards)
    out = []
    start = 0
    for k in range(shards):
        stop = start + base + (1 if k < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def puzzle_seed_sequence(seed: int, pool_index: int) -> np.random.SeedSequence:
    """Return the seed sequence of pool entry ``pool_index``: child ``pool_index`` of
    ``SeedSequence(seed)`` (identical to ``SeedSequence(seed).spawn(n)[pool_index]``)."""
    if pool_index < 0:
        raise SweepError(f"pool index must be non-negative, got {pool_index}")
    return np.random.SeedSequence(seed, spawn_key=(pool_index,))


def puzzle_rng(seed: int, pool_index: int) -> np.random.Generator:
    """Return the random generator of pool entry ``pool_index`` (see :func:`puzzle_seed_sequence`)."""
    return np.random.default_rng(puzzle_seed_sequence(seed, pool_index))


def _default_maker() -> PuzzleMaker:
    from nonolab.sat.generate import random_unique_puzzle

    return random_unique_puzzle


def pool_record(pool_index: int, puzzle: Puzzle, filled: int) -> dict[str, Any]:
    """Return one pool-table row (see module docstring) for ``puzzle``."""
    if puzzle.solution is None:
        raise SweepError(f"pool entry {pool_index}: generated puzzle has no solution")
    return {
        "pool_index": pool_index,
        "puzzle_hash": puzzle.hash,
        "height": puzzle.height,
        "width": puzzle.width,
        "filled": filled,
        "rows": json.dumps([list(c) for c in puzzle.rows], separators=(",", ":")),
        "cols": json.dumps([list(c) for c in puzzle.cols], separators=(",", ":")),
        "solution": "/".join(grid_to_strings(puzzle.solution)),
    }


def generate_shard(
    *,
    size: int,
    shards: int,
    shard: int,
    height: int,
    width: int,
    filled: int,
    seed: int,
    make_puzzle: PuzzleMaker | None = None,
) -> pd.DataFrame:
    """Return the pool table of shard ``shard`` (0-based) of a pool of ``size`` puzzles.

    Each entry is ``make_puzzle(height, width, filled, puzzle_rng(seed, pool_index))``; the
    default maker is :func:`nonolab.sat.generate.random_unique_puzzle` (a random grid with exactly
    ``filled`` filled cells, kept only when its clues have a unique solution).
    """
    bounds = shard_bounds(size, shards)
    if not 0 <= shard < shards:
        raise SweepError(f"shard index {shard} outside 0..{shards - 1}")
    if not 0 <= filled <= height * width:
        raise SweepError(f"filled={filled} cells do not fit a {height}x{width} grid")
    maker = make_puzzle or _default_maker()
    start, stop = bounds[shard]
    rows = [
        pool_record(i, maker(height, width, filled, puzzle_rng(seed, i)), filled)
        for i in range(start, stop)
    ]
    return pd.DataFrame(rows, columns=POOL_COLUMNS)


def puzzle_from_record(row: pd.Series | dict[str, Any]) -> Puzzle:
    """Return the :class:`Puzzle` of one pool-table row (checked against its solution)."""
    solution = [[1 if ch == "#" else 0 for ch in line] for line in str(row["solution"]).split("/")]
    p = Puzzle(
        rows=json.loads(row["rows"]),
        cols=json.loads(row["cols"]),
        solution=solution,
        label=str(row["pool_index"]),
    )
    if p.hash != row["puzzle_hash"]:
        raise SweepError(f"pool entry {row['pool_index']}: puzzle_hash does not match its clues")
    return p


def shard_metrics(
    pool: pd.DataFrame,
    solvers: Sequence[str],
    encodings: Sequence[str],
    *,
    conf_budget: int | None = None,
) -> pd.DataFrame:
    """Return solver statistics for every puzzle of ``pool`` x encoding x solver.

    Computed by :func:`nonolab.measure.tables.stats_table` (one fresh solver per run, clauses in the
    encoding's order, counters from ``accum_stats()``). Columns: :data:`METRIC_COLUMNS` plus
    ``time_s`` (wall seconds; split it off with :func:`split_timing`). Rows are ordered by pool
    index, then encoding, then solver, in the order given. ``conf_budget`` caps each run's
    conflicts (status ``unknown`` when reached).
    """
    from nonolab.measure.tables import stats_table

    puzzles = [puzzle_from_record(row) for _, row in pool.iterrows()]
    stats = stats_table(puzzles, encodings=encodings, solvers=solvers, conf_budget=conf_budget)
    stats = stats.rename(columns={"puzzle_id": "pool_index"})
    stats["pool_index"] = stats["pool_index"].astype(int)
    return stats[METRIC_COLUMNS + ["time_s"]].reset_index(drop=True)


def split_timing(metrics: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(metrics without time_s, timing table)``: the first is deterministic, the
    second holds wall times in seconds (:data:`TIMING_COLUMNS`)."""
    return metrics[METRIC_COLUMNS].copy(), metrics[TIMING_COLUMNS].copy()


def merge_shards(
    frames: Iterable[pd.DataFrame],
    size: int,
    keys: Sequence[str] = ("pool_index",),
    names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return the shard tables concatenated and sorted by ``keys`` (pool index first).

    Checks that every pool index ``0..size-1`` is present, none twice per ``keys``
    combination, and that each index carries one ``puzzle_hash``; raises :class:`SweepError`
    naming the offending shard (``names[k]``, default ``shard_k``) otherwise.
    """
    frames = list(frames)
    names = list(names) if names is not None else [f"shard_{k}" for k in range(len(frames))]
    if not frames:
        raise SweepError("no shard tables to merge")
    tagged = [f.assign(_shard=names[k]) for k, f in enumerate(frames)]
    df = pd.concat(tagged, ignore_index=True)
    keys = list(keys)
    dup = df[df.duplicated(keys, keep=False)]
    if len(dup):
        first = dup.iloc[0]
        where = sorted(set(dup.loc[dup[keys].eq(first[keys]).all(axis=1), "_shard"]))
        raise SweepError(
            f"pool index {first['pool_index']} appears more than once (in {', '.join(where)})"
        )
    hashes = df.groupby("pool_index")["puzzle_hash"].nunique()
    if (hashes > 1).any():
        bad = int(hashes[hashes > 1].index[0])
        raise SweepError(f"pool index {bad} has different puzzle hashes in different shards")
    missing = sorted(set(range(size)) - set(df["pool_index"].astype(int)))
    if missing:
        raise SweepError(
            f"{len(missing)} pool indices missing from the shards (first: {missing[:5]})"
        )
    extra = sorted(set(df["pool_index"].astype(int)) - set(range(size)))
    if extra:
        raise SweepError(f"pool indices outside 0..{size - 1}: {extra[:5]}")
    out = df.drop(columns="_shard").sort_values(keys, kind="stable").reset_index(drop=True)
    return out


def pool_duplicates(pool: pd.DataFrame) -> pd.DataFrame:
    """Return the exclusion rows for repeated puzzles: every pool entry whose ``puzzle_hash``
    already occurred at a lower pool index. Columns ``pool_index``, ``puzzle_hash``,
    ``reason``."""
    p = pool.sort_values("pool_index", kind="stable")
    first = p.drop_duplicates("puzzle_hash").set_index("puzzle_hash")["pool_index"]
    dups = p[p.duplicated("puzzle_hash", keep="first")]
    return pd.DataFrame(
        {
            "pool_index": dups["pool_index"].to_numpy(),
            "puzzle_hash": dups["puzzle_hash"].to_numpy(),
            "reason": [
                f"same clues as pool entry {int(first[h])} (kept the first)"
                for h in dups["puzzle_hash"]
            ],
        },
        columns=["pool_index", "puzzle_hash", "reason"],
    )


def study_puzzle_json(pool: pd.DataFrame, labels: Sequence[Any] | None = None) -> list[dict]:
    """Return ``pool`` rows as a study puzzle file (the layout of ``nonograms_6.json``): a list
    of ``{"id", "solution", "clues": {"rows", "columns"}, "density"}`` with ids ``labels``
    (default ``0..n-1``). ``density`` = filled fraction of the grid."""
    labels = list(range(len(pool))) if labels is None else list(labels)
    if len(labels) != len(pool):
        raise SweepError(f"{len(labels)} labels for {len(pool)} puzzles")
    out = []
    for label, (_, row) in zip(labels, pool.iterrows(), strict=True):
        p = puzzle_from_record(row)
        assert p.solution is not None
        cells = p.height * p.width
        out.append(
            {
                "id": label,
                "solution": [list(r) for r in p.solution],
                "clues": p.clues_dict(),
                "density": round(sum(map(sum, p.solution)) / cells, 10),
            }
        )
    return out


SELECTED_COLUMNS = [
    "label",
    "selection",
    "selection_rank",
    *(c for c in METRIC_COLUMNS if c != "status"),
    "pool_median",
]


def selection_table(
    pool: pd.DataFrame,
    metrics: pd.DataFrame,
    *,
    excluded: pd.DataFrame | None = None,
    solver: str = "minisat22",
    encoding: str = "block_start",
    metric: str = "conflicts",
    drop_top_frac: float = 0.05,
    per_group: int = 2,
) -> pd.DataFrame:
    """Return the paper's selection (METHODS 1) from a merged pool, one row per puzzle.

    Uses the ``solver`` x ``encoding`` rows of ``metrics``; pool entries listed in ``excluded``
    (repeated puzzles) and runs whose status is not ``sat`` (budget exhausted: the counters are
    then lower bounds) are left out. The selection itself is
    :func:`nonolab.measure.tables.select_study_puzzles` (drop the top ``drop_top_frac`` by ``metric``,
    then ``per_group`` lowest, nearest-median and highest; ties by pool index). Columns
    :data:`SELECTED_COLUMNS`; ``label`` = the new study id, 0..n-1 in selection order;
    ``pool_median`` = median of ``metric`` over the pool after the drop.
    """
    from nonolab.measure.tables import select_study_puzzles
    from nonolab.sat.solvers import canonical_solver

    solver = canonical_solver(solver)
    m = metrics[(metrics["solver"] == solver) & (metrics["encoding"] == encoding)]
    if m.empty:
        raise SweepError(
            f"no metrics for solver {solver!r} with encoding {encoding!r}: add them to "
            "pool.solvers / pool.encodings"
        )
    m = m[m["status"] == "sat"]
    if excluded is not None and len(excluded):
        m = m[~m["pool_index"].isin(excluded["pool_index"])]
    unknown = set(pool["pool_index"]) - set(metrics["pool_index"])
    if unknown:
        raise SweepError(f"{len(unknown)} pool entries have no metrics")
    m = m.sort_values("pool_index", kind="stable").reset_index(drop=True)
    sel = select_study_puzzles(
        m,
        drop_top_frac,
        metric=metric,
        n_low=per_group,
        n_median=per_group,
        n_high=per_group,
    )
    sel.insert(0, "label", range(len(sel)))
    return sel[SELECTED_COLUMNS].reset_index(drop=True)
