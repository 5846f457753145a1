"""Expertise diagnostics and the order / expertise adjustment of difficulty: hand-checkable unit
cases, and the public study compared value by value with the published files (published
settings: the ``published`` rating sample and SAT alignment), with the corrected values checked
independently (Table 1's raw means, R's ``lm``, the published solver statistics by served id)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from public_study import OWN, minisat_metrics, published_features
from scipy import stats

from nonolab.stats import rcheck
from nonolab.stats.adjustment import (
    adjusted_difficulty,
    difficulty_vs_sat,
    fit_adjustment,
    model_table,
    rating_samples,
    study_adjustment,
)
from nonolab.stats.correlations import raw_mean_rating
from nonolab.stats.expertise import (
    DIAGNOSTICS,
    cronbach_alpha,
    diagnostics,
    dimension_correlations,
    expertise_composite,
    expertise_correlations,
    expertise_tables,
    loadings,
)
from nonolab.stats.mixed_models import with_expertise

PUB = "analyze-data/out_features"
RTOL = 1e-6


# -- unit cases, computed by hand ---------------------------------------------------------------


def test_cronbach_alpha_3x3_by_hand():
    # item variances (ddof 1) 1, 1, 1; totals 4, 8, 9 -> variance 7; alpha = 3/2 (1 - 3/7) = 6/7.
    # Equal item variances: the z-scored alpha is the same.
    items = pd.DataFrame({"a": [1.0, 2, 3], "b": [1.0, 3, 2], "c": [2.0, 3, 4]})
    assert cronbach_alpha(items, standardise=False) == pytest.approx(6 / 7, rel=1e-12)
    assert cronbach_alpha(items) == pytest.approx(6 / 7, rel=1e-12)


# Two items: centred a = (-1.5, -.5, .5, 1.5), b = (-1.5, -.5, -.5, 2.5): cross products 6, sums
# of squares 5 and 9, so r = 6 / sqrt(45) = 2 / sqrt(5). PCA of the correlation matrix:
# eigenvalues 1 +- r, shares (1 +- r) / 2, PC1 loadings (1, 1) / sqrt(2); the composite is
# proportional to za + zb, whose correlation with each item is sqrt((1 + r) / 2).
TWO = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 2, 2, 5]}, index=list("pqrs"))
R_TWO = 2 / 5**0.5


def test_diagnostics_of_two_items_by_hand():
    comp = expertise_composite(TWO)
    d = diagnostics(TWO, comp).set_index("metric")["value"]
    assert list(d.index) == list(DIAGNOSTICS)
    # standardised alpha of two items: 2 r / (1 + r)
    assert d["cronbach_alpha"] == pytest.approx(2 * R_TWO / (1 + R_TWO), rel=1e-12)
    assert d["pca1_var_explained"] == pytest.approx((1 + R_TWO) / 2, rel=1e-12)
    assert d["pca2_var_explained"] == pytest.approx((1 - R_TWO) / 2, rel=1e-12)
    assert (d["n_participants"], d["n_missing_any_dim"]) == (4, 0)
    assert d["composite_pca_spearman_rho"] == pytest.approx(1.0)
    lo = loadings(TWO, comp)
    assert lo["dimension"].tolist() == ["a", "b"]
    assert lo["pca1_loading"].to_numpy() == pytest.approx([2**-0.5, 2**-0.5], rel=1e-12)
    expected = [((1 + R_TWO) / 2) ** 0.5] * 2
    assert lo["corr_with_composite"].to_numpy() == pytest.approx(expected, rel=1e-12)
    dc = dimension_correlations(TWO).set_index("dimension")
    assert dc.to_numpy() == pytest.approx(np.array([[1, R_TWO], [R_TWO, 1]]), rel=1e-12)


def test_pc1_sign_follows_the_composite_and_missing_items_are_counted():
    up = pd.Series([1.0, 2, 3, 4], index=list("pqrs"))
    assert (loadings(TWO, up)["pca1_loading"] > 0).all()
    assert (loadings(TWO, -up)["pca1_loading"] < 0).all()
    items = pd.concat([TWO, pd.DataFrame({"a": [9.0], "b": [np.nan]}, index=["t"])])
    d = diagnostics(items, expertise_composite(items)).set_index("metric")["value"]
    assert (d["n_participants"], d["n_missing_any_dim"]) == (5, 1)
    # PCA over the four complete participants only: the shares of TWO
    assert d["pca1_var_explained"] == pytest.approx((1 + R_TWO) / 2, rel=1e-12)


def test_degenerate_items_give_nan_not_an_error():
    one = pd.DataFrame({"a": [1.0], "b": [2.0]}, index=["p"])
    d = diagnostics(one, pd.Series([0.0], index=["p"])).set_index("metric")["value"]
    assert np.isnan(d["cronbach_alpha"]) and np.isnan(d["pca1_var_explained"])
    assert d["n_participants"] == 1


def test_outcome_p_fdr_is_benjamini_hochberg_by_hand():
    att = pd.DataFrame(
        {
            "participant_id": list("pqrstu"),
            "x": [1.0, 2, 3, 4, 5, 6],
            "y": [1.0, 3, 2, 5, 4, 6],
        }
    )
    comp = pd.Series([1.0, 2, 3, 4, 5, 6], index=list("pqrstu"))
    t = expertise_correlations(att, comp, {"x": "x", "y": "y"})
    px, py = t["p"]
    assert px < py
    # two tests: the larger p stays, the smaller becomes min(2 p, larger p)
    assert t["p_fdr"].tolist() == pytest.approx([min(2 * px, py), py], rel=1e-12)


def _attempts() -> pd.DataFrame:
    # three participants x two puzzles; orders 1/2; participant r did not solve puzzle B
    return pd.DataFrame(
        {
            "participant_id": ["p", "p", "q", "q", "r", "r"],
            "puzzle_id": ["A", "B", "B", "A", "A", "B"],
            "puzzle_hash": ["hA", "hB", "hB", "hA", "hA", "hB"],
            "order": [1, 2, 1, 2, 1, 2],
            "final_difficulty": pd.array([2, 4, 3, 3, 1, 5], dtype="Int64"),
            "solved": [True, True, True, True, True, False],
            "expertise_composite": [-1.0, -1.0, 0.5, 0.5, 0.5, 0.5],
        }
    )


def test_order_model_and_samples_by_hand():
    s = rating_samples(_attempts())
    assert (len(s["published"]), len(s["corrected"])) == (5, 6)
    t = model_table(s).set_index(["sample", "model", "term"])
    # corrected, order only: order 1 ratings 2, 3, 1 (mean 2); order 2 ratings 4, 3, 5 (mean 4)
    assert t.loc[("corrected", "order", "Intercept"), "coef"] == pytest.approx(2.0)
    assert t.loc[("corrected", "order", "C(order)[T.2]"), "coef"] == pytest.approx(2.0)
    # published drops r's unsolved puzzle B (order 2, rating 5): order 2 mean 3.5
    assert t.loc[("published", "order", "C(order)[T.2]"), "coef"] == pytest.approx(1.5)
    assert t.loc[("published", "order", "C(order)[T.2]"), "n"] == 5
    # adjusted = residual + grand mean 3: A (orders 1, 2, 1) gets 2-2+3, 3-4+3, 1-2+3 -> 7/3;
    # B (orders 2, 1, 2) gets 4-4+3, 3-2+3, 5-4+3 -> 11/3 (order-only model, by hand)
    _, adj = fit_adjustment(s["corrected"], "C(order)")
    by = adj.groupby(s["corrected"]["puzzle_id"]).mean()
    assert by.to_dict() == pytest.approx({"A": 7 / 3, "B": 11 / 3}, rel=1e-12)


def test_expertise_order_model_matches_least_squares():
    d = rating_samples(_attempts())["corrected"]
    fit, adj = fit_adjustment(d, "expertise_composite + C(order)")
    x = np.column_stack([np.ones(6), d["order"] == 2, d["expertise_composite"]]).astype(float)
    beta = np.linalg.lstsq(x, d["final_difficulty"].to_numpy(float), rcond=None)[0]
    assert fit.params.to_numpy() == pytest.approx(beta, rel=1e-10)
    resid = d["final_difficulty"].to_numpy(float) - x @ beta
    assert adj.to_numpy() == pytest.approx(resid + 3.0, rel=1e-10)
    t = adjusted_difficulty(d)
    assert t["puzzle_id"].tolist() == ["A", "B"]
    assert t["n_ratings"].tolist() == [3, 3] and t["raw_mean_difficulty"].tolist() == [2.0, 4.0]


def test_no_rating_gives_empty_tables_not_an_error():
    att = _attempts().assign(final_difficulty=pd.array([pd.NA] * 6, dtype="Int64"))
    s = rating_samples(att)
    assert model_table(s).empty and list(model_table(s).columns)[:3] == ["sample", "model", "term"]
    t = adjusted_difficulty(s["corrected"])
    assert t.empty and "adjusted_difficulty" in t.columns
    pts = t.assign(m=pd.Series(dtype=float))
    v = difficulty_vs_sat(pts, ["m"]).iloc[0]
    assert v["n_puzzles"] == 0 and np.isnan(v["raw_spearman_rho"])


def test_difficulty_vs_sat_uses_average_ranks_for_ties():
    pts = pd.DataFrame(
        {
            "raw_mean_difficulty": [1.0, 2.0, 2.0, 3.0],
            "adjusted_difficulty": [1.0, 2.0, 3.0, 4.0],
            "m": [4.0, 1.0, 2.0, 3.0],
        }
    )
    t = difficulty_vs_sat(pts, ["m"]).iloc[0]
    # ranks (1, 2.5, 2.5, 4) vs (4, 1, 2, 3): Pearson r of the ranks
    assert t["raw_spearman_rho"] == pytest.approx(
        np.corrcoef([1, 2.5, 2.5, 4], [4, 1, 2, 3])[0, 1], rel=1e-12
    )
    assert t["adjusted_spearman_rho"] == pytest.approx(1 - 6 * (9 + 1 + 1 + 1) / (4 * 15))
    assert t["n_puzzles"] == 4 and 0 < t["raw_perm_p"] <= 1


# -- the public study ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def attempts(study_dir):
    return published_features(study_dir)


@pytest.fixture(scope="module")
def adjustment(attempts, study_dir):
    metrics = minisat_metrics(study_dir)
    pool = study_dir / "selected_six_nonogram_stats.csv"
    out = study_adjustment(attempts, metrics, pool, solver="minisat22", encoding="block_start")
    return dict(zip(("models", "difficulty", "vs_sat"), out, strict=True))


def _close(ours, published) -> None:
    np.testing.assert_allclose(
        np.asarray(ours, dtype=float), np.asarray(published, dtype=float), rtol=RTOL
    )


@pytest.mark.study
def test_expertise_diagnostics_tables_equal_the_published_files(attempts, study_dir):
    t = expertise_tables(attempts)
    pub = pd.read_csv(study_dir / PUB / "expertise_diagnostics.csv")
    assert t["diagnostics"]["metric"].tolist() == pub["metric"].tolist()
    _close(t["diagnostics"]["value"], pub["value"])
    pub = pd.read_csv(study_dir / PUB / "expertise_loadings.csv")
    assert t["loadings"]["dimension"].tolist() == pub["dimension"].tolist()
    _close(t["loadings"][["pca1_loading", "corr_with_composite"]], pub.iloc[:, 1:])
    pub = pd.read_csv(study_dir / PUB / "expertise_dimension_correlations.csv", index_col=0)
    ours = t["dimension_correlations"].set_index("dimension")
    assert list(ours.index) == list(pub.index) and list(ours.columns) == list(pub.columns)
    _close(ours, pub)


@pytest.mark.study
def test_expertise_vs_outcomes_equals_the_published_file(attempts, study_dir):
    ours = expertise_tables(attempts)["outcomes"]
    pub = pd.read_csv(study_dir / PUB / "expertise_vs_outcomes.csv")
    rename = {"time_to_solve_sec": "time_to_solve_s"}
    assert ours["column"].tolist() == pub["column"].replace(rename).tolist()
    assert ours["n"].tolist() == pub["n"].tolist()
    _close(ours[["rho", "p", "p_fdr"]], pub[["spearman_rho", "spearman_p", "spearman_p_fdr"]])


@pytest.mark.study
@pytest.mark.parametrize(
    "model, published_file",
    [
        ("order", "order_adjustment_model_params.csv"),
        ("expertise_order", "expertise_adjustment_model_params.csv"),
    ],
)
def test_adjustment_models_equal_the_published_files(adjustment, study_dir, model, published_file):
    m = adjustment["models"]
    ours = m[(m["sample"] == "published") & (m["model"] == model)]
    pub = pd.read_csv(study_dir / PUB / published_file)
    assert ours["term"].tolist() == pub["term"].tolist()
    assert set(ours["n"]) == {177}
    _close(ours[["coef", "se", "p_value"]], pub[["coef", "se", "p_value"]])


@pytest.mark.study
def test_adjusted_difficulty_equals_the_published_file(adjustment, study_dir):
    d = adjustment["difficulty"]
    ours = d[(d["alignment"] == "published") & (d["sample"] == "published")]
    pub = pd.read_csv(study_dir / PUB / "expertise_adjusted_puzzle_difficulty.csv")
    assert ours["puzzle_id"].tolist() == pub["puzzle_id"].astype(str).tolist()
    cols = ["raw_mean_difficulty", "n_ratings", "adjusted_difficulty"]
    _close(ours[cols], pub[cols])
    metrics = ["decisions", "propagations", "conflicts"]
    assert (ours[metrics].to_numpy() == pub[metrics].to_numpy()).all()


@pytest.mark.study
def test_adjusted_difficulty_vs_sat_equals_the_published_file(adjustment, study_dir):
    v = adjustment["vs_sat"]
    ours = v[(v["alignment"] == "published") & (v["sample"] == "published")]
    pub = pd.read_csv(study_dir / PUB / "stats_expertise_adjusted_difficulty_vs_sat.csv")
    assert ours["sat_metric"].tolist() == pub["sat_metric"].tolist()
    cols = ["raw_spearman_rho", "raw_spearman_p", "adjusted_spearman_rho", "adjusted_spearman_p"]
    _close(ours[cols], pub[cols])
    assert ours["n_puzzles"].tolist() == pub["n_puzzles"].tolist()


@pytest.mark.study
def test_the_published_sample_is_the_solved_attempts_of_the_published_features(attempts, study_dir):
    """Independent of our ingest: in the authors' feature table, dropping the rated attempts
    that were not solved leaves exactly the 177 ratings and the per-puzzle counts of the
    published adjusted-difficulty file; all three dropped ratings are one participant's."""
    feats = pd.read_csv(study_dir / PUB / "behavioral_features.csv")
    rated = feats.dropna(subset=["final_difficulty"])
    dropped = rated[~rated["solved_flag"]]
    assert len(rated) == 180 and len(dropped) == 3 and dropped["participant_id"].nunique() == 1
    pub = pd.read_csv(study_dir / PUB / "expertise_adjusted_puzzle_difficulty.csv")
    counts = rated[rated["solved_flag"]].groupby("puzzle_id").size()
    assert counts.tolist() == pub["n_ratings"].tolist()
    # and the published raw means of puzzles 1 and 4 are then the same fraction, 101/29
    assert pub.loc[pub["puzzle_id"].isin([1, 4]), "raw_mean_difficulty"].tolist() == [101 / 29] * 2


