"""Puzzle-level Spearman correlations of difficulty with SAT metrics (Table 1, METHODS 8).

Two alignments of solver statistics to served puzzles:

* ``corrected``: each served puzzle gets the statistics of the puzzle with the same
  ``puzzle_hash``;
* ``published``: the original analysis joined by row position, so the served puzzle at sorted
  position ``k`` got the statistics of row ``k`` of the pool-ordered statistics table. Which puzzle
  row ``k`` *is* follows from its variable and clause counts (unique per puzzle), so the published
  mapping is derived from the published table itself (:func:`published_alignment`), not typed in.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from nonolab.core.undefined import (
    CONSTANT_DIFFICULTY,
    CONSTANT_METRIC,
    MIN_PUZZLES,
    NO_DIFFICULTY,
    NOT_CONNECTED,
    too_few,
)

METRICS: tuple[str, ...] = ("decisions", "propagations", "conflicts")
TABLE1_COLUMNS = [
    "alignment",
    "solver",
    "encoding",
    "metric",
    "n",
    "bt_rho",
    "bt_p",
    "raw_rho",
    "raw_p",
    "p_method",
    "bt_p_fdr",
    "raw_p_fdr",
    "bt_p_asymptotic",
    "raw_p_asymptotic",
    "bt_undefined",
    "raw_undefined",
]
#: Up to this many puzzles Table 1's p is exact (all n! orderings; 9! = 362,880).
EXACT_MAX_N = 9


def spearman_permutation_p(
    x: Sequence[float],
    y: Sequence[float],
    exact_max_n: int = EXACT_MAX_N,
    n_perm: int = 100_000,
    seed: int = 0,
) -> float:
    """Return the two-sided permutation p-value (unitless) of Spearman's rho between ``x`` and
    ``y``: the share of pairings with ``|rho| >= |rho_obs|``.

    ``scipy.stats.permutation_test`` (``permutation_type="pairings"``) permutes ``y`` against
    ``x``: all ``n!`` orderings when ``n <= exact_max_n`` (exact; the observed ordering counts),
    else ``n_perm`` orderings drawn by ``numpy.random.default_rng(seed)`` with
    ``p = (1 + hits) / (1 + n_perm)``. The statistic is ``|sum_i (2 rx_i - n - 1)(2 ry_i - n -
    1)|`` on the (average) ranks, an integer that orders pairings exactly as ``|rho|`` does, so
    ties in ``|rho|`` are counted without a floating-point tolerance. NaN when either variable
    is constant or there are fewer than 2 pairs.
    """
    from scipy import stats

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-D and of equal length")
    n = len(x)
    if n < 2:
        return float("nan")
    cx = 2 * stats.rankdata(x) - (n + 1)
    cy = 2 * stats.rankdata(y) - (n + 1)
    if np.ptp(cx) == 0 or np.ptp(cy) == 0:
        return float("nan")

    def statistic(yy: np.ndarray, axis: int) -> np.ndarray:
        return np.abs(np.moveaxis(yy, axis, -1) @ cx)

    res = stats.permutation_test(
        (cy,),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=np.inf if n <= exact_max_n else n_perm,
        alternative="greater",
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def published_alignment(
    pool_table: pd.DataFrame,
    served: pd.DataFrame,
    sizes: pd.DataFrame,
) -> dict[str, str]:
    """Return the published row-position join: served ``puzzle_id`` -> ``puzzle_hash`` whose
    statistics the published tables used.

    ``pool_table``: the published statistics table in its own row order, with ``nvars_input`` and
    ``nclauses_input``. ``served``: ``puzzle_id``, ``puzzle_hash`` of the served puzzles.
    ``sizes``: ``puzzle_hash``, ``variables``, ``clauses`` of the same encoding as the published
    table. The served puzzles, sorted by numeric id, are paired with the table's rows in order;
    each row is identified by its (variables, clauses) pair, which must match exactly one puzzle.
    """
    if len(pool_table) != len(served):
        raise ValueError(
            f"published statistics table has {len(pool_table)} rows but {len(served)} puzzles "
            "were served; the row-position join is undefined"
        )
    key = sizes.drop_duplicates("puzzle_hash").set_index("puzzle_hash")[["variables", "clauses"]]
    key = key.loc[key.index.isin(set(served["puzzle_hash"]))]
    order = sorted(served["puzzle_id"].astype(str), key=lambda s: (len(s), s))
    hash_of = dict(zip(served["puzzle_id"].astype(str), served["puzzle_hash"], strict=True))
    out = {}
    for k, (_, row) in enumerate(pool_table.reset_index(drop=True).iterrows()):
        nv, nc = int(row["nvars_input"]), int(row["nclauses_input"])
        hit = key.index[(key["variables"] == nv) & (key["clauses"] == nc)].tolist()
        if len(hit) != 1:
            raise ValueError(
                f"published statistics row {k} ({nv} variables, {nc} clauses) matches "
                f"{len(hit)} served puzzles; cannot identify it"
            )
        out[order[k]] = hit[0]
    assert set(out.values()) <= set(hash_of.values())
    return out


def aligned_metrics(
    metrics: pd.DataFrame,
    served: pd.DataFrame,
    mapping: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Return the SAT metrics assigned to each served puzzle.

    ``metrics``: ``puzzle_hash``, ``solver``, ``encoding`` and metric columns. ``served``:
    ``puzzle_id``, ``puzzle_hash``. ``mapping`` (served id -> source hash) gives the published
    alignment; ``None`` joins by the puzzle's own hash. Output: one row per served puzzle x
    solver x encoding with ``puzzle_id``, ``puzzle_hash`` (the served puzzle), ``source_hash``
    (whose statistics were used) and the metric columns.
    """
    s = served[["puzzle_id", "puzzle_hash"]].copy()
    s["puzzle_id"] = s["puzzle_id"].astype(str)
    s["source_hash"] = (
        s["puzzle_hash"] if mapping is None else s["puzzle_id"].map(mapping).fillna("")
    )
    if (s["source_hash"] == "").any():
        raise ValueError(f"no published alignment for served ids {s.loc[s.source_hash == '']}")
    m = metrics.drop(columns=[c for c in ("puzzle_id",) if c in metrics.columns])
    m = m.rename(columns={"puzzle_hash": "source_hash"})
    out = s.merge(m, on="source_hash", how="inner", validate="one_to_many")
    return out.sort_values(["solver", "encoding", "puzzle_id"], kind="stable").reset_index(
        drop=True
    )


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman (rho, two-sided p); (NaN, NaN) when either variable is constant or there are
    fewer than 2 pairs."""
    from scipy import stats

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def spearman_undefined(x: np.ndarray, y: np.ndarray, missing_x: str = NO_DIFFICULTY) -> str:
    """Return why Spearman's rho of ``x`` (a difficulty score per puzzle) and ``y`` (a metric)
    is not defined, in words (:mod:`nonolab.core.undefined`); ``""`` when it is. Reasons, first
    that applies: ``missing_x`` when a difficulty score is missing, a missing metric value,
    fewer than :data:`~nonolab.core.undefined.MIN_PUZZLES` puzzles, a constant metric, a
    constant difficulty score."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) and not np.isfinite(x).all():
        return missing_x
    if len(y) and not np.isfinite(y).all():
        return "a metric value is missing"
    if len(x) < MIN_PUZZLES:
        return too_few(len(x), MIN_PUZZLES)
    if np.ptp(y) == 0:
        return CONSTANT_METRIC
    if np.ptp(x) == 0:
        return CONSTANT_DIFFICULTY
    return ""


