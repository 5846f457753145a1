"""Self-reported expertise: the z-mean composite, its reliability, and its correlations.

The six pre-survey items (METHODS 6) are z-scored across participants with the population SD
(``ddof=0``), averaged over the items a participant answered, and the mean is re-standardised the
same way. This reproduces the published ``expertise_composite`` column exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

EXPERTISE_ITEMS: tuple[str, ...] = (
    "skill_nonogram",
    "skill_puzzles",
    "played_before_ord",
    "puzzle_played_frequency_ord",
    "n_nonogram_sizes",
    "n_logic_puzzles",
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


def first_component(items: pd.DataFrame, composite: pd.Series | None = None) -> dict[str, float]:
    """Return the first principal component of the z-scored items (complete participants).

    Keys: ``pc1_share`` (fraction of total variance, 0-1), ``pc1_composite_r`` (Pearson r of the
    PC1 score with ``composite`` on the same participants, sign fixed to be positive; NaN when
    no composite is given) and ``n`` (participants used). Both are NaN when the component is
    undefined (fewer than 2 complete participants, or an item constant over them).
    """
    x = _z(items.dropna())
    if len(x) < 2 or not np.isfinite(x.to_numpy()).all():
        return {"pc1_share": float("nan"), "pc1_composite_r": float("nan"), "n": int(len(x))}
    corr = np.corrcoef(x.to_numpy(), rowvar=False)
    vals, vecs = np.linalg.eigh(corr)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    share = float(vals[0] / vals.sum())
    score = pd.Series(x.to_numpy() @ vecs[:, 0], index=x.index)
    r = float("nan")
    if composite is not None:
        c = composite.reindex(x.index)
        r = abs(float(np.corrcoef(score, c)[0, 1]))
    return {"pc1_share": share, "pc1_composite_r": r, "n": int(len(x))}


def expertise_correlations(
    attempts: pd.DataFrame,
    composite: pd.Series,
    outcomes: dict[str, str] | None = None,
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return Spearman correlations of expertise with participant-level mean outcomes.

    Each outcome is averaged per participant over the attempts where it is present; participants
    with no value are dropped. Columns: ``outcome`` (label), ``column`` (attempt column), ``rho``,
    ``p`` (two-sided, scipy), ``n`` (participants).
    """
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
    return pd.DataFrame(rows, columns=["outcome", "column", "rho", "p", "n"])


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
