"""How the moderation conclusion (final difficulty ~ SAT metric x expertise) moves from the
published analysis to the corrected one, step by step.

Steps, per metric (the interaction term only):

1. ``published (as printed)``: the published file (he2026: ``stats_moderation_expertise.csv``);
2. ``published reproduced``: ``moderation_raw.csv``, alignment ``published`` (the authors'
   row-position join of the SAT statistics, recomputed);
3. ``corrected alignment``: ``moderation_raw.csv``, alignment ``corrected`` (joined by puzzle
   content hash);
4. ``maximal model``: ``moderation_maximal.csv`` (corrected alignment; maximal random effects,
   Kenward-Roger, else Satterthwaite, small-sample test);
5. ``ordinal model``: ``moderation_ordinal.csv`` (corrected alignment; logit CLMM, Laplace).

Steps 1-2 are absent for a study without published files; a missing table drops its step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from nonolab.stats.correlations import bh_fdr

__all__ = ["STEPS", "moderation_conclusion"]

STEPS: tuple[str, ...] = (
    "published (as printed)",
    "published reproduced",
    "corrected alignment",
    "maximal model",
    "ordinal model",
)
COLUMNS = ["metric", "step", "coef", "p", "p_fdr", "significant_at_05", "note"]


def _fmt(p: float) -> str:
    return "NaN" if not np.isfinite(p) else f"{p:.3g}"


def _published_rows(published: pd.DataFrame, metrics: Sequence[str]) -> list[dict]:
    pub = published.set_index("predictor").reindex(list(metrics))
    fdr = bh_fdr(pub["p_interaction"])
    return [
        {
            "metric": m,
            "step": STEPS[0],
            "coef": float(pub.loc[m, "interaction"]),
            "p": float(pub.loc[m, "p_interaction"]),
            "p_fdr": float(q),
            "note": "Wald z of the LMM (rating units per count x SD); p_fdr: BH over the "
            "metrics computed here (not printed)",
        }
        for m, q in zip(metrics, fdr, strict=True)
    ]


def _raw_rows(raw: pd.DataFrame, alignment: str, step: str, metrics, moderator) -> list[dict]:
    sel = raw[
        (raw["alignment"] == alignment) & (raw["term"].isin([f"{m}:{moderator}" for m in metrics]))
    ]
    sel = sel.set_index("metric").reindex(list(metrics))
    fdr = bh_fdr(sel["p"])
    return [
        {
            "metric": m,
            "step": step,
            "coef": float(sel.loc[m, "coef"]),
            "p": float(sel.loc[m, "p"]),
            "p_fdr": float(q),
            "note": f"Wald z of the LMM, as published (rating units per count x SD); "
            f"Satterthwaite p {_fmt(float(sel.loc[m, 'p_satt']))}; p_fdr: BH over the metrics",
        }
        for m, q in zip(metrics, fdr, strict=True)
    ]


def _maximal_rows(maximal: pd.DataFrame, metrics: Sequence[str]) -> list[dict]:
    rows = []
    sel = maximal[maximal["alignment"] == "corrected"]
    for m in metrics:
        cand = sel[sel["metric"] == m]
        if cand.empty:
            continue
        if "kept" in cand.columns and cand["kept"].astype(bool).any():
            cand = cand[cand["kept"].astype(bool)]
        ok = cand[~cand["singular"].astype(bool)]
        r = (ok if len(ok) else cand).iloc[0]
        kr = np.isfinite(float(r["p_kr"]))
        p = float(r["p_kr"] if kr else r["p_satt"])
        test = "Kenward-Roger" if kr else "Satterthwaite"
        rows.append(
            {
                "metric": m,
                "step": STEPS[3],
                "coef": float(r["coef"]),
                "p": p,
                "p_fdr": float(r["p_fdr"]),
                "note": f"structure {r['structure']}; {test} t; LRT p {_fmt(float(r['lrt_p']))}"
                + ("; singular fit" if bool(r["singular"]) else ""),
            }
        )
    return rows


def _ordinal_rows(ordinal: pd.DataFrame, metrics: Sequence[str]) -> list[dict]:
    sel = ordinal[ordinal["alignment"] == "corrected"].set_index("metric")
    return [
        {
            "metric": m,
            "step": STEPS[4],
            "coef": float(sel.loc[m, "coef"]),
            "p": float(sel.loc[m, "p"]),
            "p_fdr": float(sel.loc[m, "p_fdr"]),
            "note": f"logit CLMM (log-odds per covariate unit x SD), Wald z; LRT p "
            f"{_fmt(float(sel.loc[m, 'lrt_p']))}"
            + ("" if bool(sel.loc[m, "converged"]) else "; not converged"),
        }
        for m in metrics
        if m in sel.index
    ]


def moderation_conclusion(
    raw: pd.DataFrame | None,
    ordinal: pd.DataFrame | None,
    maximal: pd.DataFrame | None = None,
    published: pd.DataFrame | None = None,
    *,
    metrics: Sequence[str] = ("decisions", "propagations", "conflicts"),
    moderator: str = "expertise_composite",
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, str]:
    """Return (table, summary sentence) of the metric x expertise interaction per step.

    ``raw``: ``moderation_raw.csv`` (``alignment``, ``metric``, ``term``, ``coef``, ``p``,
    ``p_satt``); ``ordinal``: ``moderation_ordinal.csv``; ``maximal``: ``moderation_maximal.csv``
    (``alignment``, ``metric``, ``structure``, ``coef``, ``p_satt``, ``p_kr``, ``lrt_p``,
    ``p_fdr``, ``singular``; per metric the row marked ``kept`` when that column is there, else the
    first non-singular row, else the first row);
    ``published``: the published moderation file (``predictor``, ``interaction``,
    ``p_interaction``). Table: one row per metric x step (:data:`STEPS` order), columns
    ``metric``, ``step``, ``coef`` (the interaction; units in ``note``), ``p``, ``p_fdr``
    (Benjamini-Hochberg over the metrics of the step), ``significant_at_05`` (``p_fdr`` <
    ``alpha``), ``note``. The sentence states the corrected conclusion (the last step present)
    against the published one.
    """
    rows: list[dict] = []
    if published is not None:
        rows += _published_rows(published, metrics)
    if raw is not None:
        if (raw["alignment"] == "published").any():
            rows += _raw_rows(raw, "published", STEPS[1], metrics, moderator)
        rows += _raw_rows(raw, "corrected", STEPS[2], metrics, moderator)
    if maximal is not None:
        rows += _maximal_rows(maximal, metrics)
    if ordinal is not None:
        rows += _ordinal_rows(ordinal, metrics)
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "significant_at_05"])
    table.insert(5, "significant_at_05", table["p_fdr"] < alpha)
    order = {s: i for i, s in enumerate(STEPS)}
    table["_m"] = table["metric"].map({m: i for i, m in enumerate(metrics)})
    table["_s"] = table["step"].map(order)
    table = table.sort_values(["_m", "_s"], kind="stable").drop(columns=["_m", "_s"])
    return table.reset_index(drop=True), summary_sentence(table, metrics, alpha)


def summary_sentence(table: pd.DataFrame, metrics: Sequence[str], alpha: float = 0.05) -> str:
    """Return one sentence: the interaction's significance (BH p < ``alpha``) per metric in the
    last step of ``table``, against the first step (the published one when present)."""
    if table.empty:
        return "No moderation results."
    present = [s for s in STEPS if (table["step"] == s).any()]
    first, last = present[0], present[-1]

    def sig(step: str) -> list[str]:
        t = table[table["step"] == step]
        return [m for m in metrics if bool(t.loc[t["metric"] == m, "significant_at_05"].any())]

    def describe(ms: list[str]) -> str:
        if not ms:
            return "none of the metrics"
        if len(ms) == len(metrics):
            return "all metrics"
        return "only " + " and ".join(ms)

    last_t = table[table["step"] == last].set_index("metric")
    ps = ", ".join(
        f"{m} {_fmt(float(last_t.loc[m, 'p_fdr']))}" for m in metrics if m in last_t.index
    )
    verdict = (
        f"The SAT metric x expertise interaction on final difficulty is significant "
        f"(BH-adjusted p < {alpha:g}) for {describe(sig(last))} in the {last} step "
        f"(adjusted p: {ps})"
    )
    if first == last:
        return verdict + "."
    verdict += f", against {describe(sig(first))} in the {first} step"
    change = next((s for s in present if sig(s) != sig(first)), None)
    if change is None:
        return verdict + "."
    return verdict + f"; the change comes at the {change} step."
