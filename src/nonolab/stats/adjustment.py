"""Order- and expertise-adjusted puzzle difficulty and its Spearman correlation with SAT metrics.

Final difficulty (1-5) is regressed by OLS (statsmodels) on presentation order (``C(order)``),
or on the expertise composite and order; the residual plus the grand mean of the ratings is the
adjusted rating, averaged per puzzle. The per-puzzle raw and adjusted means are then correlated
(Spearman) with each SAT metric under every alignment of the metrics to the served puzzles
(:func:`nonolab.stats.correlations.study_alignments`).

Two rating samples:

* ``published``: rated attempts that were solved. The published adjustment tables
  (``order_adjustment_model_params.csv``, ``expertise_adjustment_model_params.csv``,
  ``expertise_adjusted_puzzle_difficulty.csv``, ``stats_expertise_adjusted_difficulty_vs_sat.csv``)
  were computed from an earlier feature table without the ratings given after an unsolved
  attempt (177 of 180 ratings in the public study, all three from the one participant who
  solved none of their puzzles); this sample reproduces them.
* ``corrected``: every rated attempt, the sample of Table 1 and of the other published tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import statsmodels.formula.api as smf
from patsy import PatsyError
from statsmodels.regression.linear_model import RegressionResultsWrapper

from nonolab.stats.correlations import (
    METRICS,
    _spearman,
    spearman_permutation_p,
    study_alignments,
)
from nonolab.stats.mixed_models import with_expertise

#: Adjustment models: name -> right-hand side of the OLS formula.
MODELS: dict[str, str] = {
    "order": "C(order)",
    "expertise_order": "expertise_composite + C(order)",
}
#: The model whose residuals give the adjusted difficulty.
ADJUSTED_BY = "expertise_order"
SAMPLES: tuple[str, ...] = ("published", "corrected")
RATING = "final_difficulty"


def _id_key(s: str) -> tuple[int, str]:
    return (len(s), s)


def rating_samples(
    attempts: pd.DataFrame, rating_col: str = RATING, solved_col: str = "solved"
) -> dict[str, pd.DataFrame]:
    """Return ``{sample: rated attempts}`` (:data:`SAMPLES`): ``published`` keeps the attempts
    marked ``solved_col``, ``corrected`` every attempt with a rating. The rating is cast to
    float (scale 1-5)."""
    rated = attempts.dropna(subset=[rating_col]).copy()
    rated[rating_col] = rated[rating_col].astype(float)
    return {"published": rated[rated[solved_col].astype(bool)], "corrected": rated}


def fit_adjustment(
    data: pd.DataFrame, rhs: str, rating_col: str = RATING
) -> tuple[RegressionResultsWrapper | None, pd.Series]:
    """Return ``(fit, adjusted)``: the statsmodels OLS fit of ``rating_col ~ rhs`` on the rows
    of ``data`` with a rating and every covariate, and the adjusted rating of those rows
    (residual + mean rating of all rated rows; rating units, 1-5 scale). ``(None, empty)`` when
    no row has a rating and every covariate."""
    work = data.dropna(subset=[rating_col])
    grand = float(work[rating_col].mean()) if len(work) else float("nan")
    try:
        fit = smf.ols(f"{rating_col} ~ {rhs}", data=work).fit()
    except (ValueError, PatsyError):  # no complete row
        return None, pd.Series(dtype=float)
    return fit, fit.resid + grand


def model_table(samples: Mapping[str, pd.DataFrame], rating_col: str = RATING) -> pd.DataFrame:
    """Return the adjustment models' coefficients: one row per sample x model (:data:`MODELS`)
    x term with ``coef`` (rating units per unit of the term), ``se``, two-sided t ``p_value``
    and ``n`` (ratings in the fit); a model without any complete row has no rows."""
    rows = []
    for sample, data in samples.items():
        for model, rhs in MODELS.items():
            fit, _ = fit_adjustment(data, rhs, rating_col)
            for term in [] if fit is None else fit.params.index:
                rows.append(
                    {
                        "sample": sample,
                        "model": model,
                        "term": term,
                        "coef": float(fit.params[term]),
                        "se": float(fit.bse[term]),
                        "p_value": float(fit.pvalues[term]),
                        "n": int(fit.nobs),
                    }
                )
    return pd.DataFrame(rows, columns=["sample", "model", "term", "coef", "se", "p_value", "n"])


def adjusted_difficulty(data: pd.DataFrame, rating_col: str = RATING) -> pd.DataFrame:
    """Return one row per puzzle: ``puzzle_id``, ``puzzle_hash``, ``raw_mean_difficulty`` and
    ``n_ratings`` (all rated rows), ``adjusted_difficulty`` (mean of the :data:`ADJUSTED_BY`
    adjusted ratings; 1-5 scale), puzzles in numeric id order."""
    data = data.assign(puzzle_id=data["puzzle_id"].astype(str))
    work = data.dropna(subset=[rating_col])
    g = work.groupby("puzzle_id")
    out = pd.DataFrame(
        {
            "puzzle_hash": g["puzzle_hash"].first(),
            "raw_mean_difficulty": g[rating_col].mean(),
            "n_ratings": g[rating_col].count(),
        }
    )
    _, adj = fit_adjustment(work, MODELS[ADJUSTED_BY], rating_col)
    out["adjusted_difficulty"] = adj.groupby(work.loc[adj.index, "puzzle_id"]).mean()
    out["adjusted_difficulty"] = out["adjusted_difficulty"].astype(float)
    out = out.loc[sorted(out.index, key=_id_key)]
    return out.rename_axis("puzzle_id").reset_index()


def difficulty_vs_sat(
    points: pd.DataFrame,
    metrics: Sequence[str] = METRICS,
    exact_max_n: int = 8,
    n_perm: int = 100_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Return Spearman rho, asymptotic p and permutation p (:func:`nonolab.stats.correlations.
    spearman_permutation_p`) of the raw and adjusted per-puzzle difficulty with each metric:
    one row per metric (``sat_metric``), ``n_puzzles``. ``points``: per-puzzle rows with
    ``raw_mean_difficulty``, ``adjusted_difficulty`` and the metric columns. NaN for a metric
    constant over the puzzles."""
    rows = []
    for m in metrics:
        d = points.dropna(subset=["raw_mean_difficulty", "adjusted_difficulty", m])
        y = d[m].to_numpy(dtype=float)
        row: dict[str, object] = {"sat_metric": m}
        for kind, col in (("raw", "raw_mean_difficulty"), ("adjusted", "adjusted_difficulty")):
            x = d[col].to_numpy(dtype=float)
            rho, p = _spearman(x, y)
            row[f"{kind}_spearman_rho"], row[f"{kind}_spearman_p"] = rho, p
            row[f"{kind}_perm_p"] = spearman_permutation_p(x, y, exact_max_n, n_perm, seed)
        row["n_puzzles"] = len(d)
        rows.append(row)
    return pd.DataFrame(rows)


