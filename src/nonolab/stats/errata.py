"""Errata: published numbers that change, built from the workflow's own outputs.

One row per published number whose corrected value differs from it at the published precision:
``quantity``, ``published`` (read from the study's published files), ``reproduced_as_published``
(nonolab's reproduction of the published method), ``corrected``, ``cause``, ``evidence`` and
``conclusion_changes``. Four causes: the row-position join of SAT statistics (Table 1, the
behaviour-on-SAT OLS and the behavioural moderation models), the
early-stopped EM fit of the pause mixture (threshold, components, delta BIC), the participant
bootstrap's k-squared weighting (BT strength intervals) and the theme tests' FDR family.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from nonolab.study.schemas import read_csv

#: Columns of ``results/tables/errata.csv``.
ERRATA_COLUMNS = [
    "quantity",
    "published",
    "reproduced_as_published",
    "corrected",
    "cause",
    "evidence",
    "conclusion_changes",
]

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
        {
            c: pd.Series(dtype=float if c.endswith(("published", "corrected")) else object)
            for c in ERRATA_COLUMNS
        }
    )


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


def _row(quantity, published, reproduced, corrected, cause, evidence, conclusion) -> dict:
    return {
        "quantity": quantity,
        "published": float(published),
        "reproduced_as_published": float(reproduced),
        "corrected": float(corrected),
        "cause": cause,
        "evidence": evidence,
        "conclusion_changes": conclusion,
    }


def _significance(p_pub: float, p_corr: float, alpha: float) -> str:
    a, b = p_pub < alpha, p_corr < alpha
    if a == b:
        side = "<" if a else ">="
        return f"no: p {side} {alpha:g} either way"
    return f"yes: p {'<' if a else '>='} {alpha:g} published, {'<' if b else '>='} corrected"


def _sign_change(published: float, corrected: float, decimals: int) -> str | None:
    """Return ``"negative -> positive"`` (etc.) when the rounded signs differ, else None."""
    sp, sc = np.sign(round(published, decimals)), np.sign(round(corrected, decimals))
    if sp == sc:
        return None
    sign = {-1.0: "negative", 0.0: "zero", 1.0: "positive"}
    return f"{sign[sp]} -> {sign[sc]}"


def aligned_rows(
    published: pd.DataFrame,
    ours: pd.DataFrame,
    *,
    keys: Mapping[str, str],
    columns: Mapping[str, str],
    quantity: str,
    source: str,
    cause: str = CAUSE_TABLE1,
    p_of: Mapping[str, str] | None = None,
    p_columns: Sequence[str] = (),
    alpha: float = 0.05,
    decimals: int = 3,
    significant: int | None = None,
) -> list[dict]:
    """Return the errata rows of a table that nonolab computes under both SAT-statistics
    alignments, one per published value whose corrected value differs at ``decimals`` (or,
    with ``significant``, at that many significant digits of the published value).

    ``published``: the published table; ``ours``: nonolab's table with an ``alignment`` column
    (``published`` = the row-position join reproduced, ``corrected`` = joined by clue hash).
    ``keys`` maps each key column of ``ours`` to its published name, ``columns`` each value
    column label (a column of ``ours``) to its published name. ``quantity`` is formatted with
    the key values and ``label`` (e.g. ``"Table 1 {label}, {metric}"``); ``source`` names
    nonolab's table in the evidence. ``p_of`` maps a value column to the column of its p-value:
    the conclusion then says whether the sign or the significance at ``alpha`` changes; a
    p-value column (a value of ``p_of`` or one of ``p_columns``) gets the significance; any
    other column the sign only.
    """
    p_of = dict(p_of or {})
    p_cols = set(p_of.values()) | set(p_columns)
    pub = published.rename(columns={v: k for k, v in keys.items()})
    by_align = {
        a: ours[ours["alignment"] == a].set_index(list(keys)) for a in ("published", "corrected")
    }
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
                f"{source}: the row-position alignment {_reproduces(rep, p_val, dec)} "
                f"the published value ({rep:{shown}}); the clue-hash alignment gives "
                f"{cor:{shown}}"
            )
            if col in p_of:
                p_pub = float(prow[columns.get(p_of[col], p_of[col])])
                significance = _significance(p_pub, float(cor_row[p_of[col]]), alpha)
                flip = _sign_change(p_val, cor, dec)
                conclusion = significance
                if flip is not None:
                    conclusion = f"yes: sign {flip}; " + significance.replace(
                        "no: ", "significance unchanged, "
                    ).replace("yes: ", "")
            elif col in p_cols:
                conclusion = _significance(p_val, cor, alpha)
            else:
                flip = _sign_change(p_val, cor, dec)
                conclusion = "no: same sign" if flip is None else f"yes: sign {flip}"
            rows.append(
                _row(
                    quantity.format(label=col, **names),
                    p_val,
                    rep,
                    cor,
                    cause,
                    evidence,
                    conclusion,
                )
            )
    return rows


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
    ``corrected_*`` of ``bt_rho``, ``bt_p``, ``raw_rho``, ``raw_p``, ``bt_p_fdr``);
    ``published``: the published statistics file (he2026: ``stats_bt_vs_sat.csv``:
    ``predictor_type``, ``predictor``, ``bt_rho``, ``bt_p``, ``raw_rho``, ``raw_p``,
    ``bt_p_fdr``). Values are compared at ``decimals`` (the published table's 3)."""
    if "published_bt_rho" not in erratum.columns:
        return []
    stats = [
        s for s in TABLE1_LABELS if f"published_{s}" in erratum.columns and s in published.columns
    ]
    ours = pd.concat(
        [
            erratum[["metric"]]
            .assign(alignment=a)
            .join(erratum[[f"{a}_{s}" for s in stats]].set_axis(stats, axis=1))
            for a in ("published", "corrected")
        ],
        ignore_index=True,
    ).rename(columns=TABLE1_LABELS)
    pub = published[published["predictor_type"] == "sat_metric"].rename(columns=TABLE1_LABELS)
    return aligned_rows(
        pub,
        ours,
        keys={"metric": "predictor"},
        columns={TABLE1_LABELS[s]: TABLE1_LABELS[s] for s in stats},
        quantity="Table 1 {label}, {metric}",
        source="table1_erratum.csv",
        p_of={"BT rho": "BT p", "raw rho": "raw p"},
        p_columns=["BT p (FDR)"],
        alpha=alpha,
        decimals=decimals,
    )


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