def strengths_undefined(strengths: pd.DataFrame) -> str:
    """Return why the Bradley-Terry strengths of ``strengths`` (table ``bt_strengths``) are
    missing, for the rows they leave undefined: the comparison graph is not connected when the
    table's ``status`` says the point estimate is undefined, else no difficulty score."""
    status = strengths["status"].astype(str) if "status" in strengths else pd.Series([], dtype=str)
    if status.str.contains("undefined|connected", regex=True).any():
        return NOT_CONNECTED
    return NO_DIFFICULTY


def bh_fdr(p: Sequence[float] | pd.Series) -> np.ndarray:
    """Return Benjamini-Hochberg adjusted p-values (statsmodels ``fdr_bh``) over the finite
    entries of ``p``, in input order; NaN entries stay NaN and are not counted."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return out


def p_method(n: int, exact_max_n: int = EXACT_MAX_N, n_perm: int = 100_000) -> str:
    """Return how :func:`spearman_permutation_p` computes the p of ``n`` pairs, in words."""
    if n <= exact_max_n:
        return f"exact permutation (all {math.factorial(max(n, 0)):,} orderings)"
    return f"Monte Carlo permutation ({n_perm:,} seeded orderings)"


def table1(
    strengths: pd.DataFrame,
    raw_means: pd.Series,
    aligned: dict[str, pd.DataFrame],
    metrics: Sequence[str] = METRICS,
    exact_max_n: int = EXACT_MAX_N,
    n_perm: int = 100_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Return Table 1: Spearman rho/p of BT strength and of the raw mean rating with each metric.

    ``strengths``: ``puzzle_id``, ``strength``; ``raw_means``: mean final rating indexed by
    ``puzzle_id``; ``aligned``: alignment name -> :func:`aligned_metrics` output. One row per
    alignment x solver x encoding x metric (columns :data:`TABLE1_COLUMNS`).

    ``bt_p``/``raw_p`` are two-sided permutation p-values (:func:`spearman_permutation_p`):
    exact over all n! orderings up to ``exact_max_n`` puzzles, else ``n_perm`` seeded draws
    (never 0); ``p_method`` says which. The asymptotic p (Student t approximation, scipy's
    ``spearmanr``; 0 when |rho| = 1, and poor for few puzzles) is only beside them, in
    ``bt_p_asymptotic``/``raw_p_asymptotic``. ``bt_p_fdr`` and ``raw_p_fdr`` adjust
    ``bt_p``/``raw_p`` by :func:`bh_fdr` over the metrics of one alignment x solver x encoding
    (the published family). Statistics are NaN when they are not defined, and
    ``bt_undefined``/``raw_undefined`` say why in words (:func:`spearman_undefined`: the
    comparison graph is not connected, fewer than 3 puzzles, a constant metric, ...; empty
    when defined); every p beside an undefined rho is NaN too, never 0.
    """
    bt_missing = strengths_undefined(strengths)
    bt = strengths.assign(puzzle_id=strengths["puzzle_id"].astype(str)).set_index("puzzle_id")
    raw = raw_means.copy()
    raw.index = raw.index.astype(str)
    rows = []
    for alignment, am in aligned.items():
        for (solver, enc), g in am.groupby(["solver", "encoding"], sort=True):
            g = g.set_index("puzzle_id")
            ids = [i for i in g.index if i in bt.index and i in raw.index]
            for metric in metrics:
                y = g.loc[ids, metric].astype(float).to_numpy()
                xb = bt.loc[ids, "strength"].to_numpy(dtype=float)
                xr = raw.loc[ids].to_numpy(dtype=float)
                why_b = spearman_undefined(xb, y, bt_missing)
                why_r = spearman_undefined(xr, y)
                nan2 = (float("nan"), float("nan"))
                rb = nan2 if why_b else _spearman(xb, y)
                rr = nan2 if why_r else _spearman(xr, y)
                rows.append(
                    {
                        "alignment": alignment,
                        "solver": solver,
                        "encoding": enc,
                        "metric": metric,
                        "n": len(ids),
                        "bt_rho": rb[0],
                        "bt_p": float("nan")
                        if why_b
                        else spearman_permutation_p(xb, y, exact_max_n, n_perm, seed),
                        "raw_rho": rr[0],
                        "raw_p": float("nan")
                        if why_r
                        else spearman_permutation_p(xr, y, exact_max_n, n_perm, seed),
                        "p_method": p_method(len(ids), exact_max_n, n_perm),
                        "bt_p_asymptotic": rb[1],
                        "raw_p_asymptotic": rr[1],
                        "bt_undefined": why_b,
                        "raw_undefined": why_r,
                    }
                )
    out = pd.DataFrame(rows, columns=TABLE1_COLUMNS)
    if len(out):
        family = out.groupby(["alignment", "solver", "encoding"], sort=False)
        for col in ("bt", "raw"):
            out[f"{col}_p_fdr"] = family[f"{col}_p"].transform(bh_fdr)
    return out


