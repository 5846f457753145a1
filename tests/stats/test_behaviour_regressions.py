"""Behaviour regressions (nonolab.stats.behaviour_regressions).

Unit tests on small hand-checkable data, then (marker ``study``) the tables computed from the
public study's own ingest + features, value by value against the published files: OLS to 1e-6
relative, mixed models to about 1e-3 (the published fits are statsmodels MixedLM, ours the
lme4-checked engine). The corrected values are checked against a statsmodels refit on the data
joined by puzzle (each served puzzle with its own published statistics, METHODS 2).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from public_study import (
    OWN,
    covariates,
    published_features,
    study_tables,
)
from scipy import stats

from nonolab.stats import behaviour_regressions as br
from nonolab.stats import mixed_models as mm


def _bh_by_hand(p: list[float]) -> np.ndarray:
    """Benjamini-Hochberg: p_(i) m / i, then the running minimum from the largest down."""
    p = np.asarray(p, float)
    order = np.argsort(p)
    m = len(p)
    adj = p[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(adj[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


# --- unit tests ---------------------------------------------------------------------------------


def test_pause_rate_per_minute_of_interaction():
    att = pd.DataFrame({"pause_count": [3, 2, 0, 5], "total_time_s": [90.0, 0.0, np.nan, 7.0]})
    got = br.with_pause_rate(att)["pause_freq_per_min"].tolist()
    # 3 pauses in 1.5 min; no span -> 0 (published); 5 in 7 s = 42.857142... rounded to 4.
    assert got == [2.0, 0.0, 0.0, 42.8571]


def test_ols_table_by_hand():
    d = pd.DataFrame({"x": [0.0, 1, 2, 3], "y": [1.0, 3, 2, 5]})
    t = br.ols_table(d, "y", ["x"]).set_index("predictor")
    # Sxy = 5.5, Sxx = 5: slope 1.1, intercept 2.75 - 1.1 * 1.5 = 1.1; SSE 2.7, SST 8.75.
    assert t.loc["x", "coef"] == pytest.approx(1.1)
    assert t.loc["const", "coef"] == pytest.approx(1.1)
    se = np.sqrt(2.7 / 2 / 5)
    assert t.loc["x", "se"] == pytest.approx(se)
    assert t.loc["x", "p_value"] == pytest.approx(2 * stats.t.sf(1.1 / se, 2))
    assert t.loc["x", "r_squared"] == pytest.approx(1 - 2.7 / 8.75)
    assert t.loc["x", "adj_r_squared"] == pytest.approx(1 - (2.7 / 2) / (8.75 / 3))
    assert t.loc["x", "n"] == 4 and t.loc["x", "underpowered"]
    # one slope: its BH p is its own p; the constant is not in the family
    assert t.loc["x", "p_fdr"] == pytest.approx(t.loc["x", "p_value"])
    assert np.isnan(t.loc["const", "p_fdr"])
    assert t.loc["x", "shapiro_p"] == pytest.approx(stats.shapiro([-0.1, 0.8, -1.3, 0.6])[1])


def test_vif_of_two_predictors_is_one_over_one_minus_r2():
    d = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, np.nan], "b": [2.0, 1, 4, 3, 5, 1]})
    t = br.predictor_vif(d, ["a", "b"])
    r = np.corrcoef([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])[0, 1]
    np.testing.assert_allclose(t["vif"], [1 / (1 - r**2)] * 2)
    assert (t["n"] == 5).all()


def _toy_attempts(seed: int = 7) -> pd.DataFrame:
    """30 participants x 3 of 6 puzzles with behaviours, ratings and a total time."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(30):
        for order, q in enumerate(rng.choice(6, 3, replace=False), start=1):
            t = float(rng.uniform(60, 900))
            rows.append(
                {
                    "participant_id": f"P{p}",
                    "puzzle_id": str(q),
                    "puzzle_hash": f"h{q}",
                    "order": order,
                    "pause_count": int(rng.poisson(5 + q)),
                    "time_to_solve_s": t,
                    "total_time_s": t,
                    "error_count": int(rng.poisson(2 + q)),
                    "hint_count": int(rng.poisson(1)),
                    "final_difficulty": int(rng.integers(1, 6)),
                    "expertise_composite": float(p % 5 - 2) / 1.4,
                }
            )
    return pd.DataFrame(rows)


