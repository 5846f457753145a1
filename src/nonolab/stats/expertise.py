"""Self-reported expertise: the z-mean composite, its reliability, and its correlations.

The six pre-survey items (METHODS 6) are z-scored across participants with the population SD
(``ddof=0``), averaged over the items a participant answered, and the mean is re-standardised the
same way. This reproduces the published ``expertise_composite`` column exactly.

The diagnostics (Cronbach's alpha, the principal components of the z-scored items, the item
correlations and PC1 loadings) use the participants who answered every item. The published
script z-scored over all participants and filled a missing z-score with 0 instead; with every
item answered, as in the public study, both are the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from nonolab.stats.correlations import bh_fdr
from nonolab.study.ingest import EXPERTISE_ITEMS

#: Rows of the diagnostics table (:func:`diagnostics`), in the published order.
DIAGNOSTICS: tuple[str, ...] = (
    "cronbach_alpha",
    "pca1_var_explained",
    "pca2_var_explained",
    "n_participants",
    "n_missing_any_dim",
    "composite_pca_spearman_rho",
    "composite_pca_spearman_p",
)

#: Participant-level outcomes correlated with expertise: output label -> attempt column.
DEFAULT_OUTCOMES: dict[str, str] = {
    "mean_time_to_solve_s": "time_to_solve_s",
    "mean_pause_count": "pause_count",
    "mean_error_count": "error_count",
    "mean_hint_count": "hint_count",
    "mean_final_difficulty": "final_difficulty",
}


def participant_items(
    attempts: pd.DataFrame,
    items: Sequence[str] = EXPERTISE_ITEMS,
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return one row per participant (index ``participant_col``) with the expertise items.

    Items are constant within a participant in the attempts table; the first non-missing value
    is taken. Raises ``ValueError`` if an item column is missing or varies within a participant.
    """
    missing = [c for c in items if c not in attempts.columns]
    if missing:
        raise ValueError(f"attempts table lacks expertise item column(s): {missing}")
    g = attempts.groupby(participant_col, sort=True)[list(items)]
    nun = g.nunique(dropna=True)
    varying = [c for c in items if (nun[c] > 1).any()]
    if varying:
        raise ValueError(f"expertise item(s) {varying} vary within a participant")
    return g.first().astype(float)


def _z(x: pd.DataFrame | pd.Series) -> pd.DataFrame | pd.Series:
    return (x - x.mean()) / x.std(ddof=0)


def expertise_composite(items: pd.DataFrame) -> pd.Series:
    """Return the z-mean expertise composite per participant (unitless, mean 0, population SD 1).

    ``items``: one row per participant, one column per item (NaN = not answered).
    """
    z = _z(items)
    m = z.mean(axis=1, skipna=True)
    out = _z(m)
    out.name = "expertise_composite"
    return out


def cronbach_alpha(items: pd.DataFrame, standardise: bool = True) -> float:
    """Return Cronbach's alpha (unitless) over participants with every item answered.

    With ``standardise`` (default) the items are z-scored first, which is the appropriate alpha
    for a composite of z-scores (items on 1-10 and 0-3 scales).
    """
    x = items.dropna()
    if standardise:
        x = _z(x)
    k = x.shape[1]
    if k < 2 or len(x) < 2:
        raise ValueError("Cronbach's alpha needs at least 2 items and 2 complete participants")
    item_var = x.var(ddof=1).sum()
    total_var = x.sum(axis=1).var(ddof=1)
    return float(k / (k - 1) * (1 - item_var / total_var))


def principal_components(
    items: pd.DataFrame, composite: pd.Series | None = None
) -> tuple[np.ndarray, pd.Series, pd.Series] | None:
    """Return the principal components of the z-scored items (participants with every item).

    ``(shares, loadings, score)``: the fraction of total variance of each component (0-1, in
    component order), the PC1 loading of each item (unit-length eigenvector, index = items) and
    the PC1 score of each participant (index = participants). PC1's sign is chosen so that the
    score correlates non-negatively with ``composite`` (else with the items' mean z-score), as
    in the published diagnostics. scikit-learn ``PCA`` on the z-scores (population SD). None
    when undefined: fewer than 2 complete participants, or an item constant over them.
    """
    from sklearn.decomposition import PCA

    x = _z(items.dropna())
    if len(x) < 2 or not np.isfinite(x.to_numpy()).all():
        return None
    pca = PCA().fit(x.to_numpy())
    score = pca.transform(x.to_numpy())[:, 0]
    ref = x.mean(axis=1) if composite is None else composite.reindex(x.index)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.corrcoef(score, ref.to_numpy(dtype=float))[0, 1]
    sign = -1.0 if r < 0 else 1.0
    return (
        np.asarray(pca.explained_variance_ratio_, dtype=float),
        pd.Series(sign * pca.components_[0], index=items.columns, name="pca1_loading"),
        pd.Series(sign * score, index=x.index, name="pc1"),
    )


def first_component(items: pd.DataFrame, composite: pd.Series | None = None) -> dict[str, float]:
    """Return the first principal component of the z-scored items (complete participants).

    Keys: ``pc1_share`` (fraction of total variance, 0-1), ``pc1_composite_r`` (Pearson r of the
    PC1 score with ``composite`` on the same participants, sign fixed to be positive; NaN when
    no composite is given) and ``n`` (participants used). Both are NaN when the component is
    undefined (fewer than 2 complete participants, or an item constant over them).
    """
    n = int(len(items.dropna()))
    pcs = principal_components(items, composite)
    if pcs is None:
        return {"pc1_share": float("nan"), "pc1_composite_r": float("nan"), "n": n}
    shares, _, score = pcs
    r = float("nan")
    if composite is not None:
        r = abs(float(np.corrcoef(score, composite.reindex(score.index))[0, 1]))
    return {"pc1_share": float(shares[0]), "pc1_composite_r": r, "n": n}


