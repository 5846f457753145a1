"""Headline results in sentences, computed from a results folder's tables.

Every function takes the results folder (the one holding ``ingest/``, ``tables/``, ...) and
returns plain-text sentences (a list; empty when the tables it reads are not there). Nothing
here is HTML: the report escapes every sentence when it writes it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from nonolab.core.tables import restore_cells
from nonolab.study.schemas import read_csv


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Return a CSV table with every cell as text, exactly as written: no NA parsing (an id
    ``NA`` or ``null`` stays that string), empty cells as ``""``."""
    return restore_cells(pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False))


def _num(value: Any) -> float:
    """Return ``value`` as a float (NaN for an empty or non-numeric cell)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def fmt(value: Any, digits: int = 3) -> str:
    """Return a number for a sentence: a whole number with thousands separators (``29,156``),
    else ``digits`` significant digits, below ``10**-digits`` in scientific notation
    (``2.10e-05``); text unchanged, an empty value ``"n/a"``."""
    x = _num(value)
    if math.isnan(x):
        return str(value) if str(value).strip() else "n/a"
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) < 10**-(digits):
        return f"{x:.{max(digits - 1, 1)}e}"
    if abs(x) >= 10**6:
        return f"{x:.{digits}g}"
    text = f"{x:.{digits}g}"
    return f"{x:.1f}" if "e" in text else text


def fmt_p(value: Any) -> str:
    """Return a p-value for a sentence (``p = 0.0123``); a p-value that rounds to 0 is written
    as ``p < 1e-300`` rather than ``p = 0``."""
    x = _num(value)
    if math.isnan(x):
        return "p n/a"
    if x <= 0:
        return "p < 1e-300"
    return f"p = {fmt(x)}"


#: p-value columns -> how a sentence names them
P_NAMES = {"p_satt": "Satterthwaite p", "p": "p"}


def _load_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def table1_sentences(root: Path, main_solver: str, main_encoding: str) -> list[str]:
    """Sentences on Table 1 (``tables/table1_spearman.csv``): the corrected alignment's Spearman
    rho between the Bradley-Terry difficulty and each metric of the main solver and encoding,
    with the permutation p named by its method (``p_method``: exact for few puzzles) and the
    asymptotic p labelled beside it (tables from before ``p_method``: ``perm_p`` and ``bt_p``);
    then the strongest correlation over every solver and encoding."""
    path = root / "tables" / "table1_spearman.csv"
    if not path.is_file():
        return []
    t = read_table(path)
    if "alignment" in t.columns:
        t = t[t["alignment"] == "corrected"]
    if t.empty:
        return []
    main = t[(t.get("solver") == main_solver) & (t.get("encoding") == main_encoding)]
    n = t["n"].iloc[0] if "n" in t.columns else "?"
    parts = []
    for _, row in main.iterrows():
        rho = _num(row.get("bt_rho"))
        if math.isnan(rho):
            parts.append(f"{row['metric']}: not defined (the metric is the same for every puzzle)")
            continue
        if "p_method" in row and str(row["p_method"]).strip():
            # bt_p is the permutation p (exact for few puzzles); the asymptotic one beside it
            p_text = f"{row['p_method'].split(' (')[0]} {fmt_p(row.get('bt_p'))}"
            if "bt_p_asymptotic" in row:
                p_text += f"; asymptotic {fmt_p(row.get('bt_p_asymptotic'))}"
        elif not math.isnan(_num(row.get("perm_p"))):
            p_text = (
                f"exact permutation {fmt_p(row.get('perm_p'))}; asymptotic {fmt_p(row.get('bt_p'))}"
            )
        else:
            p_text = fmt_p(row.get("bt_p"))
        parts.append(f"{row['metric']} rho = {fmt(rho)} ({p_text})")
    out = []
    if parts:
        out.append(
            f"Table 1: over {n} puzzles, the Bradley-Terry difficulty's Spearman correlation "
            f"with {main_solver} ({main_encoding} encoding) is " + "; ".join(parts) + "."
        )
    rhos = t.assign(_rho=t["bt_rho"].map(_num)).dropna(subset=["_rho"])
    if not rhos.empty:
        best = rhos.loc[rhos["_rho"].abs().idxmax()]
        out.append(
            f"The strongest correlation over {len(rhos)} solver, encoding and metric "
            f"combinations is rho = {fmt(best['_rho'])} ({best.get('solver', '?')}, "
            f"{best.get('encoding', '?')}, {best.get('metric', '?')})."
        )
    if "n" in t.columns and _num(n) < 10:
        out.append(f"With {n} puzzles every puzzle-level correlation is descriptive.")
    return out


def ranking_sentences(root: Path) -> list[str]:
    """Sentences on the Bradley-Terry ranking (``tables/bt_strengths.csv`` and
    ``tables/bt_lr_test.json``): the likelihood-ratio test of equal difficulty and the hardest
    and easiest puzzle with their strengths and intervals."""
    path = root / "tables" / "bt_strengths.csv"
    if not path.is_file():
        return []
    t = read_table(path)
    out = []
    lr = _load_json(root / "tables" / "bt_lr_test.json")
    if lr is not None:
        out.append(
            f"The Bradley-Terry model of {fmt(lr.get('n_comparisons'))} pairwise comparisons "
            f"tells the puzzles' difficulties apart: likelihood-ratio chi2 = {fmt(lr.get('chi2'))}"
            f" on {lr.get('df')} df, {fmt_p(lr.get('p'))}."
        )
    t = t.assign(_s=t["strength"].map(_num)).dropna(subset=["_s"]).sort_values("_s")
    if len(t) >= 2:
        hard, easy = t.iloc[-1], t.iloc[0]

        def one(row: pd.Series) -> str:
            ci = ""
            if "ci_low" in row and "ci_high" in row:
                ci = f", interval {fmt(row['ci_low'])} to {fmt(row['ci_high'])}"
            return f"puzzle {row['puzzle_id']} (strength {fmt(row['_s'])}{ci})"

        out.append(
            f"Ranked by difficulty over {len(t)} puzzles, the hardest is {one(hard)} and the "
            f"easiest {one(easy)}."
        )
    return out


def models_sentences(root: Path) -> list[str]:
    """Sentences on the mixed models: for each behaviour (``tables/behaviour_models.csv``,
    corrected alignment) how many SAT metrics have a slope with Satterthwaite p below 0.05;
    the moderation conclusion over the model steps (``tables/moderation_conclusion.csv``,
    :func:`nonolab.stats.conclusion.summary_sentence`), else the moderation models'
    interaction terms (``tables/moderation.csv``)."""
    out = []
    path = root / "tables" / "behaviour_models.csv"
    if path.is_file():
        t = read_table(path)
        if "alignment" in t.columns:
            t = t[t["alignment"] == "corrected"]
        pcol = "p_satt" if "p_satt" in t.columns else "p"
        pname = P_NAMES.get(pcol, pcol)
        for behaviour, g in t.groupby("behaviour", sort=False):
            ps = g[pcol].map(_num)
            sig = g[ps < 0.05]
            if sig.empty:
                out.append(
                    f"Mixed models of {behaviour}: no SAT metric has a slope with "
                    f"{pname} < 0.05 ({len(g)} metrics)."
                )
            else:
                terms = ", ".join(
                    f"{r['metric']} (coefficient {fmt(r['coef'])}, {fmt_p(r[pcol])})"
                    for _, r in sig.iterrows()
                )
                out.append(
                    f"Mixed models of {behaviour}: {len(sig)} of {len(g)} SAT metrics have a "
                    f"slope with {pname} < 0.05: {terms}."
                )
    conclusion = root / "tables" / "moderation_conclusion.csv"
    path = root / "tables" / "moderation.csv"
    if conclusion.is_file():
        from nonolab.stats.conclusion import summary_sentence

        t = read_csv(conclusion)
        if not t.empty and {"step", "metric", "p_fdr", "significant_at_05"} <= set(t.columns):
            out.append(summary_sentence(t, list(dict.fromkeys(t["metric"]))))
    elif path.is_file():
        t = read_table(path)
        if "alignment" in t.columns:
            t = t[t["alignment"] == "corrected"]
        inter = t[t["term"].str.contains(":", regex=False)] if "term" in t.columns else t[:0]
        if not inter.empty:
            pcol = "p_satt" if "p_satt" in inter.columns else "p"
            terms = "; ".join(
                f"{r['metric']} x expertise: coefficient {fmt(r['coef'])}, {fmt_p(r[pcol])}"
                for _, r in inter.iterrows()
            )
            out.append(
                f"Moderation of final difficulty by expertise ({P_NAMES.get(pcol, pcol)}): {terms}."
            )
    return out


def pause_sentences(root: Path) -> list[str]:
    """Sentences on the pause threshold (``pauses/threshold.json``): the threshold used and
    where it comes from, the number of gaps, the converged fit's check (how far the crossing
    moved, agreement over random starts), the BIC improvements, and any degenerate component
    or fallback the record reports."""
    rec = _load_json(root / "pauses" / "threshold.json")
    if rec is None:
        return []
    used = rec.get("threshold_used_s")
    source = rec.get("threshold_source", "fitted")
    crossing = rec.get("threshold_s")
    fitted = ""
    if crossing is not None and used is not None and abs(float(crossing) - float(used)) > 1e-9:
        fitted = f"; the fitted crossing is {fmt(crossing, 4)} s"
    out = [
        f"Pause threshold used: {fmt(used, 4)} s (source: {source}{fitted}), from a "
        f"{len(rec.get('weights') or [])}-component Gaussian mixture of the log gaps between "
        f"interactions within puzzles ({fmt(rec.get('n_gaps'))} gaps)."
    ]
    fit = rec.get("converged_fit") or {}
    check = fit.get("check") or {}
    bits = []
    if "converged" in fit:
        bits.append("converged" if fit["converged"] else "NOT converged")
    if fit.get("threshold_s") is not None:
        bits.append(f"its crossing is {fmt(fit['threshold_s'], 4)} s")
    if "crossing_moved_s" in check:
        bits.append(f"the crossing moved by {fmt(check['crossing_moved_s'])} s in the last step")
    rs = fit.get("random_state_check") or {}
    if "agree" in rs:
        n = len(rs.get("crossings_s") or [])
        bits.append(
            f"{n} random starts {'agree' if rs['agree'] else 'DISAGREE'} "
            f"(largest difference {fmt(rs.get('max_abs_diff_s'))} s)"
        )
    dbic = fit.get("delta_bic_vs_1") or rec.get("delta_bic_vs_1") or {}
    if dbic:
        bits.append(
            "BIC improvement over one component: "
            + ", ".join(f"{k} components {fmt(v)}" for k, v in sorted(dbic.items()))
        )
    if bits:
        out.append("Converged fit (EM run to convergence): " + "; ".join(bits) + ".")
    out += _degenerate_sentences(rec)
    order = rec.get("order_dependence") or {}
    for name, label in (
        ("converged", "converged fit"),
        ("published_settings", "published-settings fit"),
    ):
        cross = (order.get(name) or {}).get("crossing_s") or {}
        if "min" in cross:
            lo, hi = fmt(cross["min"], 4), fmt(cross["max"], 4)
            moves = f"stays at {lo} s" if lo == hi else f"ranges from {lo} to {hi} s"
            out.append(
                f"Data order: over {order.get('n_orders')} random orders of the same gaps the "
                f"{label}'s crossing {moves} (file order: {fmt(cross.get('input_order'), 4)} s)."
            )
    return out


def _degenerate_sentences(rec: Mapping[str, Any]) -> list[str]:
    """Sentences for the mixture components that collapsed onto a spike of identical gaps
    (``degenerate_components``) and the fallback threshold (``threshold_fallback``)."""
    out = []
    for d in rec.get("degenerate_components") or []:
        out.append(
            f"WARNING: mixture component {d.get('component')} (mean {fmt(d.get('mean_s'))} s, "
            f"weight {fmt(d.get('weight'))}) collapsed onto a spike of identical gaps: "
            f"{fmt(100 * float(d.get('spike_share') or 0))}% of its gaps equal "
            f"{fmt(d.get('spike_s'))} s ({', '.join(d.get('reasons') or [])})."
        )
    fb = rec.get("threshold_fallback")
    if fb:
        if fb.get("ok"):
            out.append(
                f"Fallback threshold {fmt(fb.get('threshold_s'), 4)} s: {fb.get('rule')}; "
                f"{fmt(fb.get('n_removed'))} gaps left out."
            )
        else:
            out.append(f"The fallback found no threshold: {fb.get('why')}.")
    return out


def errata_sentences(root: Path) -> list[str]:
    """Sentences summarising ``tables/errata.csv`` (:func:`nonolab.stats.errata.errata_summary`):
    how many published numbers change, how many per kind of change and per kind of cause, how
    many conclusions change, and which (quantity and cause), first twelve. Empty when the table
    is missing or has no rows (a study without a published analysis). A table written before
    the categorical columns existed gives its row count and says so."""
    path = root / "tables" / "errata.csv"
    if not path.is_file():
        return []
    t = read_csv(path)
    if t.empty:
        return []
    out = [f"{len(t)} published numbers change."]
    if not {"change_category", "cause_evidence"} <= set(t.columns):
        return out + [
            "This errata table has no change categories: rerun the errata stage "
            "(`nonolab run`) for the summary by kind of change and cause."
        ]
    from nonolab.stats.errata import errata_summary

    summary = errata_summary(t)

    def counts(d: Mapping[str, int]) -> str:
        return "; ".join(f"{k}: {v}" for k, v in d.items())

    out.append(f"By kind of change: {counts(summary['change_category'])}.")
    out.append(f"By cause: {counts(summary['cause_evidence'])}.")
    changed = t[t["change_category"].isin(["significance", "direction"])]
    n = summary["conclusions_changed"]
    if n == 0:
        out.append("No conclusion changes (no change of significance or of direction).")
        return out
    more = summary.get("unadjusted_only") or 0
    out.append(
        f"{n} numbers change a conclusion (significance or direction under the errata's "
        "inference rule)"
        + (f"; {more} more cross 0.05 only without the multiplicity adjustment" if more else "")
        + ":"
    )
    for _, row in changed.head(12).iterrows():
        cause = str(row.get("cause", "")).split(":")[0]
        out.append(
            f"{row['quantity']}: {row['change_category']} changes "
            f"(published {fmt(row.get('published'))}, corrected {fmt(row.get('corrected'))}); "
            f"cause: {cause} ({row['cause_evidence']})."
        )
    if len(changed) > 12:
        out.append(f"... and {len(changed) - 12} more: see the errata table.")
    return out


__all__ = [
    "errata_sentences",
    "fmt",
    "fmt_p",
    "models_sentences",
    "pause_sentences",
    "ranking_sentences",
    "read_table",
    "table1_sentences",
]