def test_pooled_specifications_and_dropped_ratings():
    att = _toy_attempts()
    t = br.pooled_regressions(att, ratings_missing=["P0", "P1"])
    paper = t[t["specification"] == "paper"]
    pub = t[t["specification"] == "published_file"]
    assert paper["predictor"].tolist() == ["const", *br.OLS_PREDICTORS]
    assert pub["predictor"].tolist() == ["const", *br.PUBLISHED_OLS_PREDICTORS]
    assert (paper["n"] == 90).all() and (pub["n"] == 84).all()
    assert (pub["ratings_missing"] == "P0;P1").all()
    # the paper specification is the plain OLS of the four behaviours
    x = sm.add_constant(att[list(br.OLS_PREDICTORS)].astype(float))
    ref = sm.OLS(att["final_difficulty"].astype(float), x).fit()
    np.testing.assert_allclose(paper["coef"], ref.params.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(paper["p_fdr"].iloc[1:], _bh_by_hand(ref.pvalues.iloc[1:]))


def test_per_puzzle_skips_small_puzzles_and_corrects_over_all_rows():
    att = _toy_attempts()
    att.loc[att["puzzle_id"] == "3", "final_difficulty"] = pd.NA
    att.loc[att.index[att["puzzle_id"] == "3"][:4], "final_difficulty"] = 3
    t = br.per_puzzle_regressions(att)
    assert "3" not in set(t["puzzle_id"])  # 4 complete rows < MIN_OBS = 5
    assert t["puzzle_id"].unique().tolist() == ["0", "1", "2", "4", "5"]
    assert len(t) == 5 * 4
    np.testing.assert_allclose(t["p_fdr"], _bh_by_hand(t["p_value"]))


def test_per_puzzle_without_enough_ratings_is_an_empty_table():
    att = _toy_attempts().assign(final_difficulty=pd.NA)
    t = br.per_puzzle_regressions(att)
    assert t.empty and {"puzzle_id", "predictor", "p_fdr"} <= set(t.columns)


def test_behaviour_on_sat_recovers_an_exact_line():
    att = _toy_attempts()
    # metric per puzzle; the error count of each attempt set so that metric = 10 - 2 * errors
    cov = pd.DataFrame({"puzzle_hash": [f"h{q}" for q in range(6)], "decisions": range(0, 12, 2)})
    att["error_count"] = (10 - att["puzzle_id"].astype(int) * 2) // 2
    t = br.behaviour_on_sat(att, cov, metrics=["decisions"], predictors=["error_count"])
    t = t.set_index("predictor")
    assert t.loc["error_count", "coef"] == pytest.approx(-2.0)
    assert t.loc["const", "coef"] == pytest.approx(10.0)
    assert t.loc["const", "n"] == 90


def test_moderation_wide_layout_matches_the_long_table():
    att = _toy_attempts()
    cov = pd.DataFrame(
        {"puzzle_hash": [f"h{q}" for q in range(6)], "conflicts": [0, 0, 4, 15, 15, 4]}
    )
    wide = br.behaviour_moderation(att, cov, outcomes=["error_count"], metrics=["conflicts"])
    mod, slopes = mm.moderation_models(att, cov, outcome="error_count", metrics=["conflicts"])
    fx = mod.set_index("term")
    row = wide.iloc[0]
    assert row["interaction"] == fx.loc["conflicts:expertise_composite", "coef"]
    assert row["p_expertise"] == fx.loc["expertise_composite", "p"]
    assert row["slope_mean"] == pytest.approx(row["coef_metric"])
    assert row["slope_high"] == pytest.approx(row["coef_metric"] + row["interaction"])
    assert (row["n"], row["n_participants"], row["n_puzzles"]) == (90, 30, 6)
    assert row["p_interaction_fdr"] == pytest.approx(row["p_interaction"])


# --- the public study -------------------------------------------------------------------------

PUB = "analyze-data/out_features/"
COLS = {"time_to_solve_sec": "time_to_solve_s"}


@pytest.fixture(scope="module")
def features(study_dir):
    return published_features(study_dir)


@pytest.fixture(scope="module")
def raw(features, study_dir):
    _, met, pool = study_tables(study_dir)
    return covariates((features, met, pool), transform="raw")


def _published(study_dir, name: str) -> pd.DataFrame:
    t = pd.read_csv(study_dir / PUB / name, dtype={"puzzle_id": str})
    for c in ("predictor", "outcome"):
        if c in t.columns:
            t[c] = t[c].replace(COLS)
    return t


def _close(ours: pd.DataFrame, pub: pd.DataFrame, cols, rtol=1e-6) -> None:
    for c in cols:
        np.testing.assert_allclose(
            ours[c].to_numpy(float), pub[c].to_numpy(float), rtol=rtol, err_msg=c
        )


@pytest.mark.study
def test_pooled_reproduces_the_published_file_and_the_paper(features, study_dir):
    from nonolab.study.presets import resolve_preset

    missing = resolve_preset(study_dir).data["published"]["pooled_ols_ratings_missing"]
    assert missing == ["Michael-p11"]
    t = br.pooled_regressions(features, ratings_missing=missing)
    pub = _published(study_dir, "stats_behavioral_vs_difficulty_pooled.csv")
    ours = t[t["specification"] == "published_file"].reset_index(drop=True)
    terms = pub[pub["predictor"] != "(model)"].reset_index(drop=True)
    assert ours["predictor"].tolist() == terms["predictor"].tolist()
    _close(ours, terms, ["coef", "se", "t", "p_value", "n", "r_squared", "adj_r_squared"])
    assert (ours["n"] == 177).all()
    # The paper's table (correlation_tables_latex.txt): four behaviours, all 180 rated attempts.
    tex = (study_dir / "analyze-data/latex/figures/correlation_tables_latex.txt").read_text()
    block = tex.split(r"\label{tab:bt-vs-sat}")[1].split(r"\label{tab:behavioral-vs-difficulty}")[0]
    assert "$N=180$" in block
    printed = re.findall(
        r"^([A-Z][^&\n]*?) & (-?[\d.]+)\**? & (\$<\$\.001|[\d.]+) \\\\", block, re.M
    )
    paper = t[t["specification"] == "paper"].reset_index(drop=True)
    assert len(printed) == len(paper) == 5 and (paper["n"] == 180).all()
    for (_, b, p), (_, r) in zip(printed, paper.iterrows(), strict=True):
        assert f"{r['coef']:.3f}" == b
        assert (p == "$<$.001" and r["p_value"] < 0.001) or f"{r['p_value']:.3f}" == p
    # N 180 vs 177: the three attempts of Michael-p11 (rated in the data, not in the file).
    rated = features["final_difficulty"].notna()
    assert int((rated & (features["participant_id"] == "Michael-p11")).sum()) == 3


@pytest.mark.study
def test_per_puzzle_reproduces_the_published_file(features, study_dir):
    t = br.per_puzzle_regressions(features)
    pub = _published(study_dir, "stats_behavioral_vs_difficulty_per_puzzle.csv")
    assert (
        t[["puzzle_id", "predictor"]].values.tolist()
        == pub[["puzzle_id", "predictor"]].values.tolist()
    )
    cols = ["coef", "se", "t", "p_value", "n", "r_squared", "adj_r_squared", "breusch_pagan_p"]
    _close(t, pub, [*cols, "shapiro_p", "max_cooks_d", "p_fdr"])
    assert t["underpowered"].tolist() == pub["underpowered"].tolist()


@pytest.mark.study
def test_vif_reproduces_the_published_file(features, study_dir):
    t = br.predictor_vif(features)
    pub = _published(study_dir, "stats_behavioral_predictor_vif.csv")
    assert t["predictor"].tolist() == pub["predictor"].tolist()
    _close(t, pub, ["vif", "n"])


@pytest.mark.study
def test_behaviour_on_sat_published_and_corrected(features, raw, study_dir):
    t = mm.across_alignments(raw, lambda c: br.behaviour_on_sat(features, c))
    for metric in ("decisions", "conflicts"):
        pub = _published(study_dir, f"stats_behavioral_vs_{metric}.csv")
        pub = pub[pub["predictor"] != "(model)"].reset_index(drop=True)
        ours = t[(t["alignment"] == "published") & (t["metric"] == metric)].reset_index(drop=True)
        assert ours["predictor"].tolist() == pub["predictor"].tolist()
        _close(ours, pub, ["coef", "se", "t", "p_value", "n", "r_squared", "adj_r_squared"])
        # corrected: statsmodels on the attempts joined with each puzzle's own statistics
        d = br.with_pause_rate(features)
        j = mm.METRICS.index(metric)
        d[metric] = d["puzzle_id"].map({pid: v[j] for pid, v in OWN.items()})
        d = d[[*br.PUBLISHED_OLS_PREDICTORS, metric]].astype(float).dropna()
        ref = sm.OLS(d[metric], sm.add_constant(d[list(br.PUBLISHED_OLS_PREDICTORS)])).fit()
        corr = t[(t["alignment"] == "corrected") & (t["metric"] == metric)]
        np.testing.assert_allclose(corr["coef"], ref.params.to_numpy(), rtol=1e-8)
        np.testing.assert_allclose(corr["p_value"], ref.pvalues.to_numpy(), rtol=1e-8)
    # The published finding (errors -> decisions, B = -0.32, p = .005) holds only under the
    # row-position join: joined by puzzle, B = -0.153, p = 0.144.
    err = t[(t["predictor"] == "error_count") & (t["metric"] == "decisions")]
    err = err.set_index("alignment")
    assert err.loc["published", "p_value"] < 0.01
    assert round(err.loc["corrected", "coef"], 3) == -0.153
    assert round(err.loc["corrected", "p_value"], 3) == 0.144


@pytest.mark.study
def test_moderation_reproduces_the_published_file(features, raw, study_dir):
    att = mm.with_expertise(features)
    t = mm.across_alignments(raw, lambda c: br.behaviour_moderation(att, c))
    assert len(t) == 30
    pub = _published(study_dir, "stats_moderation_behavioral.csv")
    ours = t[t["alignment"] == "published"].rename(columns={"metric": "predictor"})
    both = pub.merge(ours, on=["outcome", "predictor"], suffixes=("_p", "_o"))
    assert len(both) == len(pub) == 15
    for k in ("n", "n_participants", "n_puzzles"):
        assert (both[f"{k}_p"] == both[f"{k}_o"]).all(), k
    for term in ("metric", "expertise", "slope_low", "slope_high"):
        coef = {"metric": "coef_metric", "expertise": "coef_expertise"}.get(term, term)
        se = f"se_{term}" if term in ("metric", "expertise") else f"se_{term}"
        np.testing.assert_allclose(both[f"{coef}_o"], both[f"{coef}_p"], rtol=1e-3, err_msg=coef)
        np.testing.assert_allclose(both[f"{se}_o"], both[f"{se}_p"], rtol=5e-3, err_msg=se)
    np.testing.assert_allclose(both["interaction_o"], both["interaction_p"], rtol=1e-3)
    np.testing.assert_allclose(both["se_interaction_o"], both["se_interaction_p"], rtol=5e-3)
    for p in ("p_metric", "p_expertise", "p_interaction", "p_slope_low", "p_slope_high"):
        np.testing.assert_allclose(both[f"{p}_o"], both[f"{p}_p"], atol=3e-3, err_msg=p)
    for v in ("var_puzzle", "var_residual"):
        np.testing.assert_allclose(both[f"{v}_o"], both[f"{v}_p"], rtol=1e-3, err_msg=v)
    # var_participant: the published pause-count fits stop near the boundary (about 1e-5); ours
    # (and lme4) at 0. Elsewhere within 1e-3.
    vp = both[both["var_participant_p"] > 1e-3]
    assert len(vp) == 12
    np.testing.assert_allclose(vp["var_participant_o"], vp["var_participant_p"], rtol=1e-3)
    assert (both.loc[both["var_participant_p"] <= 1e-3, "var_participant_o"] < 1e-6).all()


@pytest.mark.study
def test_moderation_corrected_against_statsmodels(features, raw):
    att = mm.with_expertise(features)
    t = br.behaviour_moderation(
        att, raw["corrected"], outcomes=["final_difficulty", "error_count"], metrics=["conflicts"]
    ).set_index("outcome")
    d = att.copy()
    d["conflicts"] = d["puzzle_id"].map(lambda p: OWN[p][2])
    for y in ("final_difficulty", "error_count"):
        sub = d[[y, "conflicts", "expertise_composite", "participant_id", "puzzle_id"]].dropna()
        sub = sub.astype({y: float}).assign(g="1")
        vc = {"participant": "0 + C(participant_id)", "puzzle": "0 + C(puzzle_id)"}
        fit = smf.mixedlm(
            f"{y} ~ conflicts * expertise_composite", sub, groups="g", re_formula="0", vc_formula=vc
        ).fit(reml=True)
        term = "conflicts:expertise_composite"
        assert t.loc[y, "interaction"] == pytest.approx(fit.params[term], rel=1e-3)
        assert t.loc[y, "se_interaction"] == pytest.approx(fit.bse[term], rel=5e-3)
        assert t.loc[y, "p_interaction"] == pytest.approx(fit.pvalues[term], abs=3e-3)
    # joined by puzzle, expertise moderates conflicts -> errors (p < .01), not only -> difficulty
    assert t.loc["error_count", "p_interaction"] < 0.01


# --- errata rows of the row-position join -----------------------------------------------------


def test_aligned_rows_by_hand():
    from nonolab.stats import errata

    pub = pd.DataFrame({"k": ["a", "b"], "coef": [-0.3215, 0.1001], "p": [0.0054, 0.6]})
    ours = pd.DataFrame(
        {
            "alignment": ["published", "published", "corrected", "corrected"],
            "k": ["a", "b", "a", "b"],
            "coef": [-0.3215, 0.1001, -0.1532, 0.10014],
            "p": [0.0054, 0.6, 0.1442, 0.6],
        }
    )
    rule = errata.Rule(p="p", estimate="coef", inference="t", family="the two terms")
    rows = errata.aligned_rows(
        pub,
        ours,
        keys={"k": "k"},
        columns={"coef": "coef", "p": "p"},
        quantity="f.csv {k} {label}",
        source="f.csv",
        rules={"coef": rule, "p": rule},
        significant=3,
    )
    # b keeps coef (0.100 at 3 significant digits) and p: only a's two values change
    assert [r["quantity"] for r in rows] == ["f.csv a coef", "f.csv a p"]
    # BH over a and b: published 0.0108 / 0.6, corrected 0.2884 / 0.6
    assert rows[0]["p_published_adjusted"] == pytest.approx(0.0108)
    assert rows[0]["p_corrected_adjusted"] == pytest.approx(0.2884)
    assert rows[0]["change_category"] == "significance"
    assert rows[0]["family"] == "the two terms; BH over 2 tests"
    assert (rows[1]["published"], rows[1]["corrected"]) == (0.0054, 0.1442)
    assert "reproduces" in rows[1]["evidence"]


@pytest.mark.study
def test_errata_rows_of_the_behaviour_tables(features, raw, study_dir):
    from nonolab.stats import errata

    on_sat = mm.across_alignments(raw, lambda c: br.behaviour_on_sat(features, c))
    pub = pd.read_csv(study_dir / PUB / "stats_behavioral_vs_decisions.csv")
    rows = {r["quantity"]: r for r in errata.behaviour_on_sat_rows(on_sat, pub, "decisions")}
    assert len(rows) == 10  # coef and p of the five behaviours all change
    err = rows["stats_behavioral_vs_decisions.csv error_count p_value"]
    assert err["published"] == pytest.approx(0.005408703819951611, rel=1e-12)
    assert err["reproduced_as_published"] == pytest.approx(err["published"], rel=1e-6)
    assert round(err["corrected"], 3) == 0.144
    # judged by the cluster-robust SEs by puzzle (t on 5 df): .119 as published (the
    # published OLS said .005), .316 corrected; neither significant, so no significance change
    assert round(err["p_published_rule"], 3) == 0.119
    assert round(err["p_corrected_rule"], 3) == 0.316
    assert err["change_category"] == "estimate"
    assert err["inference"].startswith("OLS with cluster-robust SEs by puzzle")
    # no row of the table changes a conclusion under the rule
    assert {r["change_category"] for r in rows.values()} == {"estimate"}


def test_ols_table_without_residual_df_is_missing_not_an_error():
    """No final ratings (a study without post-surveys): the OLS tables have their rows with
    missing statistics and n = 0 instead of stopping the rule."""
    d = pd.DataFrame({"y": [np.nan] * 6, "a": range(6), "b": [1.0, 0, 2, 1, 3, 0]})
    t = br.ols_table(d, "y", ["a", "b"])
    assert list(t["predictor"]) == ["const", "a", "b"]
    assert t[["coef", "se", "p_value", "p_fdr", "r_squared"]].isna().all().all()
    assert (t["n"] == 0).all() and t["underpowered"].all()
