"""The public study's errata table and moderation conclusion as the workflow writes them
(slow: the workflow runs into a temporary folder; ``NONOLAB_PUBLIC_RESULTS=<dir>/results``
reuses the results of an earlier ``nonolab run`` of the public study instead).

Every verdict of ``errata.csv`` is recomputed here from the source tables with this file's own
code (the rule's p column of each table, Benjamini-Hochberg by statsmodels within the stated
family, the category rules); no row may claim a significance change that the adjusted
inference does not show; the README's counts and its moderation sentences are the functions'
output on these tables."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from snake import snakemake
from statsmodels.stats.multitest import multipletests

from nonolab.stats import errata
from nonolab.stats.conclusion import conclusion_sentences
from nonolab.study.presets import REPO

pytestmark = [pytest.mark.study, pytest.mark.slow]
MOD = "expertise_composite"


@pytest.fixture(scope="module")
def results(tmp_path_factory, study_dir) -> Path:
    given = os.environ.get("NONOLAB_PUBLIC_RESULTS")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("public")
    run = snakemake(
        "results/tables/errata.csv",
        "results/tables/moderation_conclusion.csv",
        directory=out,
        config={"study_dir": study_dir},
        timeout=5400,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return out / "results"


@pytest.fixture(scope="module")
def table(results) -> pd.DataFrame:
    return pd.read_csv(results / "tables/errata.csv")


def _bh(p: pd.Series) -> pd.Series:
    """BH over a family; a missing p counts as 1 and stays missing."""
    p = p.astype(float)
    adj = multipletests(p.fillna(1.0), method="fdr_bh")[1]
    return pd.Series(adj, index=p.index).where(p.notna())


def _verdict(rep: pd.Series, cor: pd.Series, p: str, est: str | None, adj: pd.Series) -> dict:
    return {
        "p_published_rule": rep[p],
        "p_corrected_rule": cor[p],
        "p_published_adjusted": adj[rep.name],
        "p_corrected_adjusted": adj[cor.name],
        "effect_published": rep[est] if est else np.nan,
        "effect_corrected": cor[est] if est else np.nan,
    }


def _family_adjusted(t: pd.DataFrame, p: str, by: list[str], keep=None) -> pd.Series:
    sel = t if keep is None else t[keep(t)]
    out = pd.Series(np.nan, index=t.index)
    for _, g in sel.groupby(by):
        out[g.index] = _bh(g[p])
    return out


def expected_verdicts(results: Path, study_dir: Path, quantity: str) -> dict | None:
    """The verdict of one errata row recomputed from the source tables; None: no inference."""
    tab = results / "tables"
    if quantity.startswith("Table 1 "):
        label, metric = quantity.removeprefix("Table 1 ").split(", ")
        kind = "bt" if label.startswith("BT") else "raw"
        t = pd.read_csv(tab / "table1_erratum.csv").set_index("metric")
        rows = {}
        perm = "perm_p" if kind == "bt" else "raw_perm_p"  # Table 1's own test
        for a in ("published", "corrected"):
            rows[a] = {
                "p": t.loc[metric, f"{a}_{perm}"],
                "rho": t.loc[metric, f"{a}_{kind}_rho"],
                "adj": _bh(t[f"{a}_{perm}"])[metric],
            }
        return {
            "p_published_rule": rows["published"]["p"],
            "p_corrected_rule": rows["corrected"]["p"],
            "p_published_adjusted": rows["published"]["adj"],
            "p_corrected_adjusted": rows["corrected"]["adj"],
            "effect_published": rows["published"]["rho"],
            "effect_corrected": rows["corrected"]["rho"],
        }
    if m := re.match(r"stats_behavioral_vs_(\w+)\.csv (\w+) (coef|p_value)$", quantity):
        metric, pred = m.group(1), m.group(2).replace("time_to_solve_sec", "time_to_solve_s")
        t = pd.read_csv(tab / "behaviour_on_sat.csv")
        adj = _family_adjusted(
            t, "p_cluster", ["alignment", "metric"], lambda d: d["predictor"] != "const"
        )
        sel = t[(t["metric"] == metric) & (t["predictor"] == pred)]
        rep, cor = (sel[sel["alignment"] == a].iloc[0] for a in ("published", "corrected"))
        return _verdict(rep, cor, "p_cluster", "coef", adj)
    if m := re.match(r"stats_moderation_behavioral\.csv (\w+) x (\w+) (\w+)$", quantity):
        outcome, metric, label = m.groups()
        term = {"coef_metric": "metric", "p_metric": "metric", "coef_expertise": "expertise"}
        term |= {"p_expertise": "expertise", "interaction": "interaction"}
        term |= {"p_interaction": "interaction"}
        name = term[label]
        t = pd.read_csv(tab / "behaviour_moderation.csv")
        t["outcome"] = t["outcome"].replace({"time_to_solve_sec": "time_to_solve_s"})
        adj = _family_adjusted(t, f"p_satt_{name}", ["alignment"])
        sel = t[(t["outcome"] == outcome.replace("_sec", "_s")) & (t["metric"] == metric)]
        rep, cor = (sel[sel["alignment"] == a].iloc[0] for a in ("published", "corrected"))
        est = {"metric": "coef_metric", "expertise": "coef_expertise"}.get(name, "interaction")
        return _verdict(rep, cor, f"p_satt_{name}", est, adj)
    if m := re.match(r"stats_behavioral_vs_sat_metrics\.csv (\w+) ~ (\w+) \w+$", quantity):
        outcome, metric = m.groups()
        t = pd.read_csv(tab / "behaviour_models_raw.csv")
        adj = _family_adjusted(t, "p_satt", ["alignment"])
        sel = t[(t["outcome_column"] == outcome) & (t["metric"] == metric)]
        rep, cor = (sel[sel["alignment"] == a].iloc[0] for a in ("published", "corrected"))
        return _verdict(rep, cor, "p_satt", "coef", adj)
    if m := re.match(r"stats_moderation_expertise\.csv (\w+) (\w+)$", quantity):
        metric, label = m.groups()
        name = label.removeprefix("coef_").removeprefix("p_")
        t = pd.read_csv(tab / "moderation_raw.csv")
        terms = {"metric": lambda x: x, "expertise": lambda x: MOD}
        terms["interaction"] = lambda x: f"{x}:{MOD}"
        t = t[t["term"] == t["metric"].map(terms[name])]
        adj = _family_adjusted(t, "p_satt", ["alignment"])
        sel = t[t["metric"] == metric]
        rep, cor = (sel[sel["alignment"] == a].iloc[0] for a in ("published", "corrected"))
        return _verdict(rep, cor, "p_satt", "coef", adj)
    if m := re.match(
        r"(order|expertise)_adjustment_model_params\.csv (.+) (coef|se|p_value)$", quantity
    ):
        model = "order" if m.group(1) == "order" else "expertise_order"
        term = m.group(2)
        t = pd.read_csv(tab / "adjustment_models.csv")
        t = t[t["model"] == model]
        adj = _family_adjusted(t, "p_value", ["sample"], lambda d: d["term"] != "Intercept")
        sel = t[t["term"] == term]
        rep, cor = (sel[sel["sample"] == a].iloc[0] for a in ("published", "corrected"))
        return _verdict(rep, cor, "p_value", "coef", adj)
    if m := re.match(
        r"stats_expertise_adjusted_difficulty_vs_sat\.csv (\w+) (raw|adjusted)_", quantity
    ):
        metric, kind = m.groups()
        t = pd.read_csv(tab / "adjusted_difficulty_vs_sat.csv")
        t = t[t["alignment"] == t["sample"]]
        adj = _family_adjusted(t, f"{kind}_spearman_p", ["alignment"])
        sel = t[t["sat_metric"] == metric]
        rep, cor = (sel[sel["alignment"] == a].iloc[0] for a in ("published", "corrected"))
        return _verdict(rep, cor, f"{kind}_spearman_p", f"{kind}_spearman_rho", adj)
    if m := re.match(r"theme (\w+) FDR p$", quantity):
        t = pd.read_csv(tab / "themes_vs_difficulty.csv")
        t = t[t["p"].notna()]
        narrow = t[t["n_present"] >= 2]
        r = t[t["code"] == m.group(1)].iloc[0]
        return {
            "p_published_rule": r["p"],
            "p_corrected_rule": r["p"],
            "p_published_adjusted": _bh(narrow["p"])[r.name],
            "p_corrected_adjusted": r["p_fdr"],
            "effect_published": r["rank_biserial"],
            "effect_corrected": r["rank_biserial"],
        }
    return None


def _category(v: dict, alpha: float = 0.05) -> str:
    a, b = v["p_published_adjusted"], v["p_corrected_adjusted"]
    if not (np.isfinite(a) and np.isfinite(b)):
        return "estimate"
    if (a < alpha) != (b < alpha):
        return "significance"
    if a < alpha and v["effect_published"] * v["effect_corrected"] < 0:
        return "direction"
    return "estimate"


def test_every_verdict_recomputed_from_the_source_tables(table, results, study_dir):
    assert set(table["change_category"]) <= set(errata.CHANGE_CATEGORIES)
    assert set(table["cause_evidence"]) <= set(errata.CAUSE_EVIDENCE)
    judged = 0
    for _, row in table.iterrows():
        want = expected_verdicts(results, study_dir, row["quantity"])
        if want is None:
            if row["quantity"].startswith("BT strength"):
                assert row["change_category"] == "estimate"
                assert pd.isna(row["significant_published_adjusted"])
                continue
            assert np.isnan(row["p_corrected_adjusted"]), row["quantity"]
            assert row["change_category"] == "estimate", row["quantity"]
            continue
        judged += 1
        for k, v in want.items():
            got = row[k]
            assert (np.isnan(got) and np.isnan(v)) or got == pytest.approx(v, rel=1e-9), (
                row["quantity"],
                k,
                got,
                v,
            )
        assert row["change_category"] == _category(want), row["quantity"]
        for side in ("published", "corrected"):
            p = want[f"p_{side}_adjusted"]
            flag = row[f"significant_{side}_adjusted"]
            assert (pd.isna(flag) and np.isnan(p)) or bool(flag) == (p < 0.05)
    assert judged > 150


def test_no_significance_change_without_the_adjusted_verdicts(table):
    sig = table[table["change_category"] == "significance"]
    assert len(sig) > 0
    assert (sig["significant_published_adjusted"] != sig["significant_corrected_adjusted"]).all()
    # the examples: puzzle-level slopes judged by Satterthwaite (df ~ 4) change nothing
    models = table[table["quantity"].str.startswith("stats_behavioral_vs_sat_metrics.csv")]
    assert set(models["change_category"]) == {"estimate"}
    pc = models[models["quantity"] == "stats_behavioral_vs_sat_metrics.csv pause_count ~ "
                "propagations p"].iloc[0]  # fmt: skip
    assert round(pc["p_corrected_rule"], 3) == 0.099
    # the 177-of-180 rating sample is an analysis choice, never an error by itself
    sample_only = table[table["cause"] == errata.CAUSE_SAMPLE]
    assert set(sample_only["cause_evidence"]) == {"analysis choice"}


def test_readme_counts_and_sentences_are_the_functions_output(table, results):
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    text = errata.errata_summary_text(errata.errata_summary(table))
    assert text in readme, text
    conclusion = pd.read_csv(results / "tables/moderation_conclusion.csv")
    sentences = conclusion_sentences(conclusion, ["decisions", "propagations", "conflicts"])
    assert sentences in readme, sentences


def test_the_order_check_record_carries_the_order_check(results):
    """The pause_order rule's record (threshold.json no longer holds the check: features does
    not wait for it)."""
    import json

    assert "order_dependence" not in json.loads((results / "pauses/threshold.json").read_text())
    rec = json.loads((results / "pauses/order_dependence.json").read_text())
    assert rec["run"] is True and set(rec["provenance"]["inputs"]) == {
        "results/ingest/events.parquet"
    }
    od = rec["order_dependence"]
    assert od["n_orders"] == 20
    pub = od["published_settings"]["crossing_s"]
    assert pub["max"] - pub["min"] > 1e-3  # the early-stopped fit moves with the order
    conv = od["converged"]["crossing_s"]
    assert conv["max"] - conv["min"] < 1e-4  # the optimum does not
    t = pd.read_csv(results / "tables/pause_order_dependence.csv")
    assert len(t) == (od["n_published_orders"] + 1) + (od["n_orders"] + 1)
    assert od["n_published_orders"] >= 40 and od["published_settings"]["crossing_stable"]
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert f"{pub['min']:.3f}-{pub['max']:.3f} s" in readme
