"""Errata: published numbers that change, built from the workflow's own outputs.

One row per published number whose corrected value differs from it at the published precision:
``quantity``, ``published`` (read from the study's published files), ``reproduced_as_published``
(nonolab's reproduction of the published method), ``corrected``, the categorical judgement
``change_category`` / ``cause_evidence`` with the verdict columns behind it, and the free-text
``cause`` and ``evidence``.

The inference rule (one for every row; docs/decisions.md, "Errata verdicts"): a row's
significance, as published and as corrected, is judged with the inference the corrected
analysis uses for that model (:class:`Rule`: Satterthwaite df for the mixed models, whose metric
terms are puzzle-level; cluster-robust SEs by puzzle for OLS of a puzzle-level outcome; the
Spearman test over the puzzles; the OLS t of a rating-level OLS), on the as-published
(reproduced) and the corrected fit, unadjusted and Benjamini-Hochberg adjusted within a stated
family (the metrics of a table, the behaviours of a model set). :func:`change_category` then
gives ``significance`` (the adjusted verdict at ``alpha`` changes), ``direction`` (the sign
changes of an effect significant, adjusted, both ways) or ``estimate`` (the number changes, no
stated conclusion does); ``cause_evidence`` is ``error``, ``analysis choice`` or ``not
reproducible``. :func:`errata_summary` counts them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from nonolab.stats.correlations import bh_fdr
from nonolab.study.schemas import read_csv

#: The inference rule in words (for the report and the README).
INFERENCE_RULE = (
    "Every erratum is judged by one rule: its significance, as published and as corrected, is "
    "the corrected analysis's own test for that model (Satterthwaite t for the mixed models, "
    "whose SAT-metric terms are puzzle-level; cluster-robust standard errors by puzzle for OLS "
    "of a SAT metric on behaviour; the Spearman test over the puzzles; the OLS t of the "
    "rating-level adjustment models; Mann-Whitney for the themes), applied to the reproduced "
    "published fit and to the corrected fit, without and with Benjamini-Hochberg adjustment "
    "within a stated family (the metrics of a table, the behaviour x metric models of a table, "
    "one model's behaviours or terms). A significance change is one of the adjusted verdict; a "
    "direction change is a sign change of an effect significant both ways; every other row "
    "changes an estimate only."
)

#: Values of ``change_category``, strongest first.
CHANGE_CATEGORIES: tuple[str, ...] = ("significance", "direction", "estimate")
#: Values of ``cause_evidence``.
CAUSE_EVIDENCE: tuple[str, ...] = ("error", "analysis choice", "not reproducible")

#: Verdict columns (:class:`Verdict`), in table order.
VERDICT_COLUMNS = [
    "inference",
    "family",
    "effect_published",
    "effect_corrected",
    "p_published_rule",
    "p_corrected_rule",
    "p_published_adjusted",
    "p_corrected_adjusted",
    "significant_published",
    "significant_corrected",
    "significant_published_adjusted",
    "significant_corrected_adjusted",
]

#: Columns of ``results/tables/errata.csv``: ``verdict`` names the model term and inference a
#: row is evidence for (empty for descriptive rows); ``conclusion`` the registered stated
#: conclusion (:data:`STATED_CONCLUSIONS`) that verdict belongs to (empty: none).
ERRATA_COLUMNS = [
    "quantity",
    "verdict",
    "conclusion",
    "published",
    "reproduced_as_published",
    "corrected",
    "change_category",
    "cause_evidence",
    *VERDICT_COLUMNS,
    "cause",
    "evidence",
]

_FLOAT_COLUMNS = {"published", "reproduced_as_published", "corrected"} | {
    c for c in VERDICT_COLUMNS if c.startswith(("effect_", "p_"))
}

CAUSE_TABLE1 = (
    "row-position join: the pool-ordered SAT statistics were joined to the served puzzles by "
    "row position, so served ids 2-5 carry another puzzle's statistics"
)
CAUSE_EM = (
    "EM stopped early: scikit-learn's default tolerance (1e-3) ends the mixture fit before the "
    "likelihood optimum"
)
CAUSE_BOOTSTRAP = (
    "participant bootstrap weighting: a participant drawn k times weighs k squared in the "
    "published resampling instead of k"
)
CAUSE_FDR = (
    "FDR family: the published Benjamini-Hochberg correction leaves out the themes tested on "
    "fewer responses than the family minimum; every theme tested is in the family here"
)


def empty_errata() -> pd.DataFrame:
    """Return an errata table without rows (the columns of :data:`ERRATA_COLUMNS`)."""
    return pd.DataFrame(
        {c: pd.Series(dtype=float if c in _FLOAT_COLUMNS else object) for c in ERRATA_COLUMNS}
    )


@dataclass(frozen=True)
class Rule:
    """How the corrected analysis judges a term of a table.

    ``p``: the column of nonolab's table holding the rule's unadjusted p-value (e.g.
    ``p_satt``); ``estimate``: the column of the effect whose sign the direction judgement uses
    (None: no direction); ``inference`` and ``family``: the texts of the errata columns;
    ``family_by``: columns that split the multiplicity family within one alignment (none: every
    row of the alignment); ``exclude``: column -> values whose rows are not tested (e.g. the
    constant)."""

    p: str
    estimate: str | None
    inference: str
    family: str
    family_by: tuple[str, ...] = ()
    exclude: Mapping[str, tuple] = field(default_factory=dict)

    @property
    def term(self) -> str:
        """The term the rule judges, from its p column (``p_satt_interaction`` ->
        ``interaction``, ``BT p`` -> ``BT p``)."""
        return self.p.removeprefix("p_satt_").removeprefix("p_")


@dataclass(frozen=True)
class Verdict:
    """The judgement of one errata row under the inference rule (:data:`VERDICT_COLUMNS`).

    ``p_*``: unadjusted and family-adjusted p-values of the as-published (reproduced) and the
    corrected analysis under the rule; ``effect_*``: the effect estimates (sign for
    ``direction``). ``significant`` overrides the unadjusted verdicts for rows judged by an
    interval rather than a p-value (then the adjusted verdicts are missing)."""

    inference: str = ""
    family: str = ""
    effect_published: float = float("nan")
    effect_corrected: float = float("nan")
    p_published: float = float("nan")
    p_corrected: float = float("nan")
    p_published_adjusted: float = float("nan")
    p_corrected_adjusted: float = float("nan")
    significant: tuple[bool, bool] | None = None

    def fields(self, alpha: float = 0.05) -> dict:
        """Return the verdict columns of a row at level ``alpha`` (verdicts None when the
        p-value is missing)."""

        def sig(p: float) -> bool | None:
            return None if not np.isfinite(p) else bool(p < alpha)

        unadj = (
            self.significant
            if self.significant is not None
            else (sig(self.p_published), sig(self.p_corrected))
        )
        return {
            "inference": self.inference,
            "family": self.family,
            "effect_published": float(self.effect_published),
            "effect_corrected": float(self.effect_corrected),
            "p_published_rule": float(self.p_published),
            "p_corrected_rule": float(self.p_corrected),
            "p_published_adjusted": float(self.p_published_adjusted),
            "p_corrected_adjusted": float(self.p_corrected_adjusted),
            "significant_published": unadj[0],
            "significant_corrected": unadj[1],
            "significant_published_adjusted": sig(self.p_published_adjusted),
            "significant_corrected_adjusted": sig(self.p_corrected_adjusted),
        }


#: Rows without an inference (descriptive numbers: counts, fit components, per-puzzle means).
NO_INFERENCE = Verdict(inference="none (descriptive number)", family="none")


def change_category(row: Mapping) -> str:
    """Return the ``change_category`` of an errata row from its verdict columns:
    ``significance`` when both adjusted verdicts are known and differ; ``direction`` when both
    are significant and the effects have opposite signs; else ``estimate``."""
    a, b = row.get("significant_published_adjusted"), row.get("significant_corrected_adjusted")
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return "estimate"
    if bool(a) != bool(b):
        return "significance"
    ea, eb = float(row.get("effect_published", np.nan)), float(row.get("effect_corrected", np.nan))
    if bool(a) and np.isfinite(ea) and np.isfinite(eb) and np.sign(ea) * np.sign(eb) < 0:
        return "direction"
    return "estimate"


@dataclass(frozen=True)
class StatedConclusion:
    """A conclusion the paper states (the registry :data:`STATED_CONCLUSIONS`): ``key``,
    ``statement`` (as the paper has it), ``source`` (where it is stated) and ``verdicts``: a
    regular expression matched against the ``verdict`` of errata rows (the model terms whose
    significance carries the conclusion)."""

    key: str
    statement: str
    source: str
    verdicts: str


#: The public study's stated conclusions (docs/public-study.md, "Stated conclusions"): only a
#: change of one of these verdicts is a "conclusion change"; any other significance flip is
#: reported as such.
STATED_CONCLUSIONS: tuple[StatedConclusion, ...] = (
    StatedConclusion(
        "sat_metrics_do_not_predict_difficulty",
        "SAT solver metrics do not significantly predict human difficulty (Table 1: Spearman "
        "rho of Bradley-Terry strength and of the raw mean rating with each metric)",
        "RESULTS_REPORT.md section 2 and summary; METHODS 8",
        r"^Table 1 \w+: Spearman; ",
    ),
    StatedConclusion(
        "metric_by_expertise_interaction",
        "The SAT metric x expertise interaction on final difficulty is significant (the "
        "paper's only significant SAT-related effect)",
        "METHODS 9 (moderation); stats_moderation_expertise.csv",
        r"^final_difficulty ~ \w+ x expertise \(LMM\); interaction$",
    ),
    StatedConclusion(
        "error_count_predicts_decisions",
        "error_count significantly (negatively) predicts SAT decisions (Reg 2, pooled)",
        "RESULTS_REPORT.md section 3 and summary (B = -0.32, p = 0.005)",
        r"^decisions ~ behaviours \(OLS\), error_count; ",
    ),
)


def stated_conclusion(
    verdict: str, registry: Sequence[StatedConclusion] = STATED_CONCLUSIONS
) -> str:
    """Return the key of the registered stated conclusion a ``verdict`` belongs to ("" when
    none)."""
    for c in registry:
        if verdict and re.search(c.verdicts, verdict):
            return c.key
    return ""


def _flag(v: object) -> bool | None:
    return None if v is None or pd.isna(v) else str(v).lower() == "true"


def verdict_table(errata: pd.DataFrame) -> pd.DataFrame:
    """Return one row per verdict (model term x inference) of an errata table: ``verdict``,
    ``conclusion`` (registered key or ""), ``rows`` (its evidence rows), ``category`` (the
    strongest ``change_category`` of its rows), ``unadjusted_changes`` (the unadjusted verdict
    under the rule changes), ``family_decides`` (the adjusted verdict of one side depends on the
    multiplicity family: its rows' families disagree, the same test is adjusted in two
    families that disagree, or its significance changes only after the adjustment) and
    ``quantities`` (the rows, joined by "; ")."""
    cols = ["verdict", "conclusion", "rows", "category", "unadjusted_changes", "family_decides"]
    if not len(errata) or "verdict" not in errata.columns:
        return pd.DataFrame(columns=[*cols, "quantities"])
    t = errata[errata["verdict"].fillna("").astype(str) != ""]
    out = []
    for v, g in t.groupby("verdict", sort=False):
        cats = set(g["change_category"].astype(str))
        cat = next((c for c in CHANGE_CATEGORIES if c in cats), "estimate")
        a = g["significant_published"].map(_flag)
        b = g["significant_corrected"].map(_flag)
        unadj = bool(((a.notna()) & (b.notna()) & (a != b)).any())
        fam = False
        for side in ("published", "corrected"):
            flags = {f for f in g[f"significant_{side}_adjusted"].map(_flag) if f is not None}
            fam |= len(flags) > 1
        same_test = g["p_published_rule"].astype(float) == g["p_corrected_rule"].astype(float)
        pa = g["significant_published_adjusted"].map(_flag)
        pb = g["significant_corrected_adjusted"].map(_flag)
        fam |= bool((same_test & pa.notna() & pb.notna() & (pa != pb)).any())
        # a significance change that the unadjusted verdicts do not show exists only through
        # the family the p-values are adjusted in
        fam |= cat == "significance" and not unadj
        out.append(
            {
                "verdict": v,
                "conclusion": str(g["conclusion"].fillna("").iloc[0]),
                "rows": int(len(g)),
                "category": cat,
                "unadjusted_changes": unadj,
                "family_decides": fam,
                "quantities": "; ".join(g["quantity"].astype(str)),
            }
        )
    return pd.DataFrame(out, columns=[*cols, "quantities"])


def errata_summary(errata: pd.DataFrame) -> dict:
    """Return counts of an errata table (``results/tables/errata.csv``) for the report and the
    README. Rows: ``rows``, ``published_rows`` (rows with a published value: the published
    numbers that change), ``unpublished_rows`` (values the paper did not publish, e.g. theme
    FDR p under another family), ``change_category`` and ``cause_evidence`` (category -> rows,
    zeros included) and ``by_cause``. Verdicts (:func:`verdict_table`, one per model term and
    inference, the rows their evidence): ``verdicts`` (how many), ``verdict_category``
    (category -> verdicts), ``conclusions_changed`` (verdicts of a registered stated conclusion,
    :data:`STATED_CONCLUSIONS`, whose category is significance or direction) with
    ``conclusion_changes`` (their verdict names), ``other_flips`` (significance or direction
    changes of verdicts that are no stated conclusion) with ``other_flip_verdicts``,
    ``unadjusted_only`` (verdicts whose unadjusted verdict changes but whose adjusted one does
    not), ``family_decided`` (verdicts whose adjusted verdict depends on the family) with
    ``family_decided_verdicts``."""
    cat = errata["change_category"].astype(str) if len(errata) else pd.Series(dtype=str)
    cause = errata["cause_evidence"].astype(str) if len(errata) else pd.Series(dtype=str)
    published = errata["published"].astype(float).notna() if len(errata) else pd.Series(dtype=bool)
    v = verdict_table(errata)
    changed = v[v["category"].isin(["significance", "direction"])]
    stated = changed[changed["conclusion"] != ""]
    other = changed[changed["conclusion"] == ""]
    return {
        "rows": int(len(errata)),
        "published_rows": int(published.sum()),
        "unpublished_rows": int((~published).sum()),
        "change_category": {c: int((cat == c).sum()) for c in CHANGE_CATEGORIES},
        "cause_evidence": {c: int((cause[published] == c).sum()) for c in CAUSE_EVIDENCE},
        "by_cause": {
            c: {k: int(((cause == c) & (cat == k) & published).sum()) for k in CHANGE_CATEGORIES}
            for c in CAUSE_EVIDENCE
        },
        "verdicts": int(len(v)),
        "verdict_category": {c: int((v["category"] == c).sum()) for c in CHANGE_CATEGORIES},
        "conclusions_changed": int(len(stated)),
        "conclusion_changes": list(stated["verdict"]),
        "other_flips": int(len(other)),
        "other_flip_verdicts": list(other["verdict"]),
        "unadjusted_only": int((v["unadjusted_changes"] & (v["category"] == "estimate")).sum()),
        "family_decided": int(v["family_decides"].sum()),
        "family_decided_verdicts": list(v.loc[v["family_decides"].astype(bool), "verdict"]),
    }


def changes(published: float, corrected: float, decimals: int) -> bool:
    """Return whether ``corrected`` differs from ``published`` when both are rounded to
    ``decimals`` (the published precision); a missing published value compares as changed
    when the corrected one is present."""
    if not np.isfinite(published):
        return bool(np.isfinite(corrected))
    return bool(round(float(corrected), decimals) != round(float(published), decimals))


def _reproduces(reproduced: float, published: float, decimals: int) -> str:
    """Return ``"reproduces"`` when ``reproduced`` rounds to ``published`` at ``decimals``
    (within half a unit of the last published digit), else ``"differs from"`` (evidence text)."""
    return "reproduces" if abs(reproduced - published) < 0.5 * 10**-decimals else "differs from"


def decimals_of(text: str) -> int:
    """Return the number of decimals written in a number ``text`` (e.g. ``"7,387.1"`` -> 1)."""
    text = text.strip().rstrip("%")
    return len(text.split(".")[1]) if "." in text else 0


def errata_summary_text(summary: Mapping, alpha: float = 0.05) -> str:
    """Return the README's and the report's sentences of :func:`errata_summary` counts."""
    vc, cause = summary["verdict_category"], summary["cause_evidence"]
    flips = vc["significance"] + vc["direction"]

    def names(items: Sequence[str]) -> str:
        words = []
        for v in items:
            model, _, term = v.rpartition("; ")
            words.append(f"{term} in {model}" if model else v)
        return "; ".join(words)

    text = (
        f"{summary['published_rows']} published numbers change. As verdicts (one per model "
        f"term and inference, the rows their evidence), {summary['verdicts']} are judged: "
        f"{flips} change significance at {alpha:g} after the family's multiplicity adjustment "
        f"({vc['significance']} significance, {vc['direction']} direction), "
        f"{summary['conclusions_changed']} of them a conclusion the paper states"
    )
    text += f" ({names(summary['conclusion_changes'])})" if summary["conclusions_changed"] else ""
    text += (
        f" and {summary['other_flips']} a term about which it states none"
        + (f" ({names(summary['other_flip_verdicts'])})" if summary["other_flips"] else "")
        + f"; {vc['estimate']} change the estimate only ({summary['unadjusted_only']} cross "
        f"{alpha:g} only without the adjustment)."
    )
    if summary["family_decided"]:
        text += (
            f" The choice of multiplicity family decides {summary['family_decided']} "
            f"verdict{'s' if summary['family_decided'] != 1 else ''} "
            f"({names(summary['family_decided_verdicts'])})."
        )
    if summary["unpublished_rows"]:
        text += (
            f" {summary['unpublished_rows']} further values the paper did not publish are "
            "listed beside them."
        )
    text += (
        f" By evidence (published numbers): {cause['error']} error, "
        f"{cause['analysis choice']} analysis choice, {cause['not reproducible']} not "
        "reproducible."
    )
    return text


def _row(
    quantity: str,
    published: float,
    reproduced: float,
    corrected: float,
    cause: str,
    evidence: str,
    cause_evidence: str,
    verdict: Verdict = NO_INFERENCE,
    alpha: float = 0.05,
    verdict_name: str = "",
) -> dict:
    if cause_evidence not in CAUSE_EVIDENCE:
        raise ValueError(f"cause_evidence must be one of {CAUSE_EVIDENCE}, got {cause_evidence!r}")
    if verdict is NO_INFERENCE:
        verdict_name = ""
    row = {
        "quantity": quantity,
        "verdict": verdict_name,
        "conclusion": stated_conclusion(verdict_name),
        "published": float(published),
        "reproduced_as_published": float(reproduced),
        "corrected": float(corrected),
        "cause_evidence": cause_evidence,
        **verdict.fields(alpha),
        "cause": cause,
        "evidence": evidence,
    }
    row["change_category"] = change_category(row)
    return row


def _families(ours: pd.DataFrame, rule: Rule) -> tuple[pd.Series, pd.Series]:
    """BH-adjusted ``rule.p`` of ``ours`` within each alignment x ``rule.family_by`` group and
    the size of each row's family (0 for the rows of ``rule.exclude``, which are not tested and
    get NaN). The family is fixed by the design, not by which fits give a p-value: a test
    without one (a boundary fit without small-sample df) counts in the family with p = 1 (the
    conservative choice) and gets NaN itself."""
    tested = pd.Series(True, index=ours.index)
    for col, values in rule.exclude.items():
        tested &= ~ours[col].isin(list(values))
    out = pd.Series(np.nan, index=ours.index)
    size = pd.Series(0, index=ours.index)
    by = ["alignment", *rule.family_by]
    for _, g in ours[tested].groupby(by, sort=False):
        p = g[rule.p].astype(float)
        adj = pd.Series(bh_fdr(p.where(np.isfinite(p), 1.0)), index=g.index)
        out[g.index] = adj.where(np.isfinite(p))
        size[g.index] = len(g)
    return out, size


def aligned_rows(
    published: pd.DataFrame,
    ours: pd.DataFrame,
    *,
    keys: Mapping[str, str],
    columns: Mapping[str, str],
    quantity: str,
    source: str,
    cause: str = CAUSE_TABLE1,
    cause_evidence: str = "error",
    rules: Mapping[str, Rule] | None = None,
    join_only: pd.DataFrame | None = None,
    alpha: float = 0.05,
    decimals: int = 3,
    significant: int | None = None,
    model: str = "",
) -> list[dict]:
    """Return the errata rows of a table that nonolab computes under both SAT-statistics
    alignments, one per published value whose corrected value differs at ``decimals`` (or,
    with ``significant``, at that many significant digits of the published value).

    ``published``: the published table; ``ours``: nonolab's table with an ``alignment`` column
    (``published`` = the published method reproduced, ``corrected``). ``keys`` maps each key
    column of ``ours`` to its published name, ``columns`` each value column label (a column of
    ``ours``) to its published name. ``quantity`` is formatted with the key values and
    ``label``; ``source`` names nonolab's table in the evidence. ``rules`` maps a value column
    to the :class:`Rule` that judges its term (adjusted within the rule's family, computed over
    every row of ``ours``); a column without a rule is descriptive (:data:`NO_INFERENCE`).
    ``cause_evidence`` labels every row, unless ``join_only`` is given: nonolab's table under
    the published sample and the corrected join (keyed like ``ours``); a row is then ``error``
    when the corrected join alone changes the value at the published precision, else
    ``analysis choice``. ``model`` (formatted with the key values) names the model a row's
    term belongs to: the row's ``verdict`` is ``"<model>; <term of its rule>"`` (the same
    model and term in two published files is one verdict); without it the source and keys.
    """
    rules = dict(rules or {})
    ours = ours.reset_index(drop=True)
    adj_cols: dict[int, str] = {}
    for rule in rules.values():
        if id(rule) not in adj_cols:
            adj_cols[id(rule)] = f"_adj_{len(adj_cols)}"
            ours[adj_cols[id(rule)]], ours[adj_cols[id(rule)] + "_n"] = _families(ours, rule)
    pub = published.rename(columns={v: k for k, v in keys.items()})
    by_align = {
        a: ours[ours["alignment"] == a].set_index(list(keys)) for a in ("published", "corrected")
    }
    join = None if join_only is None else join_only.set_index(list(keys))
    rows = []
    for _, prow in pub.iterrows():
        key = tuple(prow[k] for k in keys)
        key = key[0] if len(key) == 1 else key
        if any(key not in t.index for t in by_align.values()):
            continue
        rep_row, cor_row = by_align["published"].loc[key], by_align["corrected"].loc[key]
        names = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        for col, pub_col in columns.items():
            p_val = float(prow[pub_col])
            rep, cor = float(rep_row[col]), float(cor_row[col])
            dec = decimals if significant is None else _sig_decimals(p_val, significant)
            if not changes(p_val, cor, dec):
                continue
            shown = f".{dec}f" if significant is None else f".{significant}g"
            evidence = (
                f"{source}: the published method {_reproduces(rep, p_val, dec)} "
                f"the published value ({rep:{shown}}); corrected {cor:{shown}}"
            )
            label = cause_evidence
            if join is not None:
                alone = float(join.loc[key, col])
                label = "error" if changes(p_val, alone, dec) else "analysis choice"
                evidence += f"; the corrected join alone (published sample) gives {alone:{shown}}"
            verdict = NO_INFERENCE
            if col in rules:
                r = rules[col]
                a = adj_cols[id(r)]
                inference = r.inference
                if not (np.isfinite(rep_row[r.p]) and np.isfinite(cor_row[r.p])):
                    inference += (
                        "; not judged: the rule's p-value is missing (a boundary fit has no "
                        "small-sample df)"
                    )
                n_family = int(cor_row[a + "_n"])
                family = (
                    f"{r.family}; BH over {n_family} tests"
                    if n_family
                    else "not a tested term (intercept): no family, no adjusted verdict"
                )
                verdict = Verdict(
                    inference=inference,
                    family=family,
                    effect_published=float(rep_row[r.estimate]) if r.estimate else np.nan,
                    effect_corrected=float(cor_row[r.estimate]) if r.estimate else np.nan,
                    p_published=float(rep_row[r.p]),
                    p_corrected=float(cor_row[r.p]),
                    p_published_adjusted=float(rep_row[a]),
                    p_corrected_adjusted=float(cor_row[a]),
                )
            name = ""
            if col in rules:
                where = (
                    model.format(**names)
                    if model
                    else f"{source} " + ", ".join(f"{v}" for v in names.values())
                )
                name = f"{where}; {rules[col].term}"
            rows.append(
                _row(
                    quantity.format(label=col, **names),
                    p_val,
                    rep,
                    cor,
                    cause,
                    evidence,
                    label,
                    verdict,
                    alpha,
                    name,
                )
            )
    return rows


def _spearman_rule(
    p: str,
    rho: str,
    what: str,
    family_by: tuple[str, ...] = (),
    test: str = "t approximation",
) -> Rule:
    return Rule(
        p=p,
        estimate=rho,
        inference=f"Spearman rank correlation over the puzzles ({test}), as the corrected "
        "table reports",
        family=f"the SAT metrics of the table ({what})",
        family_by=family_by,
    )


#: Table 1 statistics in the errata: column -> label.
TABLE1_LABELS = {
    "bt_rho": "BT rho",
    "bt_p": "BT p",
    "raw_rho": "raw rho",
    "raw_p": "raw p",
    "bt_p_fdr": "BT p (FDR)",
}


def table1_rows(
    erratum: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05, decimals: int = 3
) -> list[dict]:
    """Return the errata rows of Table 1 (Spearman rho and p of BT strength and of the raw mean
    rating against each SAT metric, and the BT p-values' BH adjustment when both tables have
    it).

    ``erratum``: ``results/tables/table1_erratum.csv`` (``metric``, ``published_*`` and
    ``corrected_*`` of ``bt_rho``, ``bt_p``, ``raw_rho``, ``raw_p``, ``bt_p_fdr`` (the
    published method's asymptotic p) and ``perm_p`` / ``raw_perm_p`` (Table 1's exact
    permutation p)); ``published``: the published statistics file (he2026:
    ``stats_bt_vs_sat.csv``: ``predictor_type``, ``predictor``, ``bt_rho``, ``bt_p``,
    ``raw_rho``, ``raw_p``, ``bt_p_fdr``). Values are compared at ``decimals`` (the published
    table's 3).

    One p per number: a p row's corrected value and every verdict use Table 1's own test, the
    permutation p (BH over the metrics for the FDR row); the reproduction of the published
    method keeps the published asymptotic p. An erratum written before the permutation columns
    falls back to the asymptotic p."""
    if "published_bt_rho" not in erratum.columns:
        return []
    stats = [
        s for s in TABLE1_LABELS if f"published_{s}" in erratum.columns and s in published.columns
    ]
    perm = {"BT": "perm_p", "raw": "raw_perm_p"}
    has_perm = {k: f"corrected_{c}" in erratum.columns for k, c in perm.items()}
    frames = []
    for a in ("published", "corrected"):
        f = erratum[["metric"]].assign(alignment=a)
        for st in stats:
            f[TABLE1_LABELS[st]] = erratum[f"{a}_{st}"].astype(float)
        for k, c in perm.items():
            f[f"{k} perm p"] = erratum[f"{a}_{c}"].astype(float) if has_perm[k] else f[f"{k} p"]
        if a == "corrected":  # the corrected numbers are Table 1's own test
            for k in perm:
                if has_perm[k] and f"{k} p" in f:
                    f[f"{k} p"] = f[f"{k} perm p"]
            if has_perm["BT"] and "BT p (FDR)" in f:
                f["BT p (FDR)"] = bh_fdr(f["BT perm p"])
        frames.append(f)
    ours = pd.concat(frames, ignore_index=True)
    pub = published[published["predictor_type"] == "sat_metric"].rename(columns=TABLE1_LABELS)
    rows = aligned_rows(
        pub,
        ours,
        keys={"metric": "predictor"},
        columns={TABLE1_LABELS[s]: TABLE1_LABELS[s] for s in stats},
        quantity="Table 1 {label}, {metric}",
        source="table1_erratum.csv",
        rules=table1_rules(permutation=has_perm["BT"]),
        alpha=alpha,
        decimals=decimals,
        model="Table 1 {metric}: Spearman",
    )
    if has_perm["BT"]:
        for r in rows:
            if " p" in r["quantity"].split(",")[0]:
                r["cause"] += "; " + CAUSE_TABLE1_TEST
    return rows


CAUSE_TABLE1_TEST = (
    "Table 1's p is the exact permutation p over all orderings of the puzzles (the published p "
    "is the t approximation, poor for six puzzles)"
)


def table1_rules(permutation: bool = True) -> dict[str, Rule]:
    """The rules of Table 1's columns: the BT and the raw-rating Spearman correlations by Table
    1's own test (the exact permutation p, columns ``BT perm p`` / ``raw perm p``; the t
    approximation when ``permutation`` is False), each BH-adjusted over the table's metrics
    (the published ``bt_p_fdr`` family)."""
    test = "exact permutation p, Table 1's test" if permutation else "t approximation"
    bt = _spearman_rule("BT perm p", "BT rho", "Bradley-Terry strength", test=test)
    raw = _spearman_rule("raw perm p", "raw rho", "raw mean rating", test=test)
    return {"BT rho": bt, "BT p": bt, "BT p (FDR)": bt, "raw rho": raw, "raw p": raw}


_NUM = r"([-+]?[\d,]*\.?\d+)"


def parse_pause_report(text: str) -> dict:
    """Return the published pause-threshold numbers of a report like the public study's
    ``PAUSE_THRESHOLD_REPORT.md``, each as ``(value, decimals)``: ``threshold_s``,
    ``threshold_log``, ``delta_bic_2`` and ``delta_bic_3`` (BIC improvements over one component)
    and, per component ``i``, ``mean_s_i`` (seconds), ``sd_log_i`` and ``weight_i`` (a
    fraction, from the percentage). Numbers not found are left out."""
    out: dict[str, tuple[float, int]] = {}

    def put(key: str, s: str, scale: float = 1.0, extra: int = 0) -> None:
        out[key] = (float(s.replace(",", "")) * scale, decimals_of(s) + extra)

    if m := re.search(r"Threshold chosen:\**\s*" + _NUM + r"\s*s", text):
        put("threshold_s", m.group(1))
    if m := re.search(r"Crossover in log-space:\**\s*\**" + _NUM, text):
        put("threshold_log", m.group(1))
    for k in (2, 3):
        if m := re.search(rf"^\|\s*{k}\s*\|\s*baseline\s*[-−]\s*" + _NUM, text, re.M):
            put(f"delta_bic_{k}", m.group(1))
    comp = r"^\|\s*(\d+)\s*\|\s*" + _NUM + r"\s*s\s*\|\s*" + _NUM + r"\s*\|\s*" + _NUM + r"%"
    for m in re.finditer(comp, text, re.M):
        i = m.group(1)
        put(f"mean_s_{i}", m.group(2))
        put(f"sd_log_{i}", m.group(3))
        put(f"weight_{i}", m.group(4), scale=0.01, extra=2)
    return out


def _order_values(record: Mapping, key: str) -> tuple[float, float] | None:
    """Range (min, max) over the random orders of the published-settings value behind the
    published pause number ``key`` (``threshold_s``, ``threshold_log``, ``delta_bic_2``,
    ``delta_bic_3``), from ``record["order_dependence"]``; None when not recorded."""
    od = (record.get("order_dependence") or {}).get("published_settings") or {}
    col = {"threshold_s": "crossing_s", "threshold_log": "crossing_s"}.get(key)
    if key.startswith("delta_bic_"):
        col = f"delta_bic_{key[-1]}_vs_1"
    if col is None or col not in od:
        return None
    lo, hi = float(od[col]["min"]), float(od[col]["max"])
    if key == "threshold_log":
        lo, hi = float(np.log(lo)), float(np.log(hi))
    return lo, hi


def pause_rows(
    record: Mapping, published: Mapping[str, tuple[float, int]], alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the pause threshold, its log crossing, the BIC improvements and
    the 3 mixture components: published (:func:`parse_pause_report`) vs the
    ``published_settings_fit`` and ``converged_fit`` of ``record``
    (``results/pauses/threshold.json``). Empty when the record has no such fits.

    No row has an inference (descriptive fit numbers: ``estimate``). ``cause_evidence`` is
    ``not reproducible`` when the published-settings value over the random gap orders of
    ``record["order_dependence"]`` (:func:`nonolab.stats.pauses.order_dependence`) spans more
    than one value at the published precision (the published number is then a property of the
    gap order as much as of the data), else ``error`` (the early-stopped EM)."""
    pub_fit, conv = record.get("published_settings_fit"), record.get("converged_fit")
    if not pub_fit or not conv:
        return []
    check = conv.get("check") or {}
    rs = conv.get("random_state_check") or {}
    evidence = (
        f"threshold.json: published settings stop after {pub_fit['n_iter']} EM iterations "
        f"(log-likelihood {pub_fit['log_likelihood']:,.2f}); the converged fit takes "
        f"{conv['n_iter']} (EM tol {conv['em_tol']:g}, log-likelihood "
        f"{conv['log_likelihood']:,.2f}); continuing EM at the next smaller tolerance moved its "
        f"crossing by {check.get('crossing_moved_s', float('nan')):.1e} s"
    )
    if rs.get("seeds"):
        evidence += (
            f"; {len(rs['seeds'])} further random states agree within {rs['max_abs_diff_s']:.1e} s"
        )
    od = record.get("order_dependence") or {}
    conv_od = (od.get("converged") or {}).get("crossing_s")
    if conv_od:
        evidence += (
            f"; over {od['n_orders']} random orders of the same gaps the converged crossing "
            f"moves by {conv_od['max'] - conv_od['min']:.1e} s"
        )
    ci = conv.get("crossing_interval") or {}
    if np.isfinite(ci.get("low_s", np.nan)):
        evidence += (
            f"; the data pin the converged crossing to {ci['low_s']:.{ci['decimals']}f}-"
            f"{ci['high_s']:.{ci['decimals']}f} s ({ci['level']:.0%} delta-method interval)"
        )
    k = len(conv["means_log"])
    items = [
        ("pause threshold (s)", "threshold_s", lambda f: f["threshold_s"]),
        ("pause crossing (log s)", "threshold_log", lambda f: f["threshold_log"]),
    ]
    for j in (2, 3):
        items.append(
            (
                f"BIC improvement, {j} vs 1 components",
                f"delta_bic_{j}",
                lambda f, j=j: f["delta_bic_vs_1"][str(j)],
            )
        )
    for i in range(k):
        items += [
            (f"component {i} mean (s)", f"mean_s_{i}", lambda f, i=i: f["means_s"][i]),
            (f"component {i} SD (log s)", f"sd_log_{i}", lambda f, i=i: f["sds_log"][i]),
            (f"component {i} weight", f"weight_{i}", lambda f, i=i: f["weights"][i]),
        ]
    rows = []
    for label, key, get in items:
        if key not in published:
            continue
        value, dec = published[key]
        if key.startswith("delta_bic") and str(key[-1]) not in conv["delta_bic_vs_1"]:
            continue
        cor = float(get(conv))
        if not changes(value, cor, dec):
            continue
        row_evidence, label_evidence = evidence, "error"
        span = _order_values(record, key)
        if span is not None:
            lo, hi = span
            n_pub = (od.get("published_settings") or {}).get("n_orders", od["n_orders"])
            row_evidence += (
                f"; the published settings give {lo:,.{dec + 1}f} to {hi:,.{dec + 1}f} over "
                f"{n_pub} random orders of the same gaps"
            )
            if round(lo, dec) != round(hi, dec):
                label_evidence = "not reproducible"
        rows.append(
            _row(
                label,
                value,
                get(pub_fit),
                cor,
                CAUSE_EM,
                row_evidence,
                label_evidence,
                alpha=alpha,
            )
        )
    return rows