@pytest.mark.study
def test_corrected_sample_raw_rho_is_table1s(adjustment, attempts):
    """The corrected sample (every rating) gives Table 1's raw means and, under the published
    alignment, Table 1's published raw rho (METHODS 8: -0.371, -0.371, -0.239); the published
    sample's -0.493 comes only from the three dropped ratings."""
    d = adjustment["difficulty"]
    cor = d[(d["alignment"] == "published") & (d["sample"] == "corrected")].set_index("puzzle_id")
    raw = raw_mean_rating(attempts)
    _close(cor["raw_mean_difficulty"], raw.reindex(cor.index))
    v = adjustment["vs_sat"].set_index(["alignment", "sample", "sat_metric"])
    got = [f"{v.loc[('published', 'corrected', m), 'raw_spearman_rho']:.3f}" for m in OWN_METRICS]
    assert got == ["-0.371", "-0.371", "-0.239"]
    got = [f"{v.loc[('published', 'published', m), 'raw_spearman_rho']:.3f}" for m in OWN_METRICS]
    assert got == ["-0.493", "-0.493", "-0.364"]


OWN_METRICS = ("decisions", "propagations", "conflicts")


@pytest.mark.study
def test_corrected_alignment_uses_each_puzzles_own_statistics(adjustment):
    """Corrected alignment: Spearman of the per-puzzle difficulty with the published MiniSat22
    statistics of each served id (METHODS 2), recomputed here with scipy."""
    d = adjustment["difficulty"]
    v = adjustment["vs_sat"].set_index(["alignment", "sample", "sat_metric"])
    for sample in ("published", "corrected"):
        pts = d[(d["alignment"] == "corrected") & (d["sample"] == sample)]
        for k, m in enumerate(OWN_METRICS):
            own = [OWN[i][k] for i in pts["puzzle_id"]]
            assert pts[m].tolist() == own
            for kind, col in (("raw", "raw_mean_difficulty"), ("adjusted", "adjusted_difficulty")):
                rho = stats.spearmanr(pts[col], own).statistic
                assert v.loc[("corrected", sample, m), f"{kind}_spearman_rho"] == pytest.approx(
                    rho, rel=1e-12
                )