def study_adjustment(
    attempts: pd.DataFrame,
    sat_metrics: pd.DataFrame,
    pool_statistics: pd.DataFrame | str | os.PathLike | None,
    *,
    solver: str,
    encoding: str,
    metrics: Sequence[str] = METRICS,
    exact_max_n: int = 8,
    n_perm: int = 100_000,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return ``(models, difficulty, vs_sat)`` for one study.

    ``attempts``: the ``features`` table (the expertise composite is computed from its items by
    :func:`nonolab.stats.mixed_models.with_expertise`); ``sat_metrics``: ``results/sat/
    metrics.csv`` rows, restricted to ``solver`` x ``encoding``; ``pool_statistics``: the
    published pool-ordered statistics table or None (then the ``corrected`` alignment only).
    ``models``: :func:`model_table`. ``difficulty``: :func:`adjusted_difficulty` per alignment x
    sample with the aligned metrics (``source_hash`` = whose statistics). ``vs_sat``:
    :func:`difficulty_vs_sat` per alignment x sample.
    """
    sel = sat_metrics[(sat_metrics["solver"] == solver) & (sat_metrics["encoding"] == encoding)]
    if sel.empty:
        raise ValueError(f"no SAT metrics for solver {solver!r} x encoding {encoding!r}")
    samples = rating_samples(with_expertise(attempts))
    aligned = study_alignments(attempts, sel, pool_statistics, encoding, log)
    diff, vs = [], []
    for alignment, am in aligned.items():
        am = am[["puzzle_id", "source_hash", *metrics]]
        for sample, data in samples.items():
            pts = adjusted_difficulty(data).merge(am, on="puzzle_id", how="left")
            pts.insert(0, "sample", sample)
            pts.insert(0, "alignment", alignment)
            diff.append(pts)
            t = difficulty_vs_sat(pts, metrics, exact_max_n, n_perm, seed)
            t.insert(0, "sample", sample)
            t.insert(0, "alignment", alignment)
            vs.append(t)
    if log is not None:
        for sample, data in samples.items():
            log(f"sample {sample}: {len(data)} ratings, {data['participant_id'].nunique()} raters")
    return (
        model_table(samples),
        pd.concat(diff, ignore_index=True),
        pd.concat(vs, ignore_index=True),
    )


__all__ = [
    "ADJUSTED_BY",
    "MODELS",
    "SAMPLES",
    "adjusted_difficulty",
    "difficulty_vs_sat",
    "fit_adjustment",
    "model_table",
    "rating_samples",
    "study_adjustment",
]