def diagnostics(items: pd.DataFrame, composite: pd.Series) -> pd.DataFrame:
    """Return the expertise diagnostics table: columns ``metric`` (:data:`DIAGNOSTICS`) and
    ``value``.

    Cronbach's alpha of the z-scored items; the variance shares of PC1 and PC2 (0-1); the
    participant count and the count with at least one item missing; Spearman rho and two-sided
    p of the composite with the PC1 score (complete participants). Undefined values are NaN.
    """
    from scipy import stats

    try:
        alpha = cronbach_alpha(items)
    except ValueError:
        alpha = float("nan")
    pcs = principal_components(items, composite)
    shares = np.full(2, np.nan)
    rho = p = float("nan")
    if pcs is not None:
        shares[: min(2, len(pcs[0]))] = pcs[0][:2]
        c = composite.reindex(pcs[2].index)
        if len(c) > 1 and np.ptp(c.to_numpy()) > 0 and np.ptp(pcs[2].to_numpy()) > 0:
            res = stats.spearmanr(c, pcs[2])
            rho, p = float(res.statistic), float(res.pvalue)
    values = [alpha, *shares, len(items), int(items.isna().any(axis=1).sum()), rho, p]
    return pd.DataFrame({"metric": list(DIAGNOSTICS), "value": np.asarray(values, dtype=float)})


def loadings(items: pd.DataFrame, composite: pd.Series) -> pd.DataFrame:
    """Return one row per item: ``dimension``, ``pca1_loading`` (PC1 eigenvector entry, sign as
    in :func:`principal_components`) and ``corr_with_composite`` (Pearson r of the item with the
    composite), over the participants with every item; NaN where undefined."""
    x = items.dropna()
    pcs = principal_components(items, composite)
    load = pcs[1] if pcs is not None else pd.Series(np.nan, index=items.columns)
    c = composite.reindex(x.index)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = [x[d].corr(c) if len(x) > 1 else float("nan") for d in items.columns]
    return pd.DataFrame(
        {
            "dimension": list(items.columns),
            "pca1_loading": load.reindex(items.columns).to_numpy(dtype=float),
            "corr_with_composite": np.asarray(r, dtype=float),
        }
    )


def dimension_correlations(items: pd.DataFrame) -> pd.DataFrame:
    """Return the Pearson correlation matrix of the items (participants with every item) as a
    table: a first column ``dimension`` (row item), then one column per item."""
    corr = items.dropna().corr()
    return corr.rename_axis("dimension").reset_index()


def expertise_correlations(
    attempts: pd.DataFrame,
    composite: pd.Series,
    outcomes: dict[str, str] | None = None,
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return Spearman correlations of expertise with participant-level mean outcomes.

    Each outcome is averaged per participant over the attempts where it is present; participants
    with no value are dropped. Columns: ``outcome`` (label), ``column`` (attempt column), ``rho``,
    ``p`` (two-sided, scipy), ``n`` (participants) and ``p_fdr`` (Benjamini-Hochberg over the
    outcomes of the table, as the published ``spearman_p_fdr``).
    """
    from scipy import stats

    outcomes = DEFAULT_OUTCOMES if outcomes is None else outcomes
    rows = []
    for label, col in outcomes.items():
        if col not in attempts.columns:
            raise ValueError(f"attempts table lacks outcome column {col!r}")
        means = attempts.groupby(participant_col)[col].mean().dropna()
        both = pd.concat([composite.rename("x"), means.rename("y")], axis=1, join="inner").dropna()
        res = stats.spearmanr(both["x"], both["y"])
        rows.append(
            {
                "outcome": label,
                "column": col,
                "rho": float(res.statistic),
                "p": float(res.pvalue),
                "n": int(len(both)),
            }
        )
    out = pd.DataFrame(rows, columns=["outcome", "column", "rho", "p", "n"])
    out["p_fdr"] = bh_fdr(out["p"])
    return out


def reliability(items: pd.DataFrame, composite: pd.Series) -> dict[str, object]:
    """Return the reliability record of the expertise items (``expertise_reliability.json``
    without provenance): Cronbach's ``alpha`` (z-scored items, complete participants), the
    first principal component's variance share ``pc1_share`` and its correlation with the
    composite ``pc1_composite_r``, participant counts and the item names. When alpha is
    undefined (fewer than 2 items or complete participants) ``alpha`` is None and
    ``alpha_status`` says why."""
    pc1 = first_component(items, composite)
    try:
        alpha, status = cronbach_alpha(items), None
    except ValueError as e:
        alpha, status = None, f"undefined: {e}"
    return {
        "alpha": alpha,
        **({"alpha_status": status} if status else {}),
        "alpha_definition": "Cronbach's alpha of the z-scored items (complete participants)",
        "pc1_share": pc1["pc1_share"],
        "pc1_composite_r": pc1["pc1_composite_r"],
        "n_participants": int(len(items)),
        "n_complete": pc1["n"],
        "items": list(items.columns),
    }


def expertise_tables(attempts: pd.DataFrame) -> dict[str, object]:
    """Return every expertise table of one attempts table (``features`` schema): ``outcomes``
    (:func:`expertise_correlations`), ``reliability`` (:func:`reliability` record),
    ``diagnostics``, ``loadings`` and ``dimension_correlations``; the composite is computed once."""
    items = participant_items(attempts)
    comp = expertise_composite(items)
    return {
        "outcomes": expertise_correlations(attempts, comp),
        "reliability": reliability(items, comp),
        "diagnostics": diagnostics(items, comp),
        "loadings": loadings(items, comp),
        "dimension_correlations": dimension_correlations(items),
    }