BEHAVIOUR_AGGREGATES: tuple[str, ...] = ("time_to_solve_s", "error_count", "hint_count")
BEHAVIOUR_SPEARMAN_COLUMNS = [
    "predictor",
    "n",
    "bt_rho",
    "bt_p",
    "raw_rho",
    "raw_p",
    "bt_p_fdr",
    "raw_p_fdr",
]


def behaviour_spearman(
    strengths: pd.DataFrame,
    raw_means: pd.Series,
    attempts: pd.DataFrame,
    features: Sequence[str] = BEHAVIOUR_AGGREGATES,
) -> pd.DataFrame:
    """Return Spearman rho/p of BT strength and of the raw mean rating with each puzzle's mean
    behaviour (mean over its attempts with a value; seconds or counts).

    ``strengths``: ``puzzle_id``, ``strength``; ``raw_means``: :func:`raw_mean_rating`;
    ``attempts``: ``puzzle_id`` and the ``features`` columns. One row per feature (columns
    :data:`BEHAVIOUR_SPEARMAN_COLUMNS`); ``*_p_fdr``: :func:`bh_fdr` over the features. The
    joins are by the puzzle's own id, so no SAT alignment is involved.
    """
    bt = strengths.assign(puzzle_id=strengths["puzzle_id"].astype(str)).set_index("puzzle_id")
    raw = raw_means.copy()
    raw.index = raw.index.astype(str)
    means = attempts.groupby(attempts["puzzle_id"].astype(str))[list(features)].mean()
    ids = [i for i in means.index if i in bt.index and i in raw.index]
    rows = []
    for f in features:
        y = means.loc[ids, f].to_numpy(dtype=float)
        rb = _spearman(bt.loc[ids, "strength"].to_numpy(dtype=float), y)
        rr = _spearman(raw.loc[ids].to_numpy(dtype=float), y)
        rows.append(
            {"predictor": f, "n": len(ids), "bt_rho": rb[0], "bt_p": rb[1], "raw_rho": rr[0]}
            | {"raw_p": rr[1]}
        )
    out = pd.DataFrame(rows, columns=BEHAVIOUR_SPEARMAN_COLUMNS)
    out["bt_p_fdr"], out["raw_p_fdr"] = bh_fdr(out["bt_p"]), bh_fdr(out["raw_p"])
    return out