@pytest.mark.study
def test_corrected_models_agree_with_r_lm(adjustment, attempts, tmp_path):
    if not rcheck.r_available(packages=("stats",)):
        pytest.skip("Rscript not available")
    d = rating_samples(with_expertise(attempts))["corrected"]
    d[["final_difficulty", "expertise_composite", "order"]].to_csv(tmp_path / "d.csv", index=False)
    code = (
        'd <- read.csv("d.csv"); f <- lm(final_difficulty ~ expertise_composite + factor(order), d)\n'
        "s <- summary(f)$coefficients\n"
        'write.csv(data.frame(coef = s[, 1], se = s[, 2], p = s[, 4]), "out.csv")\n'
    )
    rcheck.run_r(code, tmp_path)
    r = pd.read_csv(tmp_path / "out.csv", index_col=0)
    m = adjustment["models"]
    ours = m[(m["sample"] == "corrected") & (m["model"] == "expertise_order")].set_index("term")
    pairs = {
        "Intercept": "(Intercept)",
        "expertise_composite": "expertise_composite",
        "C(order)[T.2]": "factor(order)2",
        "C(order)[T.3]": "factor(order)3",
    }
    for ours_term, r_term in pairs.items():
        _close(ours.loc[ours_term, ["coef", "se", "p_value"]], r.loc[r_term, ["coef", "se", "p"]])
    assert set(ours["n"]) == {180}
