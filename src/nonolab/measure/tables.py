"""Tables (pandas) of the SAT toolkit's results, and puzzle files that are tables.

:mod:`nonolab.sat` stays free of pandas: it yields plain records
(:func:`nonolab.sat.solvers.solver_records`, :func:`~nonolab.sat.solvers.uniqueness_records`,
:func:`~nonolab.sat.solvers.read_solver_statistics`,
:func:`~nonolab.sat.linesolver.line_metrics_records`) and this module turns them into tables:

* :func:`stats_table`, :func:`metrics_and_timings`: solver statistics per puzzle x encoding x
  solver; :func:`uniqueness_table`: the uniqueness answers;
* :func:`parse_solver_statistics`, :func:`compare_published`: the study's published statistics
  and the check of the computed ones against them;
* :func:`line_metrics_table`: the human-like line-solving metrics;
* :func:`select_study_puzzles`: the paper's selection from a pool (METHODS.md section 1);
* :func:`puzzles_from_table`: puzzles from a table with ``puzzle_id`` and ``clues_json``
  (:func:`nonolab.measure.puzzle_files.read_puzzles` reads any puzzle file, tables included).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nonolab.sat.formats import FormatError
from nonolab.sat.linesolver import line_metrics_records
from nonolab.sat.puzzles import Puzzle, PuzzleError
from nonolab.sat.solvers import (
    RECORD_COLUMNS,
    STAT_COLUMNS,
    STUDY_SOLVERS,
    read_solver_statistics,
    solver_records,
    uniqueness_records,
)

# --------------------------------------------------------------------------------------------
# solver statistics and uniqueness


def stats_table(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str] = ("block_start",),
    solvers: Iterable[str] = STUDY_SOLVERS,
    *,
    conf_budget: int | None = None,
    time_limit_s: float | None = None,
) -> pd.DataFrame:
    """Return one row per puzzle x encoding x solver (columns
    :data:`nonolab.sat.solvers.RECORD_COLUMNS`; counters are counts, ``time_s`` wall seconds).

    Rows come in input order: puzzles, then encodings, then solvers
    (:func:`nonolab.sat.solvers.solver_records`). Each encoding is built once per puzzle.
    """
    rows = list(
        solver_records(
            puzzles, encodings, solvers, conf_budget=conf_budget, time_limit_s=time_limit_s
        )
    )
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))


METRIC_COLUMNS = [c for c in RECORD_COLUMNS if c != "time_s"]
TIMING_COLUMNS = ["puzzle_hash", "puzzle_id", "encoding", "solver", "time_s"]


def metrics_and_timings(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str],
    solvers: Iterable[str],
    *,
    conf_budget: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(metrics, timings)`` from :func:`stats_table`.

    ``metrics`` (columns :data:`METRIC_COLUMNS`) holds only deterministic values, so the same
    puzzles and settings give a byte-identical table; ``timings`` (:data:`TIMING_COLUMNS`)
    holds the wall seconds of each solve call. No wall-time limit is used here, since it would
    make ``status`` depend on the machine.
    """
    stats = stats_table(puzzles, encodings, solvers, conf_budget=conf_budget)
    return stats[METRIC_COLUMNS].copy(), stats[TIMING_COLUMNS].copy()


def uniqueness_table(
    puzzles: Iterable[Puzzle],
    encodings: Iterable[str],
    solver: str = "minisat22",
    *,
    conf_budget: int | None = None,
) -> pd.DataFrame:
    """Return one row per puzzle x encoding with the :func:`nonolab.sat.solvers.uniqueness`
    answer (the records of :func:`nonolab.sat.solvers.uniqueness_records`).

    Columns: ``puzzle_hash``, ``puzzle_id``, ``encoding``, ``solver``, ``status``
    (unique/multiple/unsat/unknown), ``matches_solution`` (nullable boolean: the first grid
    found equals the puzzle's given solution; missing when none is given or no grid was found),
    ``grid`` and ``second_grid`` (rows of ``#``/``.`` joined by ``/``; empty when absent).
    """
    out = pd.DataFrame(uniqueness_records(puzzles, encodings, solver, conf_budget=conf_budget))
    out["matches_solution"] = out["matches_solution"].astype("boolean")
    return out


# --------------------------------------------------------------------------------------------
# the study's published statistics


def parse_solver_statistics(path: str | Path) -> pd.DataFrame:
    """Return the published ``solver_statistics.txt`` as a table: one row per ``puzzle id`` x
    ``Solver`` block, columns as the keys of
    :func:`nonolab.sat.solvers.read_solver_statistics` (counts; ``time_s`` in seconds).
    Raises :class:`ValueError` naming the file and line for text it cannot read."""
    return pd.DataFrame(read_solver_statistics(path))


POOL_STATISTICS_COLUMNS = {"nvars_input": "variables", "nclauses_input": "clauses"}