def table1_captions(t1: pd.DataFrame, solver: str, encoding: str) -> tuple[str, str]:
    """Return the captions of Table 1 and of its erratum table (published against corrected
    alignment for ``solver`` x ``encoding``), each ending with the small-sample note."""
    n = int(t1["n"].max()) if len(t1) else 0
    method = str(t1["p_method"].iloc[0]) if "p_method" in t1 and len(t1) else "permutation"
    note = (
        f"Only {n} puzzles: p is the {method} p of Spearman's rho on n = {n} (the asymptotic "
        "p only beside it, labelled; FDR from the permutation p); treat every correlation as "
        "descriptive."
    )
    blank = t1[t1["bt_rho"].isna() | t1["raw_rho"].isna()] if len(t1) else t1
    if len(blank):
        why: dict[str, set[str]] = {}
        for r in blank.to_dict("records"):
            for col in ("bt_undefined", "raw_undefined"):
                reason = str(r.get(col) or "").strip() or "not computed"
                if col == "bt_undefined" and not pd.isna(r.get("bt_rho")):
                    continue
                if col == "raw_undefined" and not pd.isna(r.get("raw_rho")):
                    continue
                why.setdefault(reason, set()).add(f"{r['metric']} ({r['solver']}, {r['encoding']})")
        note += (
            " Blank cells are correlations that are not defined: "
            + "; ".join(
                f"{reason}: {', '.join(sorted(cells))}" for reason, cells in sorted(why.items())
            )
            + " (columns bt_undefined and raw_undefined)."
        )
    return (
        "Table 1. Spearman correlations of Bradley-Terry strength (bt) and raw mean "
        "final rating (raw) with SAT metrics. " + note,
        f"Erratum: published (row-position) vs corrected (hash) alignment, "
        f"{solver} x {encoding}, with the published method's asymptotic p (bt_p, raw_p, FDR) "
        "and the permutation p (perm_p). " + note,
    )


