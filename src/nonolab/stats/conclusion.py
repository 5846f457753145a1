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

__all__ = ["STEPS", "conclusion_sentences", "moderation_conclusion"]

STEPS: tuple[str, ...] = (
    "published (as printed)",
    "published reproduced",
    "corrected alignment",
    "maximal model",
    "ordinal model",
)
COLUMNS = [
    "metric",
    "step",
    "coef",
    "p",
    "p_fdr",
    "significant_at_05",
    "df_small_sample",
    "p_small_sample",
    "lrt_p",
    "note",
]


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
            "df_small_sample": np.nan,
            "p_small_sample": np.nan,
            "lrt_p": np.nan,
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
            "df_small_sample": float(sel.loc[m, "df_satt"]) if "df_satt" in sel else np.nan,
            "p_small_sample": float(sel.loc[m, "p_satt"]),
            "lrt_p": np.nan,
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
                "df_small_sample": float(r["df_kr"] if kr else r["df_satt"]),
                "p_small_sample": p,
                "lrt_p": float(r["lrt_p"]),
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
            "df_small_sample": np.nan,
            "p_small_sample": np.nan,
            "lrt_p": float(sel.loc[m, "lrt_p"]),
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
    ``metric``, ``step``, ``coef`` (the interaction; units in ``note``), ``p`` (the step's
    Wald test; Kenward-Roger, else Satterthwaite, for the maximal model), ``p_fdr``
    (Benjamini-Hochberg over the metrics of the step), ``significant_at_05`` (``p_fdr`` <
    ``alpha``), ``df_small_sample``/``p_small_sample`` (Satterthwaite for the linear steps,
    Kenward-Roger or Satterthwaite for the maximal model; NaN otherwise), ``lrt_p``
    (likelihood-ratio test of the interaction: ML for the maximal model, the ordinal model's;
    NaN otherwise), ``note``. The sentence states the corrected conclusion (the last step
    present) against the published one; :func:`conclusion_sentences` gives the nuanced
    statement from the table alone.
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
    table = table[COLUMNS]
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


def _p(p: float) -> str:
    """A p-value as written in the sentences: 3 decimals, or "< 0.001"."""
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def _join(items: Sequence[str], conjunction: str = "and") -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def conclusion_sentences(
    table: pd.DataFrame, metrics: Sequence[str] | None = None, alpha: float = 0.05
) -> str:
    """Return one or two sentences stating the corrected moderation result with its nuance,
    computed from ``table`` (``results/tables/moderation_conclusion.csv``, the columns of
    :func:`moderation_conclusion`) alone: which metrics' interaction is significant unadjusted
    under the corrected join (Wald p of the linear model, with the ordinal model's p and the
    maximal model's ML likelihood-ratio p), which corrections remove it (BH over the metrics;
    the maximal model's small-sample test), and the published p-values. ``metrics``: the order
    (default: as in the table); p-values at 3 decimals."""
    if metrics is None:
        metrics = list(dict.fromkeys(table["metric"]))
    by = {step: t.set_index("metric") for step, t in table.groupby("step", sort=False)}
    corr = by.get(STEPS[2])
    if corr is None:
        return "No corrected moderation results."
    present = [m for m in metrics if m in corr.index]
    sig = [m for m in present if float(corr.loc[m, "p"]) < alpha]
    rest = [m for m in present if m not in sig]
    maximal, ordinal = by.get(STEPS[3]), by.get(STEPS[4])

    def val(step: pd.DataFrame | None, m: str, col: str) -> float:
        if step is None or m not in step.index or col not in step.columns:
            return float("nan")
        return float(step.loc[m, col])

    parts = []
    for m in sig:
        bits = [f"linear mixed model p {_p(val(corr, m, 'p'))}"]
        if np.isfinite(val(ordinal, m, "p")):
            bits.append(f"ordinal model p {_p(val(ordinal, m, 'p'))}")
        if np.isfinite(val(maximal, m, "lrt_p")):
            bits.append(
                f"maximal model's ML likelihood-ratio test p {_p(val(maximal, m, 'lrt_p'))}"
            )
        parts.append(f"{m} ({', '.join(bits)})")
    lead = "Joined to the right puzzles, the SAT metric x expertise interaction on final difficulty"
    if sig:
        first = f"{lead} is significant at {alpha:g} before any correction for {_join(parts)}"
        if rest:
            first += ", not for " + _join((f"{m} (p {_p(val(corr, m, 'p'))})" for m in rest), "or")
    else:
        first = (
            f"{lead} is significant for none of the metrics even before correction ("
            + (", ".join(f"{m} p {_p(val(corr, m, 'p'))}" for m in present))
            + ")"
        )
    removes, keeps = [], []
    for m in sig:
        q = val(corr, m, "p_fdr")
        (removes if q >= alpha else keeps).append(
            f"Benjamini-Hochberg correction over the {len(present)} metrics (adjusted p for "
            f"{m} {_p(q)})"
        )
        pk, dfk = val(maximal, m, "p_small_sample"), val(maximal, m, "df_small_sample")
        if np.isfinite(pk):
            test = "Kenward-Roger" if "Kenward-Roger" in str(_note(maximal, m)) else "small-sample"
            (removes if pk >= alpha else keeps).append(
                f"the maximal model's {test} test (p {_p(pk)}, df {dfk:.1f})"
            )
    second = ""
    if removes:
        second = "It disappears with " + _join(removes, "or with")
        if keeps:
            second += ", but survives " + _join(keeps)
    elif keeps:
        second = "It survives " + _join(keeps)
    pub = by.get(STEPS[0])
    if pub is not None:
        ps = [m for m in metrics if m in pub.index]
        n_sig = sum(float(pub.loc[m, "p"]) < alpha for m in ps)
        count = f"all {n_sig}" if n_sig == len(ps) else f"{n_sig} of {len(ps)}"
        published = (
            f"as published (row-position join), {count} were significant ("
            + ", ".join(f"{m} p {_p(float(pub.loc[m, 'p']))}" for m in ps)
            + ")"
        )
        second = f"{second}; {published}" if second else published[0].upper() + published[1:]
    return f"{first}." + (f" {second}." if second else "")


def _note(step: pd.DataFrame | None, m: str) -> str:
    """The ``note`` of metric ``m`` in a step's rows ("" when absent)."""
    if step is None or m not in step.index or "note" not in step.columns:
        return ""
    return str(step.loc[m, "note"])
