"""Expertise, Bradley-Terry and Table 1 on the public study: every [target] of METHODS 6-8
(published alignment), from the raw logs and the SAT layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from public_study import minisat_metrics, published_features

from nonolab.stats.correlations import (
    aligned_metrics,
    erratum_table,
    published_alignment,
    raw_mean_rating,
    table1,
)
from nonolab.stats.expertise import expertise_composite, expertise_correlations, participant_items
from nonolab.stats.ranking import (
    bootstrap_log_strengths,
    lr_test,
    normalised_strengths,
    pairwise_comparisons,
    strengths_table,
)

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def attempts(study_dir):
    return published_features(study_dir)


@pytest.fixture(scope="module")
def comparisons(attempts):
    return pairwise_comparisons(attempts, rating_col="final_difficulty")


ITEMS = ["0", "1", "2", "3", "4", "5"]


def test_expertise_composite_equals_published_column(attempts, study_dir):
    pub = pd.read_csv(study_dir / "analyze-data/out_features/behavioral_features.csv")
    pub = pub.groupby("participant_id")["expertise_composite"].first()
    comp = expertise_composite(participant_items(attempts))
    assert len(comp) == 67
    assert (comp.reindex(pub.index) - pub).abs().max() < 1e-12


def test_expertise_vs_mean_final_difficulty(attempts):
    comp = expertise_composite(participant_items(attempts))
    t = expertise_correlations(attempts, comp).set_index("outcome")
    row = t.loc["mean_final_difficulty"]
    assert (f"{row['rho']:.3f}", f"{row['p']:.3f}", row["n"]) == ("-0.094", "0.451", 67)


def test_bradley_terry_lr_test(comparisons):
    t = lr_test(comparisons, ITEMS)
    assert (f"{t['chi2']:.2f}", t["df"], f"{t['p']:.1e}") == ("38.17", 5, "3.5e-07")


@pytest.fixture(scope="module")
def metrics(study_dir):
    return minisat_metrics(study_dir)


def test_table1_published_alignment(attempts, comparisons, metrics, study_dir):
    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    pool = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv")
    mapping = published_alignment(pool, served, metrics)
    by_id = served.set_index("puzzle_id")["puzzle_hash"]
    # METHODS 2: ids 0, 1 keep their own statistics; 2 <- 5, 3 <- 2, 4 <- 3, 5 <- 4.
    assert [mapping[k] for k in ITEMS] == [by_id[k] for k in ["0", "1", "5", "2", "3", "4"]]
    aligned = {
        "published": aligned_metrics(metrics, served, mapping),
        "corrected": aligned_metrics(metrics, served),
    }
    pub = aligned["published"].set_index("puzzle_id")
    assert pub.loc["2", ["decisions", "propagations", "conflicts"]].tolist() == [13, 453, 4]
    strengths = strengths_table(comparisons, ITEMS)
    t1 = table1(strengths, raw_mean_rating(attempts), aligned)
    e = erratum_table(t1, "minisat22", "block_start").set_index("metric")

    def fmt(col):
        return [f"{e.loc[m, col]:.3f}" for m in ("decisions", "propagations", "conflicts")]

    assert fmt("published_bt_rho") == ["-0.257", "-0.257", "0.000"]
    assert fmt("published_bt_p") == ["0.623", "0.623", "1.000"]
    assert fmt("published_raw_rho") == ["-0.371", "-0.371", "-0.239"]
    assert fmt("published_raw_p") == ["0.468", "0.468", "0.648"]
    # The corrected join changes the sign of every BT correlation (descriptive, six puzzles).
    assert (e["corrected_bt_rho"] > 0).all()
    assert e["published_perm_p"].between(0, 1).all()


CONFIG = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/config.yaml").read_text())


def _quantile_mc_se(theta: np.ndarray, q: float) -> np.ndarray:
    """Monte-Carlo standard error (log scale) of the q-quantile of the normalised strengths,
    distribution-free: the order statistics B*q -/+ sqrt(B*q*(1-q)) bracket the quantile with
    about one binomial standard deviation of the count below it, so half their distance is one
    standard error of the quantile (per item)."""
    s = np.sort(np.log(normalised_strengths(theta)), axis=0)
    b = len(s)
    d = np.sqrt(b * q * (1 - q))
    return (s[int(np.floor(b * q + d))] - s[int(np.ceil(b * q - d))]) / 2


@pytest.fixture(scope="module")
def bootstraps(comparisons):
    """Both weightings with the configured seed (the master seed) and resample count."""
    rk = CONFIG["ranking"]
    seed = CONFIG["seed"] if rk.get("seed") is None else rk["seed"]
    return {
        w: bootstrap_log_strengths(comparisons, ITEMS, rk["bootstrap"], seed, weighting=w)
        for w in ("k", "k2")
    }


def test_participant_bootstrap_intervals_stay_as_they_are(comparisons, bootstraps):
    boot = bootstraps["k"]
    assert (boot.n_used, boot.n_not_connected, boot.n_not_converged) == (4998, 2, 0)
    t = strengths_table(comparisons, ITEMS, boot, published=bootstraps["k2"])
    got = [f"{lo:.3f}-{hi:.3f}" for lo, hi in zip(t["ci_low"], t["ci_high"], strict=True)]
    assert got == [
        "0.549-1.969",
        "0.741-2.099",
        "0.075-0.358",
        "1.622-4.171",
        "1.095-3.104",
        "0.619-1.383",
    ]


def test_published_semantics_reproduce_the_published_intervals(comparisons, bootstraps, study_dir):
    """The k-squared weighting reproduces bt_difficulty_vs_sat.csv within Monte-Carlo error.

    Both sides are percentile bootstraps with 5000 resamples (the published script's N_BOOT and
    the configured ``ranking.bootstrap``) but different random streams, so each bound differs by
    Monte-Carlo error only, with standard error sqrt(2) x the quantile's MC SE (the published
    side's SE taken equal to ours: same resample count, same distribution). Compared on the log
    scale (the strengths are log-normal-ish and skewed), with a 4-SE tolerance: under MC error
    alone 12 bounds all pass with probability > 0.999. The correct intervals are checked to lie
    outside that tolerance, so the test tells the two semantics apart."""
    pub = pd.read_csv(study_dir / "analyze-data/out_features/bt_difficulty_vs_sat.csv")
    pub = pub.set_index(pub["puzzle_id"].astype(str)).loc[ITEMS]
    t = strengths_table(comparisons, ITEMS, bootstraps["k"], published=bootstraps["k2"]).set_index(
        "puzzle_id"
    )
    # The published point estimates are ours (scipy L-BFGS-B vs choix ILSR).
    assert t["strength"].to_numpy() == pytest.approx(pub["bt_score"].to_numpy(), rel=1e-6)
    k2 = bootstraps["k2"]
    a = (1 - CONFIG["ranking"]["ci_level"]) / 2
    for ours, correct, theirs, q in (
        ("ci_low_published_semantics", "ci_low", "theta_ci_lower", a),
        ("ci_high_published_semantics", "ci_high", "theta_ci_upper", 1 - a),
    ):
        tol = 4 * np.sqrt(2) * _quantile_mc_se(k2.theta, q)
        assert (tol < 0.25).all()  # 0.05-0.22 on the log scale at 5000 resamples
        diff = np.log(t[ours].to_numpy() / pub[theirs].to_numpy())
        assert (np.abs(diff) < tol).all(), (ours, diff, tol)
        off = np.log(t[correct].to_numpy() / pub[theirs].to_numpy())
        assert (np.abs(off) > tol).all(), (correct, off, tol)
