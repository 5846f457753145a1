"""Errata table (nonolab.stats.errata): unit tests, the public study's rows per cause, and the
empty table of a study without published files (the example study, through Snakemake)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from public_study import minisat_metrics, published_features, study_ingest
from snake import snakemake
from statsmodels.stats.multitest import multipletests

from nonolab.stats import errata
from nonolab.stats.pauses import pause_threshold
from nonolab.study.features import interaction_gaps
from nonolab.study.presets import REPO, resolve_preset

PUB_T1 = "analyze-data/out_features/stats_bt_vs_sat.csv"
PUB_BT = "analyze-data/out_features/bt_difficulty_vs_sat.csv"
PUB_PAUSES = "analyze-data/PAUSE_THRESHOLD_REPORT.md"


def test_changes_at_the_published_precision():
    assert not errata.changes(2.36, 2.3562, 2)
    assert errata.changes(2.36, 1.5174, 2)
    assert errata.changes(float("nan"), 0.2, 3)
    assert errata.decimals_of("7,387.1") == 1 and errata.decimals_of("62.1%") == 1


def test_empty_table_has_the_columns():
    t = errata.errata_table([])
    assert list(t.columns) == errata.ERRATA_COLUMNS and t.empty


def test_parse_pause_report_synthetic():
    text = (
        "**Threshold chosen:** 2.36 s\n| 2 | baseline − 2,973.7 |\n| 3 | baseline − 7,387.1 |\n"
        "| 1 | 0.794 s | 0.642 | 62.1% | x |\n- Crossover in log-space: **0.857**\n"
    )
    got = errata.parse_pause_report(text)
    assert got["threshold_s"] == (2.36, 2) and got["delta_bic_3"] == (7387.1, 1)
    assert got["weight_1"] == (pytest.approx(0.621), 3) and got["threshold_log"] == (0.857, 3)


def _strengths(with_published: bool) -> pd.DataFrame:
    s = pd.DataFrame({"puzzle_id": ["0", "1"], "ci_low": [0.5, 1.2], "ci_high": [2.0, 3.0]})
    if with_published:
        s["ci_low_published_semantics"] = [0.37, 0.8]
        s["ci_high_published_semantics"] = [2.7, 4.4]
    return s


def test_bootstrap_rows_need_the_published_semantics_columns():
    pub = pd.DataFrame(
        {"puzzle_id": ["0", "1"], "theta_ci_lower": [0.37, 0.8], "theta_ci_upper": [2.7, 4.4]}
    )
    assert errata.bootstrap_rows(_strengths(False), pub) == []
    rows = errata.bootstrap_rows(_strengths(True), pub)
    assert len(rows) == 4
    r = rows[2]  # puzzle 1, lower bound: the interval now excludes 1
    assert (r["published"], r["reproduced_as_published"], r["corrected"]) == (0.8, 0.8, 1.2)
    assert "reproduces" in r["evidence"] and r["cause_evidence"] == "error"
    # the interval now excludes 1; intervals have no adjusted verdict: an estimate change
    assert (r["significant_published"], r["significant_corrected"]) == (False, True)
    assert r["significant_corrected_adjusted"] is None and r["change_category"] == "estimate"


def test_theme_fdr_rows_recompute_the_narrow_family():
    themes = pd.DataFrame(
        {"code": ["A", "B", "C"], "n_present": [10, 20, 1], "p": [0.01, 0.04, 0.5]}
    )
    themes["p_fdr"] = [0.03, 0.06, 0.5]  # BH over all three
    rows = errata.theme_fdr_rows(themes, min_present=2)
    # BH over A, B only: 0.02, 0.04; B crosses 0.05.
    assert [r["quantity"] for r in rows] == ["theme A FDR p", "theme B FDR p"]
    assert [r["reproduced_as_published"] for r in rows] == pytest.approx([0.02, 0.04])
    assert rows[1]["change_category"] == "significance"
    assert rows[0]["change_category"] == "estimate"  # 0.02 -> 0.03: below 0.05 either way
    assert (rows[1]["p_published_adjusted"], rows[1]["p_corrected_adjusted"]) == (
        pytest.approx(0.04),
        0.06,
    )
    assert np.isnan(rows[0]["published"])
    assert errata.theme_fdr_rows(themes, min_present=1) == []


# -- the public study --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def published(study_dir):
    return resolve_preset(study_dir).data["published"]


@pytest.mark.study
def test_preset_names_the_published_files(study_dir, published):
    for key in ("bt_vs_sat", "bt_strengths", "pause_report"):
        assert (study_dir / published[key]).is_file()
    assert published["themes_fdr_min_present"] == 2


@pytest.mark.study
def test_public_study_table1_rows(study_dir):
    from nonolab.stats.correlations import (
        aligned_metrics,
        erratum_table,
        published_alignment,
        raw_mean_rating,
        table1,
    )
    from nonolab.stats.ranking import pairwise_comparisons, strengths_table

    att = published_features(study_dir)
    metrics = minisat_metrics(study_dir)
    served = att[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    pool = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv")
    aligned = {
        "published": aligned_metrics(metrics, served, published_alignment(pool, served, metrics)),
        "corrected": aligned_metrics(metrics, served),
    }
    strengths = strengths_table(
        pairwise_comparisons(att, "final_difficulty"), sorted(served.puzzle_id)
    )
    err = erratum_table(
        table1(strengths, raw_mean_rating(att), aligned), "minisat22", "block_start"
    )
    rows = errata.table1_rows(err, pd.read_csv(study_dir / PUB_T1))
    got = {r["quantity"]: r for r in rows}
    bt = [got[f"Table 1 BT rho, {m}"] for m in ("decisions", "propagations", "conflicts")]
    assert [f"{r['published']:.3f}" for r in bt] == ["-0.257", "-0.257", "0.000"]
    assert [f"{r['reproduced_as_published']:.3f}" for r in bt] == ["-0.257", "-0.257", "0.000"]
    assert [f"{r['corrected']:.3f}" for r in bt] == ["0.429", "0.429", "0.478"]
    # every sign changes, but no correlation is significant either way: estimate changes only
    assert all(r["effect_published"] <= 0 < r["effect_corrected"] for r in bt)
    assert all(r["change_category"] == "estimate" for r in rows)
    assert all(r["family"].endswith("BH over 3 tests") for r in rows)
    # |rho| of the raw conflicts correlation is unchanged, but Table 1's p is the exact one
    assert "exact permutation" in got["Table 1 raw p, conflicts"]["cause"]
    assert len(rows) == 11 + 3 + 1
    # the BH adjustment of the three BT p-values, published 0.934 / 0.934 / 1.000
    fdr = [got[f"Table 1 BT p (FDR), {m}"] for m in ("decisions", "propagations", "conflicts")]
    bt_p = [got[f"Table 1 BT p, {m}"]["corrected"] for m in ("decisions", "propagations")]
    bt_p.append(err.set_index("metric").loc["conflicts", "corrected_perm_p"])
    want = multipletests(bt_p, method="fdr_bh")[1]
    assert [f"{r['published']:.3f}" for r in fdr] == ["0.934", "0.934", "1.000"]
    np.testing.assert_allclose([r["corrected"] for r in fdr], want, rtol=1e-12)
    assert all(
        (r["significant_published_adjusted"], r["significant_corrected_adjusted"]) == (False, False)
        for r in fdr
    )
    # one p per number: the corrected p and the verdicts are Table 1's exact permutation p
    assert [f"{p:.4f}" for p in bt_p] == ["0.4194", "0.4194", "0.4000"]
    assert all(r["p_corrected_rule"] in set(bt_p) or r["quantity"].startswith("Table 1 raw")
               for r in rows)  # fmt: skip
    assert all("exact permutation" in r["inference"] for r in rows)
    assert {r["verdict"] for r in rows} >= {"Table 1 decisions: Spearman; BT perm p"}
    assert {r["conclusion"] for r in rows} == {"sat_metrics_do_not_predict_difficulty"}
    assert {r["cause"] for r in rows} == {
        errata.CAUSE_TABLE1,
        errata.CAUSE_TABLE1 + "; " + errata.CAUSE_TABLE1_TEST,
    }
    assert {r["cause_evidence"] for r in rows} == {"error"}


@pytest.mark.study
def test_public_study_theme_fdr_rows(study_dir, published):
    from nonolab.stats.themes import (
        code_tests,
        load_coded_responses,
        theme_codes,
        theme_test_responses,
    )

    coded = load_coded_responses(study_dir / "riyad-analysis/derived/coded_responses.csv")
    tests = code_tests(theme_test_responses(coded), theme_codes(coded))
    rows = errata.theme_fdr_rows(tests, published["themes_fdr_min_present"])
    got = {r["quantity"]: r for r in rows}
    assert "TIME (n = 1)" in rows[0]["evidence"] and "11 themes" in rows[0]["evidence"]
    load = got["theme LOAD FDR p"]
    assert (f"{load['reproduced_as_published']:.4f}", f"{load['corrected']:.4f}") == (
        "0.0107",
        "0.0117",
    )
    # No theme crosses 0.05 between the two families.
    assert all(r["change_category"] == "estimate" for r in rows)
    assert all(r["p_published_rule"] == r["p_corrected_rule"] for r in rows)


@pytest.mark.study
def test_public_study_bootstrap_rows_skip_without_published_semantics(study_dir):
    s = pd.DataFrame({"puzzle_id": ["0"], "ci_low": [0.5], "ci_high": [2.0]})
    assert errata.bootstrap_rows(s, pd.read_csv(study_dir / PUB_BT, dtype={"puzzle_id": str})) == []


@pytest.mark.study
def test_public_study_pause_report_numbers(study_dir, published):
    got = errata.parse_pause_report((study_dir / published["pause_report"]).read_text())
    assert got["threshold_s"] == (2.36, 2) and got["threshold_log"] == (0.857, 3)
    assert got["delta_bic_2"] == (2973.7, 1) and got["delta_bic_3"] == (7387.1, 1)
    assert [got[f"mean_s_{i}"][0] for i in range(3)] == [0.012, 0.794, 6.014]


@pytest.mark.study
@pytest.mark.slow
def test_public_study_pause_rows(study_dir, published):
    """The converged fit (about two minutes): threshold 2.36 -> 1.5174 s, BIC improvements."""
    preset = resolve_preset(study_dir).data["published"]
    gaps = interaction_gaps(study_ingest(str(study_dir)).tables["events"])["gap_s"].to_numpy()
    rec = pause_threshold(
        gaps,
        preset_threshold=preset["pause_threshold_s"],
        preset_em_tol=preset["pause_em_tol"],
        converged={"random_state_checks": 0},
    )
    assert rec["threshold_used_s"] == 2.36  # pause counts keep the published threshold
    rows = errata.pause_rows(
        rec, errata.parse_pause_report((study_dir / published["pause_report"]).read_text())
    )
    got = {r["quantity"]: r for r in rows}
    thr = got["pause threshold (s)"]
    assert (thr["published"], f"{thr['reproduced_as_published']:.2f}") == (2.36, "2.36")
    assert f"{thr['corrected']:.4f}" == "1.5174"
    assert [
        f"{got[f'BIC improvement, {k} vs 1 components']['corrected']:,.1f}" for k in (2, 3)
    ] == [
        "3,728.7",
        "7,593.9",
    ]
    assert "4 EM iterations" in thr["evidence"]
    assert "component 0 mean (s)" not in got  # 0.012 s either way
    assert {r["cause"] for r in rows} == {errata.CAUSE_EM}
    assert {r["change_category"] for r in rows} == {"estimate"}
    # without an order check in the record every row is the early-stopped EM's error
    assert {r["cause_evidence"] for r in rows} == {"error"}


# -- a study without published files ------------------------------------------------------------


def test_example_study_preset_names_no_published_files():
    preset = resolve_preset(REPO / "data" / "example-study").data
    assert not preset.get("published")


@pytest.mark.slow
def test_example_study_errata_table_is_empty(tmp_path):
    """The example study's preset names no published files: the rule needs no upstream output
    and writes an empty table with a note."""
    out = snakemake(
        "results/tables/errata.csv",
        directory=tmp_path,
        config={"study_dir": REPO / "data" / "example-study"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    t = pd.read_csv(tmp_path / "results/tables/errata.csv")
    assert t.empty and list(t.columns) == errata.ERRATA_COLUMNS
    assert "names no published files" in (tmp_path / "results/logs/errata.log").read_text()
    assert (tmp_path / "results/tables/errata.md").exists()


def test_selections_row():
    record = {
        "complete_sessions": 67,
        "distinct_ordered": 48,
        "possible_ordered": 120,
        "distinct_unordered": 18,
        "possible_unordered": 20,
    }
    (row,) = errata.selections_rows(record, 67)
    assert (row["published"], row["reproduced_as_published"], row["corrected"]) == (67, 67, 48)
    assert "the design covered 48 of 120 ordered selections" in row["evidence"]
    assert (row["cause_evidence"], row["change_category"]) == ("error", "estimate")
    assert errata.selections_rows(record, 48) == []


def test_moderation_wide_by_hand():
    long = pd.DataFrame(
        {
            "alignment": ["corrected"] * 5,
            "metric": ["conflicts"] * 5,
            "term": [
                "Intercept",
                "conflicts",
                "expertise_composite",
                "conflicts:expertise_composite",
                "var_puzzle",
            ],
            "coef": [3.0, 0.1, 0.2, -0.01, 0.5],
            "p": [0.0, 0.5, 0.3, 0.02, np.nan],
        }
    )
    wide = errata.moderation_wide(long)
    assert wide.to_dict("records") == [
        {
            "alignment": "corrected",
            "metric": "conflicts",
            "coef_metric": 0.1,
            "p_metric": 0.5,
            "coef_expertise": 0.2,
            "p_expertise": 0.3,
            "interaction": -0.01,
            "p_interaction": 0.02,
        }
    ]


@pytest.mark.study
def test_public_study_moderation_rows(study_dir):
    """The published interaction p-values (.013/.006/.005) are reproduced under the
    row-position join; joined by clue hash they are .020/.052/.064: two of three lose
    significance at 0.05 (values from the moderation models refitted here)."""
    from public_study import covariates, study_tables

    from nonolab.stats import mixed_models as mm

    tables = study_tables(study_dir)
    att = mm.with_expertise(tables[0])
    mod = mm.across_alignments(
        covariates(tables, transform="raw"), lambda c: mm.moderation_models(att, c)[0]
    )
    pub = pd.read_csv(study_dir / "analyze-data/out_features/stats_moderation_expertise.csv")
    rows = {r["quantity"]: r for r in errata.moderation_rows(mod, pub)}
    inter = mod[mod["term"].str.contains(":") & (mod["alignment"] == "corrected")]
    want = dict(zip(inter["metric"], inter["p"], strict=True))
    got = {}
    for m in ("decisions", "propagations", "conflicts"):
        r = rows[f"stats_moderation_expertise.csv {m} p_interaction"]
        assert r["published"] == pub.set_index("predictor").loc[m, "p_interaction"]
        assert r["reproduced_as_published"] == pytest.approx(r["published"], abs=2e-3)
        assert r["corrected"] == want[m]
        got[m] = r
    # decisions x expertise: significant unadjusted either way (Satterthwaite .014 -> .022),
    # but not after BH over the three metrics once corrected (.065): a significance change of
    # the adjusted verdict, and the unadjusted columns show why
    d = got["decisions"]
    assert round(d["corrected"], 3) == 0.020
    assert (d["significant_published"], d["significant_corrected"]) == (True, True)
    assert (d["significant_published_adjusted"], d["significant_corrected_adjusted"]) == (
        True,
        False,
    )
    assert d["change_category"] == "significance" and d["family"].endswith("BH over 3 tests")
    want_adj = multipletests([got[m]["p_corrected_rule"] for m in got], method="fdr_bh")[1]
    np.testing.assert_allclose([got[m]["p_corrected_adjusted"] for m in got], want_adj)
    assert round(got["propagations"]["corrected"], 3) == 0.052
    assert round(got["conflicts"]["corrected"], 3) == 0.064
    assert all(r["change_category"] == "significance" for r in got.values())


@pytest.mark.study
def test_public_study_adjustment_rows(study_dir):
    """The published adjustment files rest on 177 of the 180 final ratings and the row-position
    join: the raw rho of difficulty with decisions, -0.493 as published, is 0.257 corrected."""
    from nonolab.stats.adjustment import study_adjustment

    att = published_features(study_dir)
    metrics = minisat_metrics(study_dir)
    models, diff, vs = study_adjustment(
        att,
        metrics,
        study_dir / "selected_six_nonogram_stats.csv",
        solver="minisat22",
        encoding="block_start",
    )
    out = study_dir / "analyze-data/out_features"
    rows = errata.adjusted_difficulty_vs_sat_rows(
        vs, pd.read_csv(out / "stats_expertise_adjusted_difficulty_vs_sat.csv")
    )
    got = {r["quantity"].split(".csv ")[1]: r for r in rows}
    raw = got["decisions raw_spearman_rho"]
    assert round(raw["published"], 3) == round(raw["reproduced_as_published"], 3) == -0.493
    assert round(raw["corrected"], 3) == 0.257
    assert raw["effect_published"] < 0 < raw["effect_corrected"]
    assert raw["change_category"] == "estimate"  # six puzzles: p > 0.3 either way
    # the corrected join alone (177 ratings) already moves -0.493 to 0.116: an error
    assert raw["cause_evidence"] == "error" and "gives 0.116" in raw["evidence"]
    assert {r["cause"] for r in rows} == {errata.CAUSE_SAMPLE_AND_JOIN}
    order = errata.ALIGNED_TABLES["order_adjustment"](
        models, pd.read_csv(out / "order_adjustment_model_params.csv")
    )
    t3 = {r["quantity"]: r for r in order}["order_adjustment_model_params.csv C(order)[T.3] coef"]
    assert (round(t3["published"], 4), round(t3["corrected"], 4)) == (0.0433, 0.0630)
    assert t3["reproduced_as_published"] == pytest.approx(t3["published"], rel=1e-6)
    per_puzzle = errata.adjusted_difficulty_rows(
        diff, pd.read_csv(out / "expertise_adjusted_puzzle_difficulty.csv")
    )
    assert all(r["reproduced_as_published"] == pytest.approx(r["published"]) for r in per_puzzle)
    assert any("puzzle 2 decisions" in r["quantity"] for r in per_puzzle)


def _pause_record(order: bool) -> dict:
    fit = {
        "threshold_s": 2.356,
        "threshold_log": float(np.log(2.356)),
        "n_iter": 4,
        "log_likelihood": -10.0,
        "em_tol": 1e-3,
        "means_log": [0.0],
        "means_s": [1.0],
        "sds_log": [1.0],
        "weights": [1.0],
        "delta_bic_vs_1": {"2": 2973.7, "3": 7387.1},
    }
    conv = fit | {"threshold_s": 1.517, "threshold_log": float(np.log(1.517)), "n_iter": 520}
    conv |= {"delta_bic_vs_1": {"2": 3728.7, "3": 7593.9}}
    rec = {"published_settings_fit": fit, "converged_fit": conv}
    if order:
        rec["order_dependence"] = {
            "n_orders": 20,
            "published_settings": {
                "crossing_s": {"min": 2.3533, "max": 2.3567},
                "delta_bic_2_vs_1": {"min": -289.3, "max": 2973.7},
                "delta_bic_3_vs_1": {"min": 7387.12, "max": 7387.14},
            },
            "converged": {"crossing_s": {"min": 1.51742, "max": 1.51742}},
        }
        conv["crossing_interval"] = {"low_s": 1.43, "high_s": 1.61, "level": 0.95}
        conv["crossing_interval"] |= {"decimals": 2}
    return rec


def test_pause_rows_not_reproducible_when_the_order_moves_the_published_number():
    published = {
        "threshold_s": (2.36, 2),
        "delta_bic_2": (2973.7, 1),
        "delta_bic_3": (7387.1, 1),
    }
    plain = {r["quantity"]: r for r in errata.pause_rows(_pause_record(False), published)}
    assert {r["cause_evidence"] for r in plain.values()} == {"error"}
    rows = {r["quantity"]: r for r in errata.pause_rows(_pause_record(True), published)}
    # 2.3533-2.3567 s spans 2.35 and 2.36; delta BIC(2) spans -289.3 to 2,973.7
    assert rows["pause threshold (s)"]["cause_evidence"] == "not reproducible"
    assert rows["BIC improvement, 2 vs 1 components"]["cause_evidence"] == "not reproducible"
    # 7,387.12-7,387.14 rounds to 7,387.1 in every order: the early-stopped EM is the cause
    assert rows["BIC improvement, 3 vs 1 components"]["cause_evidence"] == "error"
    assert "the converged crossing moves by 0.0e+00 s" in rows["pause threshold (s)"]["evidence"]
    assert (
        "pin the converged crossing to 1.43-1.61 s (95% delta-method interval)"
        in (rows["pause threshold (s)"]["evidence"])
    )
    assert "give 2.353 to 2.357 over 20 random orders" in rows["pause threshold (s)"]["evidence"]
    assert {r["change_category"] for r in rows.values()} == {"estimate"}


@pytest.mark.parametrize("ran", [True, False])
def test_study_errata_reads_the_order_check_from_its_own_record(tmp_path, ran):
    """The workflow's errata rule gives threshold.json (no ``order_dependence``) and the
    pause_order rule's record (``order_check``): the rows are those of the record that holds the
    summary (check ran), or of the record without it (check not run), whatever threshold.json
    says about the order."""
    whole = _pause_record(True)
    summary = whole.pop("order_dependence")
    stale = whole | {"order_dependence": {"n_orders": 99}}  # ignored: the check's record wins
    (tmp_path / "threshold.json").write_text(json.dumps(stale if not ran else whole))
    record = {"run": True, "order_dependence": summary} if ran else {"run": False, "why": "w"}
    (tmp_path / "order.json").write_text(json.dumps(record | {"provenance": {}}))
    (tmp_path / "report.md").write_text(
        "**Threshold chosen:** 2.36 s\n\n| 2 | baseline - 2,973.7 |\n| 3 | baseline - 7,387.1 |\n"
    )
    inputs = {
        "threshold": str(tmp_path / "threshold.json"),
        "order_check": str(tmp_path / "order.json"),
        "pause_report": str(tmp_path / "report.md"),
    }
    got = errata.study_errata(inputs, published=["pause_report"])
    published = errata.parse_pause_report((tmp_path / "report.md").read_text())
    assert set(published) == {"threshold_s", "delta_bic_2", "delta_bic_3"}
    expected = whole | {"order_dependence": summary} if ran else whole
    want = errata.errata_table(errata.pause_rows(expected, published))
    assert len(got) == 3
    pd.testing.assert_frame_equal(got, want)
    causes = set(got["cause_evidence"])
    assert causes == ({"not reproducible", "error"} if ran else {"error"})


def _judged(
    quantity: str, cause: str, p: tuple, effects: tuple, corrected: float = 2, verdict: str = ""
) -> dict:
    """An errata row with verdict p-values (published, corrected, published adjusted,
    corrected adjusted) and effects (published, corrected), evidence for ``verdict`` (default:
    the quantity's own)."""
    verdict_ = errata.Verdict(
        p_published=p[0],
        p_corrected=p[1],
        p_published_adjusted=p[2],
        p_corrected_adjusted=p[3],
        effect_published=effects[0],
        effect_corrected=effects[1],
    )
    return errata._row(
        quantity, 1, 1, corrected, "c", "e", cause, verdict_, 0.05, verdict or quantity
    )


def _summary_table() -> pd.DataFrame:
    rows = [
        _judged("a", "error", (0.01, 0.2, 0.03, 0.3), (1, 1)),
        _judged("b", "analysis choice", (0.01, 0.2, 0.06, 0.3), (1, 1)),
        _judged("c", "error", (0.001, 0.001, 0.003, 0.003), (1, -2), corrected=-2),
        errata._row("d", 1, 1, 2, "c", "e", "not reproducible"),
    ]
    return errata.errata_table(rows)


def test_change_category_and_summary():
    t = _summary_table()
    assert list(t["change_category"]) == ["significance", "estimate", "direction", "estimate"]
    got = errata.errata_summary(t)
    assert got["rows"] == got["published_rows"] == 4 and got["verdicts"] == 3
    assert got["change_category"] == {"significance": 1, "direction": 1, "estimate": 2}
    assert got["verdict_category"] == {"significance": 1, "direction": 1, "estimate": 1}
    assert got["cause_evidence"] == {"error": 2, "analysis choice": 1, "not reproducible": 1}
    assert got["by_cause"]["error"] == {"significance": 1, "direction": 1, "estimate": 0}
    # no verdict here is a registered stated conclusion: two other flips, none a conclusion
    assert got["conclusions_changed"] == 0 and got["other_flips"] == 2
    # b changes unadjusted (0.01 -> 0.2) but not adjusted (0.06 -> 0.3)
    assert got["unadjusted_only"] == 1
    # the same counts from the CSV as written and read back
    back = pd.read_csv(io.StringIO(t.to_csv(index=False)), keep_default_na=False, na_values=[""])
    assert errata.errata_summary(back) == got
    assert errata.errata_summary(errata.errata_table([]))["rows"] == 0


MODERATION = "final_difficulty ~ {m} x expertise (LMM); {term}"


def test_verdicts_count_once_however_many_rows_and_files_carry_them():
    """A coefficient and its p, in two published files (the same model), are one verdict; only
    a registered stated conclusion is a conclusion change; other flips are reported as such."""
    sig = (0.01, 0.2, 0.03, 0.3)
    rows = []
    for file in ("stats_moderation_expertise.csv", "stats_moderation_behavioral.csv"):
        for label in ("interaction", "p_interaction", "coef_expertise", "p_expertise"):
            term = label.removeprefix("coef_").removeprefix("p_")
            v = MODERATION.format(m="decisions", term=term)
            rows.append(_judged(f"{file} decisions {label}", "error", sig, (1, 1), verdict=v))
    t = errata.errata_table(rows)
    assert set(t["conclusion"]) == {"metric_by_expertise_interaction", ""}
    got = errata.errata_summary(t)
    assert got["rows"] == 8 and got["verdicts"] == 2
    assert got["conclusions_changed"] == 1 and got["other_flips"] == 1
    assert got["conclusion_changes"] == [MODERATION.format(m="decisions", term="interaction")]
    assert got["other_flip_verdicts"] == [MODERATION.format(m="decisions", term="expertise")]
    text = errata.errata_summary_text(got)
    assert "8 published numbers change" in text and "2 are judged" in text
    assert "1 of them a conclusion the paper states" in text
    assert "1 a term about which it states none" in text


def test_the_family_deciding_a_verdict_is_shown():
    # the same test (p .02 both ways) adjusted in two families: .047 in one, .06 in the other
    row = _judged("theme x FDR p", "analysis choice", (0.02, 0.02, 0.047, 0.06), (1, 1))
    got = errata.errata_summary(errata.errata_table([row]))
    assert got["family_decided"] == 1 and got["family_decided_verdicts"] == ["theme x FDR p"]
    assert "family decides 1 verdict (theme x FDR p)" in errata.errata_summary_text(got)
    # a flip that only the adjusted verdicts show is decided by the family too
    only_adj = _judged("y", "error", (0.004, 0.03, 0.04, 0.15), (1, 1), verdict="m; term")
    got = errata.errata_summary(errata.errata_table([only_adj]))
    assert got["family_decided_verdicts"] == ["m; term"]
    assert "(term in m)" in errata.errata_summary_text(got)


def test_registry_matches_the_verdict_names_the_rows_write():
    assert errata.stated_conclusion("Table 1 decisions: Spearman; BT perm p") == (
        "sat_metrics_do_not_predict_difficulty"
    )
    assert (
        errata.stated_conclusion("decisions ~ behaviours (OLS), error_count; cluster")
        == "error_count_predicts_decisions"
    )
    assert errata.stated_conclusion(MODERATION.format(m="conflicts", term="expertise")) == ""
    assert errata.stated_conclusion("") == ""


def test_cause_evidence_is_checked():
    with pytest.raises(ValueError, match="cause_evidence"):
        errata._row("a", 1, 1, 2, "c", "e", "bug")


_P = st.one_of(st.just(float("nan")), st.floats(0, 1))
_E = st.floats(-5, 5, allow_nan=False)


@given(pa=_P, pb=_P, ea=_E, eb=_E, alpha=st.sampled_from([0.01, 0.05, 0.1]))
@settings(max_examples=300, deadline=None)
def test_change_category_invariants(pa, pb, ea, eb, alpha):
    v = errata.Verdict(
        p_published_adjusted=pa, p_corrected_adjusted=pb, effect_published=ea, effect_corrected=eb
    )
    row = v.fields(alpha)
    cat = errata.change_category(row)
    known = np.isfinite(pa) and np.isfinite(pb)
    assert (cat == "significance") == (known and (pa < alpha) != (pb < alpha))
    assert (cat == "direction") == (
        known and pa < alpha and pb < alpha and np.sign(ea) * np.sign(eb) < 0
    )
    if not known:
        assert cat == "estimate" and (
            row["significant_published_adjusted"] is None
            or row["significant_corrected_adjusted"] is None
        )


@pytest.mark.parametrize("ours_ids", [["0", "1"], [0, 1], [0.0, 1.0]])
def test_representativeness_rows_match_ids_written_as_text_or_numbers(ours_ids):
    """The workflow reads id columns back as text; the published file has numbers: the rows
    must still pair up (a mismatch would drop every row silently)."""
    pub = pd.DataFrame(
        {
            "experiment_id": [0, 1],
            "pool_puzzle_id": [2, 21],
            "decisions_value": [4.0, 2.0],
            "propagations_value": [313.0, 307.0],
            "conflicts_value": [0.0, 0.0],
        }
    )
    ours = pd.concat(
        [
            pub.assign(alignment="published", experiment_id=ours_ids),
            pub.assign(alignment="corrected", experiment_id=ours_ids, decisions_value=[4, 13]),
        ]
    )
    ours["pool_puzzle_id"] = ours["pool_puzzle_id"].astype(str)
    rows = errata.representativeness_rows(ours, pub)
    assert [r["quantity"] for r in rows] == [
        "selection representativeness decisions_value, served puzzle 1"
    ]
    assert (rows[0]["published"], rows[0]["corrected"]) == (2.0, 13.0)