def bootstrap_rows(
    strengths: pd.DataFrame, published: pd.DataFrame, decimals: int = 3, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the BT strength intervals: the published bounds
    (``puzzle_id``, ``theta_ci_lower``, ``theta_ci_upper``; he2026:
    ``bt_difficulty_vs_sat.csv``) vs ``ci_low_published_semantics`` / ``ci_high_published_semantics``
    and ``ci_low`` / ``ci_high`` of ``results/tables/bt_strengths.csv``, compared at
    ``decimals``. Empty when ``strengths`` lacks the published-semantics columns.

    The unadjusted verdicts say whether the interval excludes 1 (the average puzzle) under the
    published (k-squared) and the correct weighting; the intervals carry no multiplicity
    adjustment, so the adjusted verdicts are missing and the category is ``estimate``."""
    need = {"ci_low_published_semantics", "ci_high_published_semantics"}
    if not need <= set(strengths.columns):
        return []
    s = strengths.assign(puzzle_id=strengths["puzzle_id"].astype(str)).set_index("puzzle_id")
    pub = published.assign(puzzle_id=published["puzzle_id"].astype(str)).set_index("puzzle_id")
    rows = []
    for pid in s.index.intersection(pub.index):
        lo = (float(pub.loc[pid, "theta_ci_lower"]), float(s.loc[pid, "ci_low"]))
        hi = (float(pub.loc[pid, "theta_ci_upper"]), float(s.loc[pid, "ci_high"]))
        rep_lo = float(s.loc[pid, "ci_low_published_semantics"])
        rep_hi = float(s.loc[pid, "ci_high_published_semantics"])
        verdict = Verdict(
            inference="participant-bootstrap 95% percentile interval of the BT strength "
            "(excludes 1, the average puzzle: significant)",
            family="each puzzle's interval on its own (no multiplicity adjustment)",
            significant=(not (rep_lo <= 1.0 <= rep_hi), not (lo[1] <= 1.0 <= hi[1])),
        )
        for bound, col, (p_val, cor) in (("lower", "ci_low", lo), ("upper", "ci_high", hi)):
            rep = float(s.loc[pid, f"{col}_published_semantics"])
            if not changes(p_val, cor, decimals):
                continue
            match = _reproduces(rep, p_val, decimals)
            evidence = (
                f"bt_strengths.csv: the k-squared weighting {match} the published bound "
                f"({rep:.3f}); weight k gives {cor:.3f}"
            )
            rows.append(
                _row(
                    f"BT strength 95% CI {bound}, puzzle {pid}",
                    p_val,
                    rep,
                    cor,
                    CAUSE_BOOTSTRAP,
                    evidence,
                    "error",
                    verdict,
                    alpha,
                    f"BT strength of puzzle {pid} vs the average puzzle; bootstrap interval",
                )
            )
    return rows


def theme_fdr_rows(
    themes: pd.DataFrame, min_present: int, alpha: float = 0.05, decimals: int = 3
) -> list[dict]:
    """Return the errata rows of the theme tests' FDR p-values: Benjamini-Hochberg over the
    tests with at least ``min_present`` responses having the code (the published family,
    recomputed from the raw ``p`` of ``results/tables/themes_vs_difficulty.csv``) vs the
    table's ``p_fdr`` (every test in the family). ``published`` is NaN: the published files
    give no theme p-values. Verdicts: the Mann-Whitney p (the same both ways) and the two
    families' BH p-values; effect: the rank-biserial r. ``cause_evidence`` is ``analysis
    choice`` (which themes form the family is a choice, and the paper publishes no theme p);
    the verdict table (:func:`verdict_table`) shows where the family decides the verdict."""
    tested = themes[themes["p"].notna()]
    family = tested[tested["n_present"] >= min_present]
    if len(family) == len(tested) or family.empty:
        return []
    narrow = pd.Series(multipletests(family["p"], method="fdr_bh")[1], index=family.index)
    left_out = ", ".join(
        f"{c} (n = {int(n)})"
        for c, n in tested.loc[~tested.index.isin(family.index), ["code", "n_present"]].values
    )
    rows = []
    for idx, r in family.iterrows():
        rep, cor = float(narrow[idx]), float(r["p_fdr"])
        if not changes(rep, cor, decimals):
            continue
        evidence = (
            f"themes_vs_difficulty.csv: BH over the {len(family)} themes with n >= "
            f"{min_present} gives {rep:.3f}; over all {len(tested)} tested (adding {left_out}) "
            f"{cor:.3f}"
        )
        verdict = Verdict(
            inference="Mann-Whitney U of final difficulty, responses with vs without the theme",
            family=f"published: the {len(family)} themes with n >= {min_present}; corrected: "
            f"all {len(tested)} themes tested (BH)",
            effect_published=float(r.get("rank_biserial", np.nan)),
            effect_corrected=float(r.get("rank_biserial", np.nan)),
            p_published=float(r["p"]),
            p_corrected=float(r["p"]),
            p_published_adjusted=rep,
            p_corrected_adjusted=cor,
        )
        rows.append(
            _row(
                f"theme {r['code']} FDR p",
                float("nan"),
                rep,
                cor,
                CAUSE_FDR,
                evidence,
                "analysis choice",
                verdict,
                alpha,
                f"theme {r['code']} vs final difficulty (Mann-Whitney); BH family",
            )
        )
    return rows


#: Published column names -> the features table's (behaviour regressions).
_PUBLISHED_COLUMNS = {"time_to_solve_sec": "time_to_solve_s"}


def _sig_decimals(value: float, digits: int = 3) -> int:
    """Decimals that keep ``digits`` significant digits of ``value`` (at least 0)."""
    v = abs(float(value))
    return max(0, digits - 1 - int(np.floor(np.log10(v)))) if v > 0 else digits


def behaviour_on_sat_rows(
    table: pd.DataFrame, published: pd.DataFrame, metric: str, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of a published "SAT metric ~ behaviour" OLS file (he2026:
    ``stats_behavioral_vs_<metric>.csv``: ``predictor``, ``coef``, ``p_value``) from
    ``results/tables/behaviour_on_sat.csv`` (both alignments): coefficient and p of each
    behaviour, compared at 3 significant digits (:func:`aligned_rows`)."""
    pub = published[~published["predictor"].isin(["const", "(model)"])]
    pub = pub.assign(predictor=pub["predictor"].replace(_PUBLISHED_COLUMNS))
    source = f"stats_behavioral_vs_{metric}.csv"
    ours = table[table["metric"] == metric]
    if "p_cluster" in ours.columns:
        rule = Rule(
            p="p_cluster",
            estimate="coef",
            inference="OLS with cluster-robust SEs by puzzle (CR1, t on puzzles - 1 df): the "
            "outcome is a puzzle-level SAT metric",
            family="the behaviours of the model",
            exclude={"predictor": ("const",)},
        )
        cause = CAUSE_TABLE1 + "; " + CAUSE_CLUSTER
    else:  # a table written before the cluster-robust columns: the published OLS p
        rule = Rule(
            p="p_value",
            estimate="coef",
            inference="OLS t (the published specification)",
            family="the behaviours of the model",
            exclude={"predictor": ("const",)},
        )
        cause = CAUSE_TABLE1
    return aligned_rows(
        pub,
        ours,
        keys={"predictor": "predictor"},
        columns={"coef": "coef", "p_value": "p_value"},
        quantity=source + " {predictor} {label}",
        source=source,
        cause=cause,
        model=metric + " ~ behaviours (OLS), {predictor}",
        rules={"coef": rule, "p_value": rule},
        alpha=alpha,
        significant=3,
    )


CAUSE_CLUSTER = (
    "the OLS treats the attempts of one puzzle as independent although the outcome (a SAT "
    "metric) takes one value per puzzle; judged with cluster-robust SEs by puzzle"
)


def _satt_rule(term: str, family: str, p: str) -> Rule:
    return Rule(
        p=p,
        estimate={"metric": "coef_metric", "expertise": "coef_expertise"}.get(term, term),
        inference="Satterthwaite t of the REML crossed-random-intercept LMM (the metric is "
        "puzzle-level: df about 4 for its main effect)",
        family=family,
    )


def behaviour_moderation_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published behavioural moderation file (he2026:
    ``stats_moderation_behavioral.csv``: ``outcome``, ``predictor`` and the metric, expertise
    and interaction estimates) from ``results/tables/behaviour_moderation.csv``: coefficient
    and p of each term, compared at 3 significant digits (:func:`aligned_rows`)."""
    source = "stats_moderation_behavioral.csv"
    pub = published.assign(outcome=published["outcome"].replace(_PUBLISHED_COLUMNS))
    ours = table.assign(outcome=table["outcome"].replace(_PUBLISHED_COLUMNS))
    terms = {"coef_metric": "p_metric", "interaction": "p_interaction"}
    terms |= {"coef_expertise": "p_expertise"}
    columns = {c: c for pair in terms.items() for c in pair}
    rules = {}
    for est, p in terms.items():
        name = p.removeprefix("p_")
        rule = _satt_rule(
            name if name != "interaction" else "interaction",
            f"the {name} terms of the table's outcome x metric models",
            f"p_satt_{name}",
        )
        rules[est] = rules[p] = rule
    return aligned_rows(
        pub,
        ours,
        keys={"outcome": "outcome", "metric": "predictor"},
        columns=columns,
        quantity=source + " {outcome} x {metric} {label}",
        source=source,
        rules=rules,
        model="{outcome} ~ {metric} x expertise (LMM)",
        alpha=alpha,
        significant=3,
    )


def behaviour_models_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published behaviour ~ SAT metric mixed models (he2026:
    ``stats_behavioral_vs_sat_metrics.csv``: ``outcome``, ``predictor``, ``coef``, ``p``,
    ``p_fdr``) from ``results/tables/behaviour_models_raw.csv`` (the metric as a raw count, both
    alignments), compared at 3 significant digits (:func:`aligned_rows`)."""
    source = "stats_behavioral_vs_sat_metrics.csv"
    pub = published.assign(outcome=published["outcome"].replace(_PUBLISHED_COLUMNS))
    return aligned_rows(
        pub,
        table,
        keys={"outcome_column": "outcome", "metric": "predictor"},
        columns={"coef": "coef", "p": "p", "p_fdr": "p_fdr"},
        quantity=source + " {outcome_column} ~ {metric} {label}",
        source=source,
        model="{outcome_column} ~ {metric} (LMM)",
        rules=dict.fromkeys(("coef", "p", "p_fdr"), behaviour_models_rule()),
        alpha=alpha,
        significant=3,
    )


def behaviour_models_rule() -> Rule:
    """The rule of the behaviour ~ metric mixed models: Satterthwaite t of the metric (a
    puzzle-level term), BH over every behaviour x metric model of one alignment (the
    published ``p_fdr`` family, as ``p_satt_fdr``)."""
    return Rule(
        p="p_satt",
        estimate="coef",
        inference="Satterthwaite t of the REML crossed-random-intercept LMM (the metric is "
        "puzzle-level: df about 4)",
        family="the behaviour x metric models of the table",
    )


def moderation_wide(table: pd.DataFrame, moderator: str = "expertise_composite") -> pd.DataFrame:
    """Return the long moderation table (``results/tables/moderation_raw.csv``: one row per
    ``alignment`` x ``metric`` x ``term``) as one row per alignment x metric with the published
    file's columns: ``coef_metric``/``p_metric``, ``coef_expertise``/``p_expertise`` and
    ``interaction``/``p_interaction`` (coefficients in outcome units per covariate unit), and
    ``p_satt_metric``/``p_satt_expertise``/``p_satt_interaction`` when the table has
    Satterthwaite p-values."""
    rows = []
    for (a, m), d in table.groupby(["alignment", "metric"], sort=False):
        t = d.set_index("term")
        inter = f"{m}:{moderator}"
        row = {"alignment": a, "metric": m}
        for name, term in (("metric", m), ("expertise", moderator), ("interaction", inter)):
            coef = "interaction" if name == "interaction" else f"coef_{name}"
            ok = term in t.index
            row[coef] = float(t.loc[term, "coef"]) if ok else float("nan")
            row[f"p_{name}"] = float(t.loc[term, "p"]) if ok else float("nan")
            if "p_satt" in t.columns:
                row[f"p_satt_{name}"] = float(t.loc[term, "p_satt"]) if ok else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def moderation_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published moderation models (he2026:
    ``stats_moderation_expertise.csv``: final difficulty ~ metric x expertise, one row per
    metric) from ``results/tables/moderation_raw.csv`` (:func:`moderation_wide`), compared at 3
    significant digits (:func:`aligned_rows`)."""
    source = "stats_moderation_expertise.csv"
    terms = {"coef_metric": "p_metric", "interaction": "p_interaction"}
    terms |= {"coef_expertise": "p_expertise"}
    wide = moderation_wide(table)
    rules = {}
    for est, p in terms.items():
        name = p.removeprefix("p_")
        rule = _satt_rule(
            name,
            f"the SAT metrics of the table (the models' {name} terms)",
            f"p_satt_{name}" if f"p_satt_{name}" in wide.columns else p,
        )
        rules[est] = rules[p] = rule
    return aligned_rows(
        published,
        wide,
        keys={"metric": "predictor"},
        columns={c: c for pair in terms.items() for c in pair},
        quantity=source + " {metric} {label}",
        source=source,
        rules=rules,
        model="final_difficulty ~ {metric} x expertise (LMM)",
        alpha=alpha,
        significant=3,
    )


def representativeness_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published selection-representativeness file (he2026:
    ``stats_puzzle_selection_representativeness.csv``: pool id and SAT statistics of each
    served puzzle) from ``results/tables/selection_representativeness.csv``: the pool id and
    the three counts (the percentiles need the candidate pool, which the public data lacks)."""
    cols = ["pool_puzzle_id", "decisions_value", "propagations_value", "conflicts_value"]

    def label(v: object) -> str:  # 2, 2.0 and "2" name the same served puzzle
        return str(int(float(v))) if str(v).strip() not in ("", "nan") else str(v)

    return aligned_rows(
        published.assign(experiment_id=published["experiment_id"].map(label)),
        table.assign(experiment_id=table["experiment_id"].map(label)),
        keys={"experiment_id": "experiment_id"},
        columns={c: c for c in cols},
        quantity="selection representativeness {label}, served puzzle {experiment_id}",
        source="selection_representativeness.csv",
        alpha=alpha,
        decimals=0,
    )


CAUSE_SELECTIONS = (
    "counting: the number of ordered puzzle selections served counts sessions, and several "
    "sessions were served the same schedule entry"
)


def selections_rows(record: Mapping, published: int) -> list[dict]:
    """Return the errata row of the paper's count of ordered puzzle selections served (he2026:
    "67 of 120") from ``results/tables/ordered_selections.json`` (``complete_sessions``,
    ``distinct_ordered``, ``possible_ordered``, ``distinct_unordered``,
    ``possible_unordered``); no row when the distinct count equals the published one."""
    distinct, sessions = int(record["distinct_ordered"]), int(record["complete_sessions"])
    if distinct == int(published):
        return []
    evidence = (
        f"ordered_selections.json: {sessions} complete sessions were served "
        f"{distinct} distinct ordered selections of the {record['possible_ordered']} possible "
        f"({record['distinct_unordered']} of {record['possible_unordered']} puzzle sets)"
    )
    conclusion = (
        f"yes: the design covered {distinct} of {record['possible_ordered']} ordered selections"
    )
    evidence += f"; {conclusion.removeprefix('yes: ')}"
    quantity = "ordered puzzle selections served"
    return [_row(quantity, published, sessions, distinct, CAUSE_SELECTIONS, evidence, "error")]


CAUSE_SAMPLE = (
    "rating sample: the published difficulty-adjustment files use the 177 final ratings of "
    "solved attempts, leaving out the 3 given after unsolved attempts (all by the one "
    "participant who solved none); the corrected files use all 180 rated attempts, the sample "
    "of Table 1 and the mixed models. A sample definition the paper's text does not state, "
    "not a demonstrated error"
)
CAUSE_SAMPLE_AND_JOIN = f"{CAUSE_SAMPLE}; and {CAUSE_TABLE1}"


def _as_published_and_corrected(table: pd.DataFrame, sample_only: bool = False) -> pd.DataFrame:
    """Rows of an adjustment table under the published method (``sample`` published and, unless
    ``sample_only``, ``alignment`` published) and the corrected one, labelled by ``alignment``
    (``published``/``corrected``) for :func:`aligned_rows`."""
    if sample_only:
        return table.drop(columns=["alignment"], errors="ignore").rename(
            columns={"sample": "alignment"}
        )
    return table[table["alignment"] == table["sample"]].drop(columns=["sample"])


def _join_only(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of an adjustment table under the published sample and the corrected join: what the
    join correction alone does (for ``cause_evidence``)."""
    sel = (table["alignment"] == "corrected") & (table["sample"] == "published")
    return table[sel].drop(columns=["sample"])


def adjustment_model_rows(
    table: pd.DataFrame, published: pd.DataFrame, *, model: str, source: str, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of a published difficulty-adjustment OLS (he2026:
    ``order_adjustment_model_params.csv`` for ``model`` "order", ``expertise_adjustment_model_
    params.csv`` for "expertise_order": ``term``, ``coef``, ``se``, ``p_value``) from
    ``results/tables/adjustment_models.csv`` (the published and the corrected rating sample),
    compared at 3 significant digits."""
    ours = _as_published_and_corrected(table[table["model"] == model], sample_only=True)
    rule = Rule(
        p="p_value",
        estimate="coef",
        inference="OLS t (rating-level model, as published)",
        family="the terms of the model, intercept left out",
        exclude={"term": ("Intercept", "const")},
    )
    return aligned_rows(
        published,
        ours,
        keys={"term": "term"},
        columns={"coef": "coef", "se": "se", "p_value": "p_value"},
        quantity=source + " {term} {label}",
        source="adjustment_models.csv",
        model=f"{model} adjustment (OLS), " + "{term}",
        cause=CAUSE_SAMPLE,
        cause_evidence="analysis choice",
        rules=dict.fromkeys(("coef", "se", "p_value"), rule),
        alpha=alpha,
        significant=3,
    )


def adjusted_difficulty_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published expertise-adjusted difficulty per puzzle (he2026:
    ``expertise_adjusted_puzzle_difficulty.csv``) from ``results/tables/adjusted_difficulty.csv``
    (published sample and alignment against the corrected ones): raw and adjusted mean
    difficulty (1-5, 3 decimals), number of ratings and the SAT statistics joined to the
    puzzle."""
    source = "expertise_adjusted_puzzle_difficulty.csv"
    ours = _as_published_and_corrected(table)
    ours = ours.assign(puzzle_id=ours["puzzle_id"].astype(str))
    join = _join_only(table)
    join = join.assign(puzzle_id=join["puzzle_id"].astype(str))
    pub = published.assign(puzzle_id=published["puzzle_id"].astype(str))
    cols = ["raw_mean_difficulty", "n_ratings", "adjusted_difficulty"]
    cols += ["decisions", "propagations", "conflicts"]
    return aligned_rows(
        pub,
        ours,
        keys={"puzzle_id": "puzzle_id"},
        columns={c: c for c in cols if c in pub.columns},
        quantity=source + " puzzle {puzzle_id} {label}",
        source="adjusted_difficulty.csv",
        cause=CAUSE_SAMPLE_AND_JOIN,
        join_only=join,
        alpha=alpha,
    )


def adjusted_difficulty_vs_sat_rows(
    table: pd.DataFrame, published: pd.DataFrame, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of the published Spearman correlations of raw and adjusted
    difficulty with each SAT metric (he2026: ``stats_expertise_adjusted_difficulty_vs_sat.csv``)
    from ``results/tables/adjusted_difficulty_vs_sat.csv``, compared at 3 decimals."""
    source = "stats_expertise_adjusted_difficulty_vs_sat.csv"
    cols = ["raw_spearman_rho", "raw_spearman_p", "adjusted_spearman_rho", "adjusted_spearman_p"]
    raw = _spearman_rule("raw_spearman_p", "raw_spearman_rho", "raw mean difficulty")
    adj = _spearman_rule("adjusted_spearman_p", "adjusted_spearman_rho", "adjusted difficulty")
    return aligned_rows(
        published,
        _as_published_and_corrected(table),
        keys={"sat_metric": "sat_metric"},
        columns={c: c for c in cols},
        quantity=source + " {sat_metric} {label}",
        source="adjusted_difficulty_vs_sat.csv",
        model="adjusted-difficulty table {sat_metric}: Spearman",
        cause=CAUSE_SAMPLE_AND_JOIN,
        join_only=_join_only(table),
        rules={
            "raw_spearman_rho": raw,
            "raw_spearman_p": raw,
            "adjusted_spearman_rho": adj,
            "adjusted_spearman_p": adj,
        },
        alpha=alpha,
    )


#: Published tables nonolab recomputes under both SAT alignments: the preset's ``published``
#: key of the file -> the function giving its errata rows from nonolab's table (the
#: workflow's ``errata`` rule maps the same keys to nonolab's tables).
ALIGNED_TABLES: dict[str, Callable[..., list[dict]]] = {
    "behavioral_vs_decisions": partial(behaviour_on_sat_rows, metric="decisions"),
    "behavioral_vs_conflicts": partial(behaviour_on_sat_rows, metric="conflicts"),
    "moderation_behavioral": behaviour_moderation_rows,
    "behavioral_vs_sat_metrics": behaviour_models_rows,
    "moderation_expertise": moderation_rows,
    "selection_representativeness": representativeness_rows,
    "order_adjustment": partial(
        adjustment_model_rows, model="order", source="order_adjustment_model_params.csv"
    ),
    "expertise_adjustment": partial(
        adjustment_model_rows,
        model="expertise_order",
        source="expertise_adjustment_model_params.csv",
    ),
    "adjusted_difficulty": adjusted_difficulty_rows,
    "adjusted_difficulty_vs_sat": adjusted_difficulty_vs_sat_rows,
}


def study_errata(
    inputs: Mapping[str, str],
    *,
    published: Sequence[str] = (),
    aligned: Sequence[str] = (),
    themes_min_present: int | None = None,
    selections_published: int | None = None,
    alpha: float = 0.05,
    log: Callable[[str], None] = lambda _msg: None,
) -> pd.DataFrame:
    """Return the errata table (:func:`errata_table`) of a study from the files the workflow's
    ``errata`` rule names in ``inputs``: Table 1 (``published`` holds ``table1``), the pause
    fit (``pause_report``; ``threshold`` = threshold.json and ``order_check`` = the data-order
    check's record, whose summary becomes the record's ``order_dependence``), the BT intervals
    (``bt_strengths``), every table of ``aligned`` (:data:`ALIGNED_TABLES`; inputs ``<key>`` =
    the published file, ``ours_<key>`` = nonolab's table), the theme FDR family and the count
    of ordered selections served."""
    rows: list[dict] = []
    if "table1" in published:
        erratum = read_csv(inputs["table1_erratum"])
        rows += table1_rows(erratum, pd.read_csv(inputs["table1"]), alpha=alpha)
    if "pause_report" in published:
        with open(inputs["threshold"], encoding="utf-8") as fh:
            record = json.load(fh)
        if inputs.get("order_check"):  # the data-order check's own record (rule pause_order)
            from nonolab.stats.pauses import order_check_summary

            with open(inputs["order_check"], encoding="utf-8") as fh:
                summary = order_check_summary(json.load(fh))
            record.pop("order_dependence", None)
            if summary is not None:
                record["order_dependence"] = summary
        with open(inputs["pause_report"], encoding="utf-8") as fh:
            published_pauses = parse_pause_report(fh.read())
        log(f"published pause numbers: {published_pauses}")
        rows += pause_rows(record, published_pauses, alpha=alpha)
    if "bt_strengths" in published:
        strengths = read_csv(inputs["strengths"], dtype={"puzzle_id": str})
        pub = pd.read_csv(inputs["bt_published"], dtype={"puzzle_id": str})
        found = bootstrap_rows(strengths, pub, alpha=alpha)
        if not found and "ci_low_published_semantics" not in strengths.columns:
            log("bt_strengths.csv has no published-semantics intervals: no bootstrap rows")
        rows += found
    for key in aligned:
        ours, pub = read_csv(inputs[f"ours_{key}"]), pd.read_csv(inputs[key])
        rows += ALIGNED_TABLES[key](ours, pub, alpha=alpha)
    if themes_min_present is not None:
        themes = read_csv(inputs["themes"])
        rows += theme_fdr_rows(themes, themes_min_present, alpha=alpha)
    if selections_published is not None:
        with open(inputs["selections"], encoding="utf-8") as fh:
            rows += selections_rows(json.load(fh), selections_published)
    return errata_table(rows)


def errata_table(rows: list[dict]) -> pd.DataFrame:
    """Return the errata table (:data:`ERRATA_COLUMNS`) of ``rows``, in the given order."""
    if not rows:
        return empty_errata()
    out = pd.DataFrame(rows, columns=ERRATA_COLUMNS)
    for c in VERDICT_COLUMNS:
        if c.startswith("significant_"):
            out[c] = out[c].astype("boolean")
    return out