def pause_rows(record: Mapping, published: Mapping[str, tuple[float, int]]) -> list[dict]:
    """Return the errata rows of the pause threshold, its log crossing, the BIC improvements and
    the 3 mixture components: published (:func:`parse_pause_report`) vs the
    ``published_settings_fit`` and ``converged_fit`` of ``record``
    (``results/pauses/threshold.json``). Empty when the record has no such fits."""
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
    k = len(conv["means_log"])
    best_pub = max(pub_fit["delta_bic_vs_1"].items(), key=lambda kv: kv[1])[0]
    best_conv = max(conv["delta_bic_vs_1"].items(), key=lambda kv: kv[1])[0]
    bic_conclusion = (
        f"no: {best_conv} components remain best by BIC"
        if best_pub == best_conv
        else f"yes: {best_conv} components best by BIC instead of {best_pub}"
    )
    thr_conclusion = (
        "not assessed here: pause counts keep the published threshold under the study's "
        "preset; results/tables/threshold_sensitivity.csv gives the pause results at other "
        "thresholds"
    )
    comp_conclusion = "follows the threshold: the crossing is computed from these components"
    items = [
        ("pause threshold (s)", "threshold_s", lambda f: f["threshold_s"], thr_conclusion),
        ("pause crossing (log s)", "threshold_log", lambda f: f["threshold_log"], thr_conclusion),
    ]
    for j in (2, 3):
        items.append(
            (
                f"BIC improvement, {j} vs 1 components",
                f"delta_bic_{j}",
                lambda f, j=j: f["delta_bic_vs_1"][str(j)],
                bic_conclusion,
            )
        )
    for i in range(k):
        items += [
            (f"component {i} mean (s)", f"mean_s_{i}", lambda f, i=i: f["means_s"][i], None),
            (f"component {i} SD (log s)", f"sd_log_{i}", lambda f, i=i: f["sds_log"][i], None),
            (f"component {i} weight", f"weight_{i}", lambda f, i=i: f["weights"][i], None),
        ]
    rows = []
    for label, key, get, conclusion in items:
        if key not in published:
            continue
        value, dec = published[key]
        if key.startswith("delta_bic") and str(key[-1]) not in conv["delta_bic_vs_1"]:
            continue
        cor = float(get(conv))
        if not changes(value, cor, dec):
            continue
        rows.append(
            _row(
                label,
                value,
                get(pub_fit),
                cor,
                CAUSE_EM,
                evidence,
                conclusion or comp_conclusion,
            )
        )
    return rows