def erratum_table(t1: pd.DataFrame, solver: str, encoding: str) -> pd.DataFrame:
    """Return the published and corrected alignments side by side for one solver x encoding.

    One row per metric; columns ``<alignment>_<stat>`` for ``bt_rho``, ``bt_p``, ``perm_p``,
    ``raw_rho``, ``raw_p``, ``raw_perm_p``, ``bt_p_fdr``, ``raw_p_fdr``. The erratum compares with the
    published numbers, so its ``bt_p``/``raw_p`` are the published method's asymptotic p
    (Table 1's ``*_p_asymptotic``) and its FDR columns adjust those (:func:`bh_fdr` over the
    metrics); ``perm_p`` and ``raw_perm_p`` are Table 1's permutation ``bt_p`` and ``raw_p``. Raises ``ValueError`` when that
    solver x encoding is absent.
    """
    sel = t1[(t1["solver"] == solver) & (t1["encoding"] == encoding)]
    if sel.empty:
        raise ValueError(f"Table 1 has no rows for solver {solver!r}, encoding {encoding!r}")
    sel = sel.assign(perm_p=sel["bt_p"], raw_perm_p=sel["raw_p"])
    sel = sel.assign(bt_p=sel["bt_p_asymptotic"], raw_p=sel["raw_p_asymptotic"])
    by = sel.groupby("alignment", sort=False)
    sel = sel.assign(bt_p_fdr=by["bt_p"].transform(bh_fdr), raw_p_fdr=by["raw_p"].transform(bh_fdr))
    cols = ["bt_rho", "bt_p", "perm_p", "raw_rho", "raw_p", "raw_perm_p", "bt_p_fdr", "raw_p_fdr"]
    wide = sel.pivot(index="metric", columns="alignment", values=cols)
    order = [a for a in ("published", "corrected") if a in set(sel["alignment"])]
    wide.columns = [f"{a}_{c}" for c, a in wide.columns]
    wide = wide[[f"{a}_{c}" for a in order for c in cols]]
    present = [m for m in METRICS if m in wide.index] + [m for m in wide.index if m not in METRICS]
    return wide.loc[present].reset_index()


def raw_mean_rating(
    attempts: pd.DataFrame, rating_col: str = "final_difficulty", item_col: str = "puzzle_id"
) -> pd.Series:
    """Return the mean rating (scale 1-5) per item over attempts with a rating, index as str."""
    d = attempts.dropna(subset=[rating_col])
    out = d.groupby(d[item_col].astype(str))[rating_col].mean()
    out.index.name = item_col
    return out


def study_alignments(
    attempts: pd.DataFrame,
    metrics: pd.DataFrame,
    pool_statistics: pd.DataFrame | str | os.PathLike | None,
    encoding: str,
    log: Callable[[str], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """Return ``{alignment: aligned_metrics(...)}`` for the served puzzles of ``attempts``:
    ``published`` (the row-position join of :func:`published_alignment`, sizes of
    ``encoding``) first when a pool table (frame or CSV path; None or ``""`` = none) is given,
    then ``corrected``. ``log`` gets one line per served id of the published join."""
    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates().reset_index(drop=True)
    aligned = {}
    if isinstance(pool_statistics, str | os.PathLike) and str(pool_statistics):
        pool_statistics = pd.read_csv(pool_statistics)
    if isinstance(pool_statistics, pd.DataFrame):
        sizes = metrics[metrics["encoding"] == encoding]
        mapping = published_alignment(pool_statistics, served, sizes)
        own = served.set_index("puzzle_id")["puzzle_hash"]
        for k in sorted(mapping, key=lambda s: (len(s), s)):
            note = "own" if mapping[k] == own[k] else "another puzzle's"
            if log is not None:
                log(
                    f"published alignment: served id {k} gets {note} statistics ({mapping[k][:12]})"
                )
        aligned["published"] = aligned_metrics(metrics, served, mapping)
    elif log is not None:
        log("no published pool-ordered statistics table in the preset: corrected alignment only")
    aligned["corrected"] = aligned_metrics(metrics, served)
    return aligned


def table1_points(
    aligned: dict[str, pd.DataFrame], strengths: pd.DataFrame, raw_means: pd.Series
) -> pd.DataFrame:
    """Return the points behind Table 1: every aligned row (``alignment`` last) with the
    puzzle's BT ``strength`` and ``rank`` and its ``raw_mean_rating`` (scale 1-5)."""
    points = pd.concat([am.assign(alignment=a) for a, am in aligned.items()], ignore_index=True)
    points = points.merge(strengths[["puzzle_id", "strength", "rank"]], on="puzzle_id", how="left")
    points["raw_mean_rating"] = points["puzzle_id"].map(raw_means)
    return points
