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
from nonolab.core.undefined import (
    BOUNDARY_FIT,
    NOT_CONNECTED,
    NOT_DEFINED,
    as_float,
    undefined_text,
)
from nonolab.study.schemas import read_csv

#: a model or test is headlined as a finding only when it rests on at least this many attempts
#: and participants; below that the headline gives the sample and calls the estimates
#: descriptive (docs/decisions.md, "Undefined statistics carry their reason")
MIN_FINDING_ATTEMPTS = 20
MIN_FINDING_PARTICIPANTS = 5


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Return a CSV table with every cell as text, exactly as written: no NA parsing (an id
    ``NA`` or ``null`` stays that string), empty cells as ``""``."""
    return restore_cells(pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False))


def _num(value: Any) -> float:
    """Return ``value`` as a float (NaN for None, an empty or non-numeric cell)."""
    return as_float(value)


def fmt(value: Any, digits: int = 3) -> str:
    """Return a number for a sentence: a whole number with thousands separators (``29,156``),
    else ``digits`` significant digits, below ``10**-digits`` in scientific notation
    (``2.10e-05``); text unchanged; a missing value (None, empty, NaN, infinite) is
    ``"not defined"``, never "None" or "nan"."""
    x = _num(value)
    if not math.isfinite(x):
        if value is None or isinstance(value, float) or not str(value).strip():
            return NOT_DEFINED
        text = str(value).strip()
        return NOT_DEFINED if text.lower() in _MISSING_WORDS else text
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


#: cell texts that mean "missing" (written as "not defined")
_MISSING_WORDS = {"nan", "none", "null", "na", "n/a", "inf", "-inf", "+inf"}


def sample_text(attempts: Any = None, participants: Any = None, puzzles: Any = None) -> str:
    """Return the sample behind a claim in words (``12 attempts by 3 participants on 5
    puzzles``); parts that are unknown are left out."""
    parts = []
    for value, word in (
        (attempts, "attempts"),
        (participants, "participants"),
        (puzzles, "puzzles"),
    ):
        x = _num(value)
        if math.isfinite(x):
            parts.append(f"{fmt(x)} {word}")
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    joins = [" by ", " on "] if parts[0].endswith("attempts") else [" over ", " and "]
    text = parts[0]
    for join, part in zip(joins, parts[1:], strict=False):
        text += join + part
    return text


def fmt_p(value: Any, reason: str | None = None) -> str:
    """Return a p-value for a sentence (``p = 0.0123``); a p-value that rounds to 0 is written
    as ``p < 1e-300`` rather than ``p = 0``; a missing one (or any with a ``reason``) as
    ``p not defined (reason)``."""
    x = _num(value)
    if (reason or "").strip() or not math.isfinite(x):
        return "p " + undefined_text(reason)
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
        reason = str(row.get("bt_undefined") or "").strip()
        if reason or not math.isfinite(rho):
            if not reason:  # a table from before the reason column: the strengths may say
                reason = _strengths_reason(root)
            parts.append(f"{row['metric']}: {undefined_text(reason)}")
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
    undefined = {p.split(": ", 1)[1] for p in parts if ": " in p}
    if parts and len(undefined) == 1 and all(": " in p for p in parts):
        reason = undefined.pop()
        names = [p.split(": ", 1)[0] for p in parts]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        parts = [f"{reason} for {listed}"]
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


def _strengths_reason(root: Path) -> str:
    """Return why the Bradley-Terry strengths are missing (``tables/bt_strengths.csv``'s
    ``status``), or ``""`` when they are not or the table does not say."""
    path = root / "tables" / "bt_strengths.csv"
    if not path.is_file():
        return ""
    t = read_table(path)
    status = " ".join(t["status"].unique()) if "status" in t.columns else ""
    return NOT_CONNECTED if "connected" in status or "undefined" in status else ""


def _comparison_sample(root: Path, lr: Mapping[str, Any] | None) -> tuple[str, float]:
    """Return the sample of the Bradley-Terry model in words (participant pairs, participants
    and puzzles: ``ranking/bt_comparisons.csv``, else the LR record's ``n_comparisons``) and
    the number of participants (NaN when unknown)."""
    path = root / "ranking" / "bt_comparisons.csv"
    if path.is_file():
        c = read_table(path)
        pairs = c["weight"].map(_num).sum() if "weight" in c.columns else len(c)
        people = c["participant_id"].nunique() if "participant_id" in c.columns else None
        items = (
            len(set(c["winner"]) | set(c["loser"]))
            if {"winner", "loser"} <= set(c.columns)
            else None
        )
        text = f"{fmt(pairs)} pairwise comparisons"
        if people is not None:
            text += f" by {fmt(people)} participants"
        if items is not None:
            text += f" of {fmt(items)} puzzles"
        return text, float(people) if people is not None else math.nan
    n = _num((lr or {}).get("n_comparisons"))
    words = f"{fmt(n)} pairwise comparisons" if math.isfinite(n) else "its pairwise comparisons"
    return words, math.nan


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
        sample, people = _comparison_sample(root, lr)
        chi2 = _num(lr.get("chi2"))
        if math.isfinite(chi2):
            small = too_small(math.nan, people)
            out.append(
                f"The Bradley-Terry model of {sample}: the likelihood-ratio test of equal "
                f"difficulty gives chi2 = {fmt(chi2)} on {fmt(lr.get('df'))} df, "
                f"{fmt_p(lr.get('p'))}"
                + (
                    f" (descriptive only: a finding needs at least {MIN_FINDING_PARTICIPANTS} "
                    "participants)."
                    if small
                    else "."
                )
            )
        else:
            reason = str(lr.get("undefined") or "").strip() or _strengths_reason(root)
            out.append(
                f"The Bradley-Terry model of {sample}: the likelihood-ratio test of equal "
                f"difficulty is {undefined_text(reason)}."
            )
    t = t.assign(_s=t["strength"].map(_num)).dropna(subset=["_s"]).sort_values("_s")
    if len(t) >= 2:
        hard, easy = t.iloc[-1], t.iloc[0]

        def one(row: pd.Series) -> str:
            ci = ""
            if "ci_low" in row and "ci_high" in row:
                lo, hi = _num(row["ci_low"]), _num(row["ci_high"])
                if math.isfinite(lo) and math.isfinite(hi):
                    ci = f", interval {fmt(lo)} to {fmt(hi)}"
                else:
                    ci = ", interval not defined (no usable bootstrap resample)"
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
            out.append(_behaviour_sentence(str(behaviour), g, pcol, pname))
    conclusion = root / "tables" / "moderation_conclusion.csv"
    path = root / "tables" / "moderation.csv"
    if conclusion.is_file():
        from nonolab.stats.conclusion import summary_sentence

        t = read_csv(conclusion)
        n, people = math.nan, math.nan
        if path.is_file():
            n, people, _ = _sample_of(read_table(path))
        if too_small(n, people):
            out.append(
                f"Moderation of final difficulty by expertise ({sample_text(n, people)}): too "
                f"few to test (a finding needs at least {MIN_FINDING_ATTEMPTS} attempts by "
                f"{MIN_FINDING_PARTICIPANTS} participants); the estimates are descriptive only."
            )
        elif not t.empty and {"step", "metric", "p_fdr", "significant_at_05"} <= set(t.columns):
            sentence = summary_sentence(t, list(dict.fromkeys(t["metric"])))
            sample = sample_text(n, people)
            out.append(f"{sentence} (Sample: {sample}.)" if sample else sentence)
    elif path.is_file():
        t = read_table(path)
        if "alignment" in t.columns:
            t = t[t["alignment"] == "corrected"]
        inter = t[t["term"].str.contains(":", regex=False)] if "term" in t.columns else t[:0]
        n, people, _ = _sample_of(t)
        if not inter.empty and too_small(n, people):
            out.append(
                f"Moderation of final difficulty by expertise ({sample_text(n, people)}): too "
                f"few to test (a finding needs at least {MIN_FINDING_ATTEMPTS} attempts by "
                f"{MIN_FINDING_PARTICIPANTS} participants); the estimates are descriptive only."
            )
        elif not inter.empty:
            pcol = "p_satt" if "p_satt" in inter.columns else "p"
            terms = "; ".join(
                f"{r['metric']} x expertise: coefficient {fmt(r['coef'])}, {fmt_p(r[pcol])}"
                for _, r in inter.iterrows()
            )
            out.append(
                f"Moderation of final difficulty by expertise ({P_NAMES.get(pcol, pcol)}): {terms}."
            )
    return out


def _sample_of(g: pd.DataFrame) -> tuple[float, float, float]:
    """Return (attempts, participants, puzzles) behind the model rows ``g`` (their ``n``,
    ``n_participants``, ``n_puzzles`` columns; NaN when absent)."""

    def most(col: str) -> float:
        return g[col].map(_num).max() if col in g.columns else math.nan

    return most("n"), most("n_participants"), most("n_puzzles")


def too_small(attempts: float, participants: float) -> bool:
    """Whether a test on this sample is too small to headline as a finding: fewer than
    :data:`MIN_FINDING_ATTEMPTS` attempts or :data:`MIN_FINDING_PARTICIPANTS` participants
    (an unknown count does not count as small)."""
    return (math.isfinite(attempts) and attempts < MIN_FINDING_ATTEMPTS) or (
        math.isfinite(participants) and participants < MIN_FINDING_PARTICIPANTS
    )


def _p_reason(row: Mapping[str, Any], pcol: str) -> str:
    """Return why the p of a model row is missing: a boundary fit when its warnings say the
    fit is singular, else that the test could not be computed; ``""`` when it is there."""
    if math.isfinite(_num(row.get(pcol))):
        return ""
    warnings = str(row.get("warnings") or "")
    if "boundary" in warnings or "singular" in warnings:
        return BOUNDARY_FIT
    if str(row.get("converged", "")).strip().lower() == "false":
        return "the fit did not converge"
    return "the test could not be computed"


def _behaviour_sentence(behaviour: str, g: pd.DataFrame, pcol: str, pname: str) -> str:
    """Return the headline of the mixed models of one behaviour: the sample, then the SAT
    metrics whose slope has ``pcol`` below 0.05, the metrics whose p is not defined (with the
    reason), or, for a sample below the minimum, that the estimates are descriptive."""
    n, people, puzzles = _sample_of(g)
    sample = sample_text(n, people, puzzles)
    head = f"Mixed models of {behaviour}" + (f" ({sample})" if sample else "")
    if too_small(n, people):
        return (
            f"{head}: too few to test a slope (a finding needs at least "
            f"{MIN_FINDING_ATTEMPTS} attempts by {MIN_FINDING_PARTICIPANTS} participants); "
            f"the {len(g)} metrics' estimates in the table are descriptive only."
        )
    ps = g[pcol].map(_num)
    sig = g[ps < 0.05]
    undefined = [r for _, r in g.iterrows() if not math.isfinite(_num(r.get(pcol)))]
    tail = ""
    if undefined:
        reasons: dict[str, list[str]] = {}
        for r in undefined:
            reasons.setdefault(_p_reason(r, pcol), []).append(str(r["metric"]))
        tail = (
            " "
            + "; ".join(
                f"{pname} {undefined_text(why)} for {', '.join(ms)}" for why, ms in reasons.items()
            )
            + "."
        )
    if sig.empty:
        tested = len(g) - len(undefined)
        return (
            f"{head}: no SAT metric has a slope with {pname} < 0.05 ({tested} of {len(g)} "
            f"metrics tested).{tail}"
        )
    terms = ", ".join(
        f"{r['metric']} (coefficient {fmt(r['coef'])}, {fmt_p(r[pcol])})" for _, r in sig.iterrows()
    )
    return (
        f"{head}: {len(sig)} of {len(g)} SAT metrics have a slope with {pname} < 0.05: "
        f"{terms}.{tail}"
    )


def pause_sentences(root: Path) -> list[str]:
    """Sentences on the pause threshold (``pauses/threshold.json``): the pause stage's own
    sentences when the record has them (``threshold_sentences``: the threshold chain), else the
    threshold used and where it comes from; the number of gaps, the converged fit's check (how
    far the crossing moved, agreement over random starts), the BIC improvements, any
    degenerate component or fallback the record reports, and the range of each fit's crossing
    over the data-order check's random gap orders (``pauses/order_dependence.json``, when the
    check ran)."""
    rec = _load_json(root / "pauses" / "threshold.json")
    if rec is None:
        return []
    used = rec.get("threshold_used_s")
    source = rec.get("threshold_source", "fitted")
    crossing = rec.get("threshold_s")
    fitted = ""
    if math.isfinite(_num(crossing)) and abs(_num(crossing) - _num(used)) > 1e-9:
        fitted = f"; the fitted crossing is {fmt(crossing, 4)} s"
    given = [str(x) for x in rec.get("threshold_sentences") or [] if str(x).strip()]
    if given:  # the pause stage's own sentences (its threshold chain), with the sample
        out = given + [
            f"The pause model was fitted to {fmt(rec.get('n_gaps'))} gaps between "
            "interactions within puzzles."
        ]
    else:
        out = [
            f"Pause threshold used: {fmt(used, 4)} s (source: {source}{fitted}), from a "
            f"{len(rec.get('weights') or [])}-component Gaussian mixture of the log gaps "
            f"between interactions within puzzles ({fmt(rec.get('n_gaps'))} gaps)."
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
    if not given:  # the chain's sentences say how a collapsed component was handled
        out += _degenerate_sentences(rec)
    from nonolab.stats.pauses import order_check_summary  # scikit-learn: only when needed

    # the data-order check's own record (rule pause_order), beside threshold.json
    order = order_check_summary(_load_json(root / "pauses" / "order_dependence.json")) or {}
    for name, label in (
        ("converged", "converged fit"),
        ("published_settings", "published-settings fit"),
    ):
        fit = order.get(name) or {}
        cross = fit.get("crossing_s") or {}
        if "min" in cross:
            lo, hi = fmt(cross["min"], 4), fmt(cross["max"], 4)
            moves = f"stays at {lo} s" if lo == hi else f"ranges from {lo} to {hi} s"
            n = fit.get("n_orders", order.get("n_orders"))  # each fit's own count of orders
            out.append(
                f"Data order: over {n} random orders of the same gaps the "
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
    """Sentences summarising ``tables/errata.csv``: the counts of
    :func:`nonolab.stats.errata.errata_summary` in the README's words
    (:func:`~nonolab.stats.errata.errata_summary_text`: published numbers that change, verdicts
    judged, conclusion changes of the paper's stated conclusions, other significance flips),
    the rows by kind of change and by cause, then each verdict whose significance or direction
    changes with its evidence rows, first twelve. Empty when the table is missing or has no
    rows (a study without a published analysis). A table written before the categorical columns
    existed gives its row count and says so."""
    path = root / "tables" / "errata.csv"
    if not path.is_file():
        return []
    t = read_csv(path)
    if t.empty:
        return []
    if not {"change_category", "cause_evidence", "verdict"} <= set(t.columns):
        return [
            f"{len(t)} published numbers change.",
            "This errata table has no verdicts or change categories: rerun the errata stage "
            "(`nonolab run`) for the summary by verdict, kind of change and cause.",
        ]
    from nonolab.stats.errata import errata_summary, errata_summary_text, verdict_table

    summary = errata_summary(t)

    def counts(d: Mapping[str, int]) -> str:
        return "; ".join(f"{k}: {v}" for k, v in d.items())

    out = [errata_summary_text(summary)]
    out.append(f"Rows by kind of change: {counts(summary['change_category'])}.")
    out.append(f"Rows by cause: {counts(summary['cause_evidence'])}.")
    verdicts = verdict_table(t)
    changed = verdicts[verdicts["category"].isin(["significance", "direction"])]
    for _, row in changed.head(12).iterrows():
        stated = " (a conclusion the paper states)" if row["conclusion"] else ""
        out.append(
            f"{row['verdict']}: {row['category']} changes{stated}; evidence: {row['quantities']}."
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