def read_pool_statistics(path: str | Path) -> pd.DataFrame:
    """Return a pool statistics table in the study's own format (he2026:
    ``nonogram_solver_stats.csv``, ``selected_six_nonogram_stats.csv``) in its row order.

    Columns: ``pool_puzzle_id`` (str, the pool's own id), ``variables`` and ``clauses`` (the
    encoding's input sizes, from ``nvars_input``/``nclauses_input``), ``decisions``,
    ``propagations``, ``conflicts``, ``restarts`` (counts). An unnamed leading index column is
    dropped. Raises :class:`ValueError` naming a missing column.
    """
    df = pd.read_csv(path)
    df = df.drop(columns=[c for c in df.columns if str(c).startswith("Unnamed")])
    df = df.rename(columns={**POOL_STATISTICS_COLUMNS, "puzzle_id": "pool_puzzle_id"})
    need = ["pool_puzzle_id", "variables", "clauses", *STAT_COLUMNS]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: pool statistics table lacks columns {missing}")
    out = df[need].copy()
    out["pool_puzzle_id"] = out["pool_puzzle_id"].astype(str)
    return out.reset_index(drop=True)


def compare_published(
    metrics: pd.DataFrame, published: pd.DataFrame, encoding: str = "block_start"
) -> pd.DataFrame:
    """Return computed vs published statistics, one row per puzzle x solver x quantity.

    ``metrics``: rows of :func:`stats_table`; ``published``: :func:`parse_solver_statistics`.
    Joined on the served id (``puzzle_id``) and solver, for ``encoding`` only. Columns:
    ``puzzle_id``, ``puzzle_hash``, ``solver``, ``quantity`` (variables, clauses, decisions,
    propagations, conflicts, restarts), ``published``, ``computed``, ``equal``. A published row
    with no computed match gets ``computed`` missing and ``equal`` False.
    """
    quantities = ["variables", "clauses", *STAT_COLUMNS]
    m = metrics[metrics["encoding"] == encoding]
    m = m.assign(puzzle_id=m["puzzle_id"].astype(str))
    pub = published.assign(puzzle_id=published["puzzle_id"].astype(str))
    joined = pub.merge(
        m[["puzzle_id", "puzzle_hash", "solver", *quantities]],
        on=["puzzle_id", "solver"],
        how="left",
        suffixes=("_published", "_computed"),
    )
    rows = []
    for _, r in joined.iterrows():
        for q in quantities:
            comp = r[f"{q}_computed"]
            has = pd.notna(comp)
            rows.append(
                {
                    "puzzle_id": r["puzzle_id"],
                    "puzzle_hash": r["puzzle_hash"] if has else "",
                    "solver": r["solver"],
                    "quantity": q,
                    "published": int(r[f"{q}_published"]),
                    "computed": int(comp) if has else pd.NA,
                    "equal": bool(has and int(comp) == int(r[f"{q}_published"])),
                }
            )
    out = pd.DataFrame(rows)
    out["computed"] = out["computed"].astype("Int64")
    return out


# --------------------------------------------------------------------------------------------
# line-solving metrics


def line_metrics_table(
    puzzles: Sequence[Puzzle], *, max_depth: int = 2, time_limit_s: float | None = 60.0
) -> pd.DataFrame:
    """Return one row per puzzle: ``puzzle_hash``, ``puzzle_id`` (the label), ``height``,
    ``width`` and the :func:`nonolab.sat.linesolver.line_metrics` columns (counts;
    ``probing_depth`` a nullable integer, empty when beyond ``max_depth``;
    ``frac_solved_by_propagation`` a fraction of the cells). A puzzle whose clues propagation
    proves contradictory gets ``contradiction = True`` and empty metrics."""
    df = pd.DataFrame(line_metrics_records(puzzles, max_depth=max_depth, time_limit_s=time_limit_s))
    if "probing_depth" in df:
        df["probing_depth"] = df["probing_depth"].astype("Int64")
    return df


# --------------------------------------------------------------------------------------------
# the paper's selection from a pool


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


# --------------------------------------------------------------------------------------------
# puzzle files that are tables (results/ingest/puzzles.parquet and friends)


def puzzles_from_table(df: pd.DataFrame, source: str = "<table>") -> list[Puzzle]:
    """Return the puzzles of a table with ``puzzle_id`` and ``clues_json`` (``{"rows": ...,
    "columns": ...}``), optionally ``solution_json`` and ``puzzle_hash`` (checked)."""
    need = {"puzzle_id", "clues_json"}
    if not need <= set(df.columns):
        raise FormatError(f"{source}: table needs columns {sorted(need)}, has {list(df.columns)}")
    out = []
    for i, row in enumerate(df.to_dict("records")):
        label = str(row["puzzle_id"])
        try:
            clues = json.loads(row["clues_json"])
            sol = row.get("solution_json")
            sol = json.loads(sol) if isinstance(sol, str) and sol else None
            p = Puzzle(clues["rows"], clues["columns"], solution=sol, label=label)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise FormatError(
                f"{source}:{i + 2}: puzzle {label}: bad clues/solution ({exc})"
            ) from None
        except PuzzleError as exc:
            raise PuzzleError(f"{source}: row {i + 2}: {exc}") from None
        if "puzzle_hash" in row and row["puzzle_hash"] != p.hash:
            raise PuzzleError(f"{source}: row {i + 2}: puzzle_hash does not match the clues")
        out.append(p)
    return out
