"""Behaviour regressions of the published analysis, recomputed from the features table.

Input: ``results/features/attempts.csv`` (schema ``features``; one row per attempt) and, for the
tables that use SAT statistics, the puzzle-level covariates of
:func:`nonolab.stats.mixed_models.study_covariates` (one frame per alignment; the paper's scale
is ``metric_transform="raw"``). Public entry points, each returning a DataFrame:

* :func:`pooled_regressions`: OLS of final difficulty on behaviour over all rated attempts, in
  the paper's specification (four behaviours) and the published file's (five, with the pause
  rate; optionally without the ratings the published file lacked);
* :func:`per_puzzle_regressions`: the same OLS per puzzle, with diagnostics and BH-FDR;
* :func:`predictor_vif`: variance inflation factors of the behaviours;
* :func:`behaviour_on_sat`: OLS of a SAT metric on behaviour at attempt level (one alignment;
  stack alignments with :func:`nonolab.stats.mixed_models.across_alignments`);
* :func:`behaviour_moderation`: outcome ~ metric x expertise mixed models for final difficulty
  and each behaviour, in the published wide layout (one alignment).

Building blocks: :func:`with_pause_rate`, :func:`ols_fit`, :func:`ols_table`,
:func:`ols_diagnostics`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.stats import shapiro
from statsmodels.regression.linear_model import RegressionResultsWrapper
from statsmodels.stats.diagnostic import het_breuschpagan
from statsmodels.stats.outliers_influence import OLSInfluence, variance_inflation_factor

from nonolab.stats.lmm import PARTICIPANT, PUZZLE
from nonolab.stats.mixed_models import METRICS, _p_fdr, moderation_models

__all__ = [
    "MODERATION_OUTCOMES",
    "OLS_PREDICTORS",
    "PUBLISHED_OLS_PREDICTORS",
    "behaviour_moderation",
    "behaviour_on_sat",
    "cluster_robust_ols",
    "ols_diagnostics",
    "ols_fit",
    "ols_table",
    "per_puzzle_regressions",
    "pooled_regressions",
    "predictor_vif",
    "with_pause_rate",
]

#: The behaviours of the paper's regressions (and of the per-puzzle and VIF tables).
OLS_PREDICTORS: tuple[str, ...] = ("pause_count", "time_to_solve_s", "error_count", "hint_count")
#: The behaviours of the published pooled and SAT-metric OLS files: the pause rate as well.
PUBLISHED_OLS_PREDICTORS: tuple[str, ...] = (
    "pause_count",
    "pause_freq_per_min",
    "time_to_solve_s",
    "error_count",
    "hint_count",
)
#: Outcomes of the behavioural moderation table: final difficulty and the four behaviours.
MODERATION_OUTCOMES: tuple[str, ...] = ("final_difficulty", *OLS_PREDICTORS)
#: Below this many complete observations a per-puzzle model is flagged ``underpowered``.
UNDERPOWERED_N = 15
#: Fewer complete observations than this: the per-puzzle model is not fitted.
MIN_OBS = 5
MODERATOR = "expertise_composite"


def with_pause_rate(attempts: pd.DataFrame) -> pd.DataFrame:
    """Return ``attempts`` with ``pause_freq_per_min``: pauses per minute of interaction,
    ``pause_count / (total_time_s / 60)`` rounded to 4 decimals as in the published feature
    table; 0 when the attempt has no interaction span (missing or zero ``total_time_s``)."""
    out = attempts.copy()
    span = pd.to_numeric(out["total_time_s"], errors="coerce").astype(float)
    rate = out["pause_count"].astype(float) / (span / 60.0)
    out["pause_freq_per_min"] = rate.where(span > 0, 0.0).round(4)
    return out


def _numeric(d: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """Complete cases of ``cols`` as float columns (nullable integers become NaN-able floats)."""
    sub = d[list(cols)].apply(pd.to_numeric, errors="coerce").astype(float)
    return sub.dropna()


def ols_fit(
    data: pd.DataFrame, outcome: str, predictors: Sequence[str]
) -> RegressionResultsWrapper:
    """Return the statsmodels OLS fit of ``outcome`` on ``predictors`` plus a constant
    (``const``) over the complete cases of those columns."""
    sub = _numeric(data, [*predictors, outcome])
    x = sm.add_constant(sub[list(predictors)], has_constant="add")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.OLS(sub[outcome], x).fit()


def ols_diagnostics(fit: RegressionResultsWrapper) -> dict[str, float]:
    """Return the published assumption checks of an OLS fit: ``breusch_pagan_p``
    (Breusch-Pagan LM test p on the model's regressors), ``shapiro_p`` (Shapiro-Wilk on the
    residuals; NaN below 3 residuals) and ``max_cooks_d`` (largest Cook's distance)."""
    resid = np.asarray(fit.resid)
    bp_p = float(het_breuschpagan(resid, fit.model.exog)[1])
    sw_p = float(shapiro(resid)[1]) if len(resid) >= 3 else float("nan")
    cooks = np.asarray(OLSInfluence(fit).cooks_distance[0])
    return {
        "breusch_pagan_p": bp_p,
        "shapiro_p": sw_p,
        "max_cooks_d": float(np.max(cooks)) if len(cooks) else float("nan"),
    }


def ols_table(
    data: pd.DataFrame,
    outcome: str,
    predictors: Sequence[str],
    *,
    terms: Sequence[str] | None = None,
    fdr: bool = True,
) -> pd.DataFrame:
    """Return one row per term of the OLS fit (:func:`ols_fit`): ``predictor``, ``coef``,
    ``se``, ``t``, ``p_value`` (outcome units per predictor unit), ``p_fdr`` (BH over the
    non-constant terms of this model when ``fdr``, else NaN), and the model's ``n``,
    ``r_squared``, ``adj_r_squared``, ``underpowered`` (n below :data:`UNDERPOWERED_N`) and
    :func:`ols_diagnostics`, repeated on every row. ``terms`` limits the rows (default: all,
    ``const`` first). With no residual degrees of freedom (complete cases at most the number
    of coefficients, e.g. a study without final ratings) every statistic is missing."""
    n_complete = len(_numeric(data, [*predictors, outcome]))
    if n_complete <= len(predictors) + 1:
        out = pd.DataFrame({"predictor": ["const", *predictors]})
        for c in ("coef", "se", "t", "p_value", "p_fdr"):
            out[c] = np.nan
        out["n"] = n_complete
        out["r_squared"] = out["adj_r_squared"] = np.nan
        out["underpowered"] = True
        for k in ("breusch_pagan_p", "shapiro_p", "max_cooks_d"):
            out[k] = np.nan
        if terms is not None:
            out = out[out["predictor"].isin(terms)]
        return out.reset_index(drop=True)
    fit = ols_fit(data, outcome, predictors)
    n = int(fit.nobs)
    out = pd.DataFrame(
        {
            "predictor": fit.params.index,
            "coef": fit.params.to_numpy(),
            "se": fit.bse.to_numpy(),
            "t": fit.tvalues.to_numpy(),
            "p_value": fit.pvalues.to_numpy(),
        }
    )
    out["p_fdr"] = np.nan
    slope = out["predictor"] != "const"
    if fdr:
        out.loc[slope, "p_fdr"] = _p_fdr(out.loc[slope, "p_value"])
    out["n"] = n
    out["r_squared"] = float(fit.rsquared)
    out["adj_r_squared"] = float(fit.rsquared_adj)
    out["underpowered"] = n < UNDERPOWERED_N
    for k, v in ols_diagnostics(fit).items():
        out[k] = v
    if terms is not None:
        out = out[out["predictor"].isin(terms)]
    return out.reset_index(drop=True)


def pooled_regressions(
    attempts: pd.DataFrame,
    *,
    outcome: str = "final_difficulty",
    ratings_missing: Sequence[str] = (),
) -> pd.DataFrame:
    """Return the pooled OLS of ``outcome`` on behaviour over all attempts with a rating, in two
    specifications stacked with a first column ``specification``:

    * ``paper``: the four behaviours of :data:`OLS_PREDICTORS` (the paper's table);
    * ``published_file``: the five of :data:`PUBLISHED_OLS_PREDICTORS` (with the pause rate of
      :func:`with_pause_rate`), the ratings of the participants in ``ratings_missing`` set
      missing (the published file was computed from data that lacked them).

    Columns as :func:`ols_table` (outcome units per behaviour unit; ``p_fdr`` over the
    behaviours of one specification) plus ``ratings_missing`` (the participants dropped).
    """
    d = with_pause_rate(attempts)
    pub = d.copy()
    pub[outcome] = pub[outcome].astype("Float64").mask(pub[PARTICIPANT].isin(ratings_missing))
    parts = []
    for name, data, preds, dropped in (
        ("paper", d, OLS_PREDICTORS, ""),
        ("published_file", pub, PUBLISHED_OLS_PREDICTORS, ";".join(ratings_missing)),
    ):
        t = ols_table(data, outcome, preds)
        t.insert(0, "specification", name)
        t["ratings_missing"] = dropped
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def _id_order(ids: pd.Series) -> list:
    """Distinct puzzle ids, numeric ids in numeric order."""
    return sorted(ids.dropna().astype(str).unique(), key=lambda s: (len(s), s))


def per_puzzle_regressions(
    attempts: pd.DataFrame,
    *,
    outcome: str = "final_difficulty",
    predictors: Sequence[str] = OLS_PREDICTORS,
    min_obs: int = MIN_OBS,
) -> pd.DataFrame:
    """Return the OLS of ``outcome`` on ``predictors`` fitted per puzzle: one row per puzzle x
    predictor (the constant left out), columns ``puzzle_id``, ``puzzle_hash`` and those of
    :func:`ols_table`. Puzzles with fewer than ``min_obs`` complete observations are skipped.
    ``p_fdr``: BH over every puzzle x predictor row of the table (the published family)."""
    parts = []
    for pid in _id_order(attempts["puzzle_id"]):
        sub = attempts[attempts["puzzle_id"].astype(str) == pid]
        if len(_numeric(sub, [*predictors, outcome])) < min_obs:
            continue
        t = ols_table(sub, outcome, predictors, terms=predictors, fdr=False)
        t.insert(0, "puzzle_hash", sub[PUZZLE].iloc[0])
        t.insert(0, "puzzle_id", pid)
        parts.append(t)
    if not parts:  # no puzzle has enough rated attempts
        cols = ["puzzle_id", "puzzle_hash", "predictor", "coef", "se", "t", "p_value", "p_fdr"]
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    out["p_fdr"] = _p_fdr(out["p_value"])
    return out


def predictor_vif(
    attempts: pd.DataFrame, predictors: Sequence[str] = OLS_PREDICTORS
) -> pd.DataFrame:
    """Return the variance inflation factor of each predictor (statsmodels
    ``variance_inflation_factor`` with a constant in the design) over the attempts complete in
    ``predictors`` (no outcome needed): columns ``predictor``, ``vif`` (unitless), ``n``."""
    sub = _numeric(attempts, predictors)
    x = sm.add_constant(sub, has_constant="add")
    cols = list(x.columns)
    vifs = [variance_inflation_factor(x.to_numpy(), cols.index(p)) for p in predictors]
    return pd.DataFrame({"predictor": list(predictors), "vif": vifs, "n": len(sub)})


def behaviour_on_sat(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    metrics: Sequence[str] = ("decisions", "conflicts"),
    predictors: Sequence[str] = PUBLISHED_OLS_PREDICTORS,
) -> pd.DataFrame:
    """Return the attempt-level OLS of each SAT metric on ``predictors`` (the published
    "behaviour -> SAT metric" regressions): one row per metric x term with a first column
    ``metric`` and those of :func:`ols_table` (metric units, e.g. decisions, per behaviour
    unit; ``p_fdr`` over one model's behaviours). ``covariates``: one alignment's
    :func:`nonolab.stats.mixed_models.metric_covariates` frame (``puzzle_hash`` + metrics),
    joined to the attempts by ``puzzle_hash``. The rows of one puzzle share its metric value, so
    the OLS p-values treat repeated puzzle values as independent (as published); beside them,
    the columns of :func:`cluster_robust_ols` by puzzle (``se_cluster``, ``t_cluster``,
    ``df_cluster``, ``p_cluster``, ``n_clusters``) and ``p_cluster_fdr`` (BH over one model's
    behaviours) give the inference that respects the six-puzzle design."""
    d = with_pause_rate(attempts).merge(
        covariates[[PUZZLE, *metrics]], on=PUZZLE, how="left", validate="many_to_one"
    )
    parts = []
    for m in metrics:
        t = ols_table(d, m, predictors)
        t.insert(0, "metric", m)
        cl = cluster_robust_ols(d, m, predictors, PUZZLE)
        t = t.merge(cl, on="predictor", how="left", validate="one_to_one")
        slope = t["predictor"] != "const"
        t["p_cluster_fdr"] = np.nan
        t.loc[slope, "p_cluster_fdr"] = _p_fdr(t.loc[slope, "p_cluster"])
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def cluster_robust_ols(
    data: pd.DataFrame, outcome: str, predictors: Sequence[str], cluster: str
) -> pd.DataFrame:
    """Return the OLS of :func:`ols_fit` with cluster-robust standard errors by ``cluster``
    (statsmodels ``cov_type="cluster"``: the CR1 sandwich with the small-sample factor
    G/(G-1) (n-1)/(n-k), and t tests on G - 1 degrees of freedom, G the number of clusters).

    One row per term: ``predictor``, ``se_cluster`` (outcome units per predictor unit),
    ``t_cluster``, ``df_cluster`` (G - 1), ``p_cluster`` (two-sided) and ``n_clusters``. Use it
    when the outcome is constant within clusters (a puzzle-level SAT metric repeated on each
    attempt of the puzzle), where the OLS p-values treat the repeats as independent. With few
    clusters (the public study's 6) the sandwich is itself noisy; the t on G - 1 df is the
    usual guard. All NaN when the complete cases leave no residual degrees of freedom or fewer
    than 2 clusters."""
    cols = [*predictors, outcome]
    sub = _numeric(data, cols)
    groups = data.loc[sub.index, cluster].astype(str)
    n_groups = int(groups.nunique())
    terms = ["const", *predictors]
    if len(sub) <= len(predictors) + 1 or n_groups < 2:
        return pd.DataFrame(
            {
                "predictor": terms,
                "se_cluster": np.nan,
                "t_cluster": np.nan,
                "df_cluster": np.nan,
                "p_cluster": np.nan,
                "n_clusters": n_groups,
            }
        )
    x = sm.add_constant(sub[list(predictors)], has_constant="add")
    codes = pd.factorize(groups)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.OLS(sub[outcome], x).fit(
            cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
        )
    return pd.DataFrame(
        {
            "predictor": fit.params.index,
            "se_cluster": fit.bse.to_numpy(),
            "t_cluster": fit.tvalues.to_numpy(),
            "df_cluster": float(n_groups - 1),
            "p_cluster": fit.pvalues.to_numpy(),
            "n_clusters": n_groups,
        }
    )


_LEVELS = {-1.0: "low", 0.0: "mean", 1.0: "high"}


def behaviour_moderation(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    outcomes: Sequence[str] = MODERATION_OUTCOMES,
    metrics: Sequence[str] = METRICS,
) -> pd.DataFrame:
    """Return ``outcome ~ metric * expertise`` with crossed random intercepts (REML;
    :func:`nonolab.stats.mixed_models.moderation_models`) for each outcome x metric, one row
    each in the published wide layout: ``coef_``/``se_``/``p_``/``ci_low_``/``ci_high_``/
    ``p_satt_`` of ``metric``, ``expertise`` and ``interaction`` (outcome units per metric unit,
    per expertise SD, per both), variance components (squared outcome units), ``n``,
    ``n_participants``, ``n_puzzles``, simple slopes at expertise -1/0/+1 SD (``slope_low``,
    ``slope_mean``, ``slope_high`` with ``se_``/``p_``/``ci_low_``/``ci_high_``), ``converged``,
    ``warnings`` and ``p_interaction_fdr`` (BH over the table's interaction tests).
    ``attempts`` must carry ``expertise_composite``
    (:func:`nonolab.stats.mixed_models.with_expertise`); ``covariates``: one alignment's
    metric covariates."""
    joined = attempts.merge(covariates, on=PUZZLE, how="left", validate="many_to_one")
    rows = []
    for y in outcomes:
        mod, slopes = moderation_models(attempts, covariates, outcome=y, metrics=metrics)
        for m in metrics:
            fx = mod[mod["metric"] == m].set_index("term")
            used = joined.dropna(subset=[y, m, MODERATOR])
            row: dict[str, object] = {"outcome": y, "metric": m}
            for name, term in (("metric", m), ("expertise", MODERATOR)):
                row |= _term_fields(fx, term, name)
            row |= _term_fields(fx, f"{m}:{MODERATOR}", "interaction")
            for v in ("var_participant", "var_puzzle", "var_residual"):
                row[v] = float(fx.loc[v, "coef"])
            row["n"] = int(fx["n"].iloc[0])
            row["n_participants"] = int(used[PARTICIPANT].nunique())
            row["n_puzzles"] = int(used[PUZZLE].nunique())
            for _, s in slopes[slopes["metric"] == m].iterrows():
                lv = _LEVELS.get(float(s["moderator_value"]), f"{s['moderator_value']:+g}")
                row[f"slope_{lv}"] = s["slope"]
                for k in ("se", "p", "ci_low", "ci_high"):
                    row[f"{k}_slope_{lv}"] = s[k]
            row["converged"] = bool(fx["converged"].iloc[0])
            row["warnings"] = fx["warnings"].iloc[0]
            rows.append(row)
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_interaction") + 1, "p_interaction_fdr", 0.0)
    out["p_interaction_fdr"] = _p_fdr(out["p_interaction"])
    return out


def _term_fields(fx: pd.DataFrame, term: str, name: str) -> dict[str, float]:
    r = fx.loc[term]
    return {
        f"coef_{name}" if name != "interaction" else "interaction": float(r["coef"]),
        f"se_{name}": float(r["se"]),
        f"p_{name}": float(r["p"]),
        f"ci_low_{name}": float(r["ci_low"]),
        f"ci_high_{name}": float(r["ci_high"]),
        f"p_satt_{name}": float(r["p_satt"]),
    }
