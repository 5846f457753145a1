"""Pause-threshold sensitivity (METHODS 5 and 9): one table of how pause-based results change
with the pause threshold.

Pause counts are recomputed from the within-puzzle gaps (``results/pauses/gaps.csv``) at each
threshold with the one pause counter, :func:`nonolab.study.features.pause_counts`; then, per
threshold, pause summaries over attempts, Spearman correlations of pause counts with the rating,
the expertise composite and the Bradley-Terry strength, and the ``pauses ~ metric`` crossed
mixed models (:func:`nonolab.stats.mixed_models.behaviour_models`) under every alignment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.stats.lmm import PARTICIPANT, _single_thread_blas
from nonolab.stats.mixed_models import METRICS, across_alignments, behaviour_models
from nonolab.study.features import pause_counts

KEYS = [PARTICIPANT, "order"]
#: Columns copied from :func:`nonolab.stats.mixed_models.behaviour_models` per metric.
MODEL_COLUMNS = (
    "coef",
    "se",
    "p",
    "p_fdr",
    "ci_low",
    "ci_high",
    "df_satt",
    "p_satt",
    "var_participant",
    "var_puzzle",
    "converged",
    "warnings",
)


def sensitivity_thresholds(
    configured: Sequence[float], record: Mapping[str, object]
) -> list[float]:
    """Return the thresholds of the sensitivity table (seconds, ascending, distinct): the
    ``configured`` ones plus ``threshold_used_s`` and the fitted ``threshold_s`` of the pauses
    record (``results/pauses/threshold.json``) when it has them (finite)."""
    extra = [record.get(k) for k in ("threshold_used_s", "threshold_s")]
    found = {float(v) for v in extra if isinstance(v, int | float) and np.isfinite(v)}
    return sorted(set(map(float, configured)) | found)


def attempt_pause_counts(
    gaps: pd.DataFrame, attempts: pd.DataFrame, threshold_s: float
) -> np.ndarray:
    """Return the pause count (gaps >= ``threshold_s`` seconds) of each row of ``attempts``, in
    its order (0 for an attempt without such a gap), by
    :func:`nonolab.study.features.pause_counts`."""
    counts = pause_counts(gaps, threshold_s)
    idx = pd.MultiIndex.from_frame(attempts[KEYS])
    return counts.reindex(idx).fillna(0).astype("int64").to_numpy()


def check_pause_counts(attempts: pd.DataFrame, gaps: pd.DataFrame, threshold_s: float) -> None:
    """Raise ``ValueError`` unless the gaps at ``threshold_s`` (the threshold the features stage
    used) give every attempt its ``pause_count`` (a check that the two inputs belong together)."""
    recount = attempt_pause_counts(gaps, attempts, threshold_s)
    bad = attempts.loc[recount != attempts["pause_count"].to_numpy(), KEYS]
    if len(bad):
        raise ValueError(
            f"pause counts recomputed from the gaps at {threshold_s} s differ from the attempts' "
            f"pause_count for {len(bad)} attempts, e.g. {bad.head(3).to_dict('records')}"
        )


def _spearman(x: pd.Series, y: pd.Series) -> tuple[float, float]:
    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def _summary(
    a: pd.DataFrame,
    gaps: pd.DataFrame,
    thr: float,
    rating_col: str,
    expertise: pd.Series | None,
    strengths: pd.DataFrame | None,
) -> dict[str, float]:
    """Threshold-level columns for attempts ``a`` whose ``pause_count`` is at ``thr``."""
    pc = a["pause_count"]
    row: dict[str, float] = {
        "threshold_s": float(thr),
        "n_attempts": len(a),
        "mean_pauses": float(pc.mean()),
        "median_pauses": float(pc.median()),
        "sd_pauses": float(pc.std(ddof=1)),
        "total_pauses": int(pc.sum()),
        "share_gaps_pause": float((gaps["gap_s"] >= thr).mean()) if len(gaps) else float("nan"),
    }
    r = a.dropna(subset=[rating_col])
    row["rho_rating"], row["p_rating"] = _spearman(r["pause_count"], r[rating_col])
    row["rho_expertise"] = row["p_expertise"] = float("nan")
    if expertise is not None:
        m = a.groupby(PARTICIPANT)["pause_count"].mean()
        j = pd.concat([m, expertise.rename("x")], axis=1, join="inner").dropna()
        row["rho_expertise"], row["p_expertise"] = _spearman(j["pause_count"], j["x"])
    row["rho_bt"] = row["p_bt"] = float("nan")
    if strengths is not None:
        m = a.groupby(a["puzzle_id"].astype(str))["pause_count"].mean()
        s = strengths.assign(puzzle_id=strengths["puzzle_id"].astype(str))
        j = s.set_index("puzzle_id")["strength"].to_frame().join(m, how="inner")
        row["rho_bt"], row["p_bt"] = _spearman(j["pause_count"], j["strength"])
    return row


@_single_thread_blas
def threshold_sensitivity(
    attempts: pd.DataFrame,
    gaps: pd.DataFrame,
    covariates: Mapping[str, pd.DataFrame],
    thresholds: Sequence[float],
    *,
    expertise: pd.Series | None = None,
    strengths: pd.DataFrame | None = None,
    rating_col: str = "final_difficulty",
    metrics: Sequence[str] = METRICS,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Return the pause-threshold sensitivity table: one row per (alignment, threshold, metric).

    ``attempts``: one row per attempt (``participant_id``, ``order``, ``puzzle_id``,
    ``puzzle_hash``, ``rating_col``); ``gaps``: ``results/pauses/gaps.csv``; ``covariates``:
    alignment -> :func:`nonolab.stats.mixed_models.metric_covariates` frame; ``thresholds`` in
    seconds; ``expertise``: composite per participant (SD units); ``strengths``: ``puzzle_id``,
    ``strength`` (Bradley-Terry). At each threshold the pause counts are recomputed from
    ``gaps``. Threshold-level columns (repeated over metrics): ``n_attempts``, ``mean_pauses``,
    ``median_pauses``, ``sd_pauses``, ``total_pauses`` (pauses per attempt), ``share_gaps_pause``
    (fraction of gaps that are pauses); Spearman ``rho_rating``/``p_rating`` (attempt pause count
    vs rating), ``rho_expertise``/``p_expertise`` (participant mean vs expertise; NaN without
    it), ``rho_bt``/``p_bt`` (puzzle mean vs strength; NaN without it). Per metric: the
    ``pauses ~ metric`` crossed LMM (:data:`MODEL_COLUMNS`: coefficient in pauses per covariate
    unit, Wald and Satterthwaite p, BH ``p_fdr`` over the metrics at that threshold).
    """
    counted = []
    for thr in thresholds:
        a = attempts.copy()
        a["pause_count"] = attempt_pause_counts(gaps, a, thr)
        counted.append((a, _summary(a, gaps, thr, rating_col, expertise, strengths)))
        if log is not None:
            log(f"threshold {thr:g} s: mean pauses {counted[-1][1]['mean_pauses']:.3f}")

    def models(cov: pd.DataFrame) -> pd.DataFrame:
        rows = []
        for a, summ in counted:
            fits = behaviour_models(
                a, cov, behaviours={"pause_count": "pauses"}, metrics=metrics, n_boot=0
            )
            for _, f in fits.iterrows():
                rows.append({**summ, "metric": f["metric"], **{c: f[c] for c in MODEL_COLUMNS}})
        return pd.DataFrame(rows)

    return across_alignments(covariates, models)


def sensitivity_table(
    attempts: pd.DataFrame,
    gaps: pd.DataFrame,
    record: Mapping[str, object],
    configured: Sequence[float],
    covariates: Mapping[str, pd.DataFrame],
    **kwargs: object,
) -> tuple[pd.DataFrame, list[float]]:
    """Return ``(table, thresholds)`` of the threshold-sensitivity rule.

    Checks that ``gaps`` give ``attempts`` their pause counts at the threshold the features
    stage used (``record["threshold_used_s"]``, :func:`check_pause_counts`), takes the
    thresholds of :func:`sensitivity_thresholds` (``configured`` plus the used and fitted
    ones, seconds) and returns :func:`threshold_sensitivity` (``kwargs`` passed on) at them.
    """
    check_pause_counts(attempts, gaps, float(record["threshold_used_s"]))  # type: ignore[arg-type]
    thresholds = sensitivity_thresholds(configured, record)
    table = threshold_sensitivity(attempts, gaps, covariates, thresholds, **kwargs)  # type: ignore[arg-type]
    return table, thresholds
