"""Statistics of the SAT metrics across a puzzle pool and the study's selection from it.

* :func:`metric_correlations`, :func:`metric_vif`: how redundant decisions, propagations and
  conflicts are with each other, in the pool and in the selected puzzles;
* :func:`selection_pool_ids`, :func:`selection_representativeness`: where each served puzzle
  falls in the pool, under the published (row-position) and the corrected (clue-hash)
  alignment of served ids to pool rows;
* :func:`ordered_selections`: how many distinct ordered puzzle sequences the sessions served,
  out of all possible ones.

Pool tables are read with :func:`nonolab.measure.tables.read_pool_statistics`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.outliers_influence import variance_inflation_factor
from statsmodels.tools.tools import add_constant

from nonolab.stats.correlations import METRICS, published_alignment

CORRELATION_COLUMNS = [
    "sample",
    "n",
    "metric_a",
    "metric_b",
    "pearson_r",
    "pearson_p",
    "spearman_rho",
    "spearman_p",
    "r_squared_vs_conflicts",
]
VIF_COLUMNS = ["sample", "n", "metric", "vif"]


def metric_correlations(
    samples: Mapping[str, pd.DataFrame], metrics: Sequence[str] = METRICS
) -> pd.DataFrame:
    """Return the pairwise Pearson and Spearman correlations of ``metrics`` in each sample.

    ``samples``: sample name -> one row per puzzle with the metric columns (counts). One row
    per sample x metric pair (pairs in ``metrics`` order; columns :data:`CORRELATION_COLUMNS`):
    ``pearson_r``/``pearson_p`` (:func:`scipy.stats.pearsonr`), ``spearman_rho``/``spearman_p``
    (:func:`scipy.stats.spearmanr`, two-sided), ``r_squared_vs_conflicts`` (the squared
    Pearson r, i.e. the R^2 of one metric regressed on conflicts alone; NaN for pairs without
    ``conflicts``). Correlations of a constant metric are NaN.
    """
    rows = []
    for sample, df in samples.items():
        for a, b in itertools.combinations(metrics, 2):
            x, y = df[a].to_numpy(dtype=float), df[b].to_numpy(dtype=float)
            constant = len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0
            pr = (np.nan, np.nan) if constant else stats.pearsonr(x, y)
            sr = (np.nan, np.nan) if constant else stats.spearmanr(x, y)
            rows.append(
                {
                    "sample": sample,
                    "n": len(x),
                    "metric_a": a,
                    "metric_b": b,
                    "pearson_r": float(pr[0]),
                    "pearson_p": float(pr[1]),
                    "spearman_rho": float(sr[0]),
                    "spearman_p": float(sr[1]),
                    "r_squared_vs_conflicts": (
                        float(pr[0]) ** 2 if "conflicts" in (a, b) else float("nan")
                    ),
                }
            )
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def metric_vif(
    samples: Mapping[str, pd.DataFrame], metrics: Sequence[str] = METRICS
) -> pd.DataFrame:
    """Return the variance inflation factor (unitless) of each metric in the design with all of
    ``metrics`` and an intercept, per sample (statsmodels ``variance_inflation_factor``, i.e.
    ``1 / (1 - R^2)`` of the metric on the others). Columns :data:`VIF_COLUMNS`."""
    rows = []
    for sample, df in samples.items():
        x = add_constant(df[list(metrics)].astype(float), has_constant="add").to_numpy()
        for i, metric in enumerate(metrics, start=1):  # column 0 is the intercept
            with np.errstate(divide="ignore"):
                vif = float(variance_inflation_factor(x, i))
            rows.append({"sample": sample, "n": len(df), "metric": metric, "vif": vif})
    return pd.DataFrame(rows, columns=VIF_COLUMNS)


def selection_pool_ids(
    selected: pd.DataFrame, served: pd.DataFrame, sizes: pd.DataFrame
) -> pd.DataFrame:
    """Return the pool row of every served puzzle under both alignments.

    ``selected``: the published statistics of the selected puzzles in their own row order
    (:func:`nonolab.measure.tables.read_pool_statistics`: ``pool_puzzle_id``, ``variables``,
    ``clauses``); ``served``: ``puzzle_id``, ``puzzle_hash``; ``sizes``: ``puzzle_hash``,
    ``variables``, ``clauses`` of the same encoding. One row per alignment x served puzzle
    (sorted numerically by id): ``alignment``, ``experiment_id`` (served id), ``puzzle_hash``
    (the served puzzle), ``source_hash`` (whose statistics the alignment uses) and
    ``pool_puzzle_id`` (the pool row of that source). ``published`` pairs the k-th served id
    with the k-th row (:func:`nonolab.stats.correlations.published_alignment`); ``corrected``
    pairs each served puzzle with the row of its own (variables, clauses).
    """
    pub = selected.rename(columns={"variables": "nvars_input", "clauses": "nclauses_input"})
    mapping = published_alignment(pub, served, sizes)
    key = sizes.drop_duplicates("puzzle_hash").set_index("puzzle_hash")
    key = key.loc[key.index.isin(set(served["puzzle_hash"]))]
    row_of = {}
    for _, r in selected.iterrows():
        hit = key.index[(key["variables"] == r["variables"]) & (key["clauses"] == r["clauses"])]
        row_of[hit[0]] = str(r["pool_puzzle_id"])
    own = dict(zip(served["puzzle_id"].astype(str), served["puzzle_hash"], strict=True))
    ids = sorted(own, key=lambda s: (len(s), s))
    rows = []
    for alignment, source in (("published", mapping), ("corrected", own)):
        for i in ids:
            rows.append(
                {
                    "alignment": alignment,
                    "experiment_id": i,
                    "puzzle_hash": own[i],
                    "source_hash": source[i],
                    "pool_puzzle_id": row_of[source[i]],
                }
            )
    return pd.DataFrame(rows)


def own_pool_ids(served: pd.DataFrame, pool: pd.DataFrame) -> pd.DataFrame:
    """Return the representativeness ids of a study without published statistics: one
    ``corrected`` row per served puzzle (``puzzle_id``, ``puzzle_hash``; sorted numerically by
    id) with its own statistics (``source_hash`` = ``puzzle_hash``) and ``pool_puzzle_id`` its
    row in ``pool`` when the pool holds the same puzzle (``puzzle_hash`` and ``pool_puzzle_id``
    columns), else empty."""
    row_of = {}
    if {"puzzle_hash", "pool_puzzle_id"} <= set(pool.columns):
        row_of = dict(zip(pool["puzzle_hash"], pool["pool_puzzle_id"].astype(str), strict=True))
    own = dict(zip(served["puzzle_id"].astype(str), served["puzzle_hash"], strict=True))
    rows = [
        {
            "alignment": "corrected",
            "experiment_id": i,
            "puzzle_hash": own[i],
            "source_hash": own[i],
            "pool_puzzle_id": row_of.get(own[i], ""),
        }
        for i in sorted(own, key=lambda s: (len(s), s))
    ]
    return pd.DataFrame(rows, columns=REPRESENTATIVENESS_ID_COLUMNS)


def pool_percentile(pool_values: Sequence[float], value: float) -> float:
    """Return the percentage (0-100) of pool values strictly below ``value``."""
    return 100.0 * float(np.mean(np.asarray(pool_values, dtype=float) < value))


def selection_representativeness(
    ids: pd.DataFrame,
    metrics: pd.DataFrame,
    pool: pd.DataFrame | None,
    metric_names: Sequence[str] = METRICS,
) -> pd.DataFrame:
    """Return where each served puzzle's statistics fall in the pool, per alignment.

    ``ids``: :func:`selection_pool_ids`; ``metrics``: ``puzzle_hash`` and the metric columns
    (one solver and encoding); ``pool``: one row per pool puzzle with the metric columns, or
    None (percentiles NaN). Adds ``<metric>_value`` (the source's count) and
    ``<metric>_percentile`` (:func:`pool_percentile`, percent of the pool strictly below).
    """
    m = metrics.drop_duplicates("puzzle_hash").set_index("puzzle_hash")
    out = ids.copy()
    for metric in metric_names:
        out[f"{metric}_value"] = out["source_hash"].map(m[metric]).astype(float)
        out[f"{metric}_percentile"] = [
            pool_percentile(pool[metric], v) if pool is not None else float("nan")
            for v in out[f"{metric}_value"]
        ]
    return out


def ordered_selections(
    attempts: pd.DataFrame,
    n_puzzles: int,
    per_session: int | Sequence[int],
    schedule: Sequence | None = None,
    schedule_idx: Sequence | None = None,
) -> dict[str, int | bool]:
    """Return counts of the puzzle sequences the sessions were served.

    ``attempts``: ``participant_id``, ``order``, ``puzzle_id``. ``per_session``: the number of
    puzzles a session serves, or every number allowed (variable sessions: the possible counts
    are summed over them). Keys: ``participants``,
    ``distinct_ordered`` (distinct sequences by ``order``), ``possible_ordered``
    (``n_puzzles P per_session``), ``distinct_unordered`` (distinct puzzle sets),
    ``possible_unordered`` (``n_puzzles C per_session``), ``complete_sessions`` (participants
    with an allowed number of attempts), when a ``schedule`` (list of sequences) is given,
    ``schedule_size`` and ``all_in_schedule``, and when the sessions' ``schedule_idx``
    (pointers into it; missing values ignored) are given, ``distinct_schedule_idx`` and
    ``max_schedule_idx``.
    """
    seq = (
        attempts.sort_values(["participant_id", "order"])
        .groupby("participant_id")["puzzle_id"]
        .apply(lambda s: tuple(str(x) for x in s))
    )
    sizes = [per_session] if isinstance(per_session, int) else sorted(set(per_session))
    out: dict[str, int | bool] = {
        "participants": len(seq),
        "complete_sessions": int(seq.map(len).isin(sizes).sum()),
        "distinct_ordered": seq.nunique(),
        "possible_ordered": sum(math.perm(n_puzzles, k) for k in sizes),
        "distinct_unordered": seq.map(lambda t: tuple(sorted(t))).nunique(),
        "possible_unordered": sum(math.comb(n_puzzles, k) for k in sizes),
    }
    if schedule is not None:
        known = {tuple(str(x) for x in s) for s in schedule}
        out["schedule_size"] = len(known)
        out["all_in_schedule"] = bool(seq.isin(known).all())
    if schedule_idx is not None:
        idx = pd.Series(schedule_idx).dropna().astype(int)
        out["distinct_schedule_idx"] = idx.nunique()
        out["max_schedule_idx"] = int(idx.max()) if len(idx) else -1
    return out


REPRESENTATIVENESS_ID_COLUMNS = [
    "alignment",
    "experiment_id",
    "puzzle_hash",
    "source_hash",
    "pool_puzzle_id",
]


def pool_tables(
    attempts: pd.DataFrame,
    metrics: pd.DataFrame,
    *,
    solver: str,
    encoding: str,
    pool: pd.DataFrame | None = None,
    selected: pd.DataFrame | None = None,
    metric_names: Sequence[str] = METRICS,
) -> dict[str, pd.DataFrame]:
    """Return the metric-redundancy and representativeness tables of a study.

    ``attempts``: ``puzzle_id``, ``puzzle_hash`` of the served puzzles; ``metrics``:
    ``results/sat/metrics.csv`` rows (``solver`` x ``encoding`` used); ``pool``: the candidate
    pool's statistics (:func:`nonolab.measure.tables.read_pool_statistics`) or None;
    ``selected``: the published statistics of the selected puzzles in pool order, or None.
    Keys: ``correlation`` (:func:`metric_correlations` of samples ``pool`` when given and
    ``selected``, the served puzzles' own statistics: a correlation between two metrics of the
    same puzzles does not depend on the alignment), ``vif`` (:func:`metric_vif`, same samples)
    and ``representativeness`` (:func:`selection_representativeness`: with ``selected`` both
    alignments, else with a ``pool`` each served puzzle against it (:func:`own_pool_ids`), else
    no rows).
    """
    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    m = metrics[(metrics["solver"] == solver) & (metrics["encoding"] == encoding)]
    own = m[m["puzzle_hash"].isin(set(served["puzzle_hash"]))]
    samples = ({"pool": pool} if pool is not None else {}) | {"selected": own}
    if selected is not None:
        ids = selection_pool_ids(selected, served, m)
    elif pool is not None:
        ids = own_pool_ids(served, pool)
    else:
        ids = pd.DataFrame(columns=REPRESENTATIVENESS_ID_COLUMNS)
    return {
        "correlation": metric_correlations(samples, metric_names),
        "vif": metric_vif(samples, metric_names),
        "representativeness": selection_representativeness(ids, m, pool, metric_names),
    }