def bootstrap_rows(
    strengths: pd.DataFrame, published: pd.DataFrame, decimals: int = 3
) -> list[dict]:
    """Return the errata rows of the BT strength intervals: the published bounds
    (``puzzle_id``, ``theta_ci_lower``, ``theta_ci_upper``; he2026:
    ``bt_difficulty_vs_sat.csv``) vs ``ci_low_published_semantics`` / ``ci_high_published_semantics``
    and ``ci_low`` / ``ci_high`` of ``results/tables/bt_strengths.csv``, compared at
    ``decimals``. Empty when ``strengths`` lacks the published-semantics columns."""
    need = {"ci_low_published_semantics", "ci_high_published_semantics"}
    if not need <= set(strengths.columns):
        return []
    s = strengths.assign(puzzle_id=strengths["puzzle_id"].astype(str)).set_index("puzzle_id")
    pub = published.assign(puzzle_id=published["puzzle_id"].astype(str)).set_index("puzzle_id")
    rows = []
    for pid in s.index.intersection(pub.index):
        lo = (float(pub.loc[pid, "theta_ci_lower"]), float(s.loc[pid, "ci_low"]))
        hi = (float(pub.loc[pid, "theta_ci_upper"]), float(s.loc[pid, "ci_high"]))
        excl_pub = not (lo[0] <= 1.0 <= hi[0])
        excl_cor = not (lo[1] <= 1.0 <= hi[1])
        conclusion = (
            f"no: the interval {'excludes' if excl_cor else 'includes'} 1 (the average puzzle) "
            "either way"
            if excl_pub == excl_cor
            else f"yes: the interval {'excludes' if excl_cor else 'includes'} 1 (the average "
            "puzzle) once corrected"
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
                    conclusion,
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
    give no theme p-values."""
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
        rows.append(
            _row(
                f"theme {r['code']} FDR p",
                float("nan"),
                rep,
                cor,
                CAUSE_FDR,
                evidence,
                _significance(rep, cor, alpha),
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
    return aligned_rows(
        pub,
        table[table["metric"] == metric],
        keys={"predictor": "predictor"},
        columns={"coef": "coef", "p_value": "p_value"},
        quantity=source + " {predictor} {label}",
        source=source,
        p_of={"coef": "p_value"},
        alpha=alpha,
        significant=3,
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
    return aligned_rows(
        pub,
        ours,
        keys={"outcome": "outcome", "metric": "predictor"},
        columns=columns,
        quantity=source + " {outcome} x {metric} {label}",
        source=source,
        p_of=terms,
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
        p_of={"coef": "p"},
        p_columns=["p_fdr"],
        alpha=alpha,
        significant=3,
    )


def moderation_wide(table: pd.DataFrame, moderator: str = "expertise_composite") -> pd.DataFrame:
    """Return the long moderation table (``results/tables/moderation_raw.csv``: one row per
    ``alignment`` x ``metric`` x ``term``) as one row per alignment x metric with the published
    file's columns: ``coef_metric``/``p_metric``, ``coef_expertise``/``p_expertise`` and
    ``interaction``/``p_interaction`` (coefficients in outcome units per covariate unit)."""
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
    return aligned_rows(
        published,
        moderation_wide(table),
        keys={"metric": "predictor"},
        columns={c: c for pair in terms.items() for c in pair},
        quantity=source + " {metric} {label}",
        source=source,
        p_of=terms,
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
    return aligned_rows(
        published,
        table,
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
    quantity = "ordered puzzle selections served"
    return [_row(quantity, published, sessions, distinct, CAUSE_SELECTIONS, evidence, conclusion)]


CAUSE_SAMPLE = (
    "rating sample: the published difficulty-adjustment files were computed from an earlier "
    "feature table without the 3 final ratings given after unsolved attempts (177 of 180)"
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


def adjustment_model_rows(
    table: pd.DataFrame, published: pd.DataFrame, *, model: str, source: str, alpha: float = 0.05
) -> list[dict]:
    """Return the errata rows of a published difficulty-adjustment OLS (he2026:
    ``order_adjustment_model_params.csv`` for ``model`` "order", ``expertise_adjustment_model_
    params.csv`` for "expertise_order": ``term``, ``coef``, ``se``, ``p_value``) from
    ``results/tables/adjustment_models.csv`` (the published and the corrected rating sample),
    compared at 3 significant digits."""
    ours = _as_published_and_corrected(table[table["model"] == model], sample_only=True)
    return aligned_rows(
        published,
        ours,
        keys={"term": "term"},
        columns={"coef": "coef", "se": "se", "p_value": "p_value"},
        quantity=source + " {term} {label}",
        source="adjustment_models.csv",
        cause=CAUSE_SAMPLE,
        p_of={"coef": "p_value"},
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
    return aligned_rows(
        published,
        _as_published_and_corrected(table),
        keys={"sat_metric": "sat_metric"},
        columns={c: c for c in cols},
        quantity=source + " {sat_metric} {label}",
        source="adjusted_difficulty_vs_sat.csv",
        cause=CAUSE_SAMPLE_AND_JOIN,
        p_of={"raw_spearman_rho": "raw_spearman_p", "adjusted_spearman_rho": "adjusted_spearman_p"},
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
    fit (``pause_report``), the BT intervals (``bt_strengths``), every table of ``aligned``
    (:data:`ALIGNED_TABLES`; inputs ``<key>`` = the published file, ``ours_<key>`` = nonolab's
    table), the theme FDR family and the count of ordered selections served."""
    rows: list[dict] = []
    if "table1" in published:
        erratum = read_csv(inputs["table1_erratum"])
        rows += table1_rows(erratum, pd.read_csv(inputs["table1"]), alpha=alpha)
    if "pause_report" in published:
        with open(inputs["threshold"], encoding="utf-8") as fh:
            record = json.load(fh)
        with open(inputs["pause_report"], encoding="utf-8") as fh:
            published_pauses = parse_pause_report(fh.read())
        log(f"published pause numbers: {published_pauses}")
        rows += pause_rows(record, published_pauses)
    if "bt_strengths" in published:
        strengths = read_csv(inputs["strengths"], dtype={"puzzle_id": str})
        pub = pd.read_csv(inputs["bt_published"], dtype={"puzzle_id": str})
        found = bootstrap_rows(strengths, pub)
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
    return pd.DataFrame(rows, columns=ERRATA_COLUMNS)
