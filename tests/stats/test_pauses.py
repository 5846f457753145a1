"""Unit and property tests of nonolab.stats.pauses (mixture fit, crossing, threshold choice)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.mixture import GaussianMixture

from nonolab.stats import pauses
from nonolab.stats.pauses import (
    equal_posterior_crossing,
    fit_converged_pause_model,
    fit_pause_model,
    fit_record,
    model_record,
    pause_threshold,
    random_state_check,
    threshold_used,
)


def test_crossing_equal_sds_is_weighted_midpoint():
    # Equal SDs: w1 N(z; a, s) = w2 N(z; b, s) solves to z = (a+b)/2 + s^2 ln(w1/w2)/(b-a).
    a, b, s, w1, w2 = 0.0, 2.0, 0.7, 0.6, 0.4
    z = equal_posterior_crossing([a, b], [s, s], [w1, w2], 0, 1)
    assert z == pytest.approx((a + b) / 2 + s**2 * np.log(w1 / w2) / (b - a), abs=1e-10)


@given(
    m1=st.floats(-3, 1),
    d=st.floats(0.5, 4),
    s1=st.floats(0.2, 1.5),
    s2=st.floats(0.2, 1.5),
    w=st.floats(0.2, 0.8),
)
@settings(max_examples=60, deadline=None)
def test_crossing_has_equal_weighted_densities(m1, d, s1, s2, w):
    m2 = m1 + d
    try:
        z = equal_posterior_crossing([m1, m2], [s1, s2], [w, 1 - w], 0, 1)
    except ValueError:
        return  # no sign change between the means: reported, not guessed
    assert m1 <= z <= m2
    assert w * norm.pdf(z, m1, s1) == pytest.approx((1 - w) * norm.pdf(z, m2, s2), rel=1e-6)


def _two_scale_gaps(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    fast = rng.lognormal(np.log(0.8), 0.6, size=int(n * 0.65))
    slow = rng.lognormal(np.log(6.0), 0.9, size=n - len(fast))
    drag = rng.lognormal(np.log(0.012), 1.0, size=60)
    return np.concatenate([fast, slow, drag])


def test_fit_recovers_simulated_components_and_threshold():
    g = _two_scale_gaps()
    m = fit_pause_model(g, max_components=3, n_init=3, seed=1)
    assert m.n_gaps == len(g)
    assert m.delta_bic_vs_1[3] > 0 and set(m.bic) == {1, 2, 3}
    assert m.delta_bic_vs_1[2] == pytest.approx(m.bic[1] - m.bic[2])
    assert m.means_s[1] == pytest.approx(0.8, rel=0.1)
    assert m.means_s[2] == pytest.approx(6.0, rel=0.15)
    assert sum(m.weights) == pytest.approx(1.0)
    assert list(m.means_log) == sorted(m.means_log)
    # The crossing of the fitted components, recomputed by hand, equals the reported one.
    z = m.threshold_log
    w, mu, sd = m.weights, m.means_log, m.sds_log
    assert w[1] * norm.pdf(z, mu[1], sd[1]) == pytest.approx(w[2] * norm.pdf(z, mu[2], sd[2]))
    assert m.threshold_s == pytest.approx(np.exp(z))
    assert 1.0 < m.threshold_s < 5.0


@pytest.mark.parametrize(("k", "n_init", "seed"), [(2, 3, 1), (3, 4, 5), (3, 1, 42)])
def test_em_is_scikit_learns_gaussian_mixture(k, n_init, seed):
    """The EM of the pause fits is scikit-learn GaussianMixture's (full covariance, k-means
    starts, ``n_init`` best lower bound, warm-start continuation): same iteration counts, same
    parameters and likelihood to rounding, on data with three scales."""
    g = _two_scale_gaps(n=2500, seed=8)
    x = np.log(g).reshape(-1, 1)
    gm = GaussianMixture(k, n_init=n_init, random_state=seed, tol=1e-6, max_iter=5000).fit(x)
    data = pauses._Gaps(g, k)
    m = pauses._best_fit(data.x, data.starts(k, n_init, seed), 1e-6, 5000)
    for tol in (None, 1e-9):
        if tol is not None:  # continue both (scikit-learn: warm start)
            gm.set_params(warm_start=True, tol=tol).fit(x)
            m = pauses._em(data.x, m, tol, 5000)
        order = np.argsort(gm.means_.ravel())
        assert (m.n_iter, m.converged) == (gm.n_iter_, gm.converged_)
        assert m.lower_bound == pytest.approx(gm.lower_bound_, rel=1e-13)
        assert np.sort(m.means) == pytest.approx(gm.means_.ravel()[order], rel=1e-10)
        assert m.variances[np.argsort(m.means)] == pytest.approx(
            gm.covariances_.ravel()[order], rel=1e-10
        )
        assert m.weights[np.argsort(m.means)] == pytest.approx(gm.weights_[order], rel=1e-10)
        assert pauses._bic(data.x, m) == pytest.approx(gm.bic(x), rel=1e-13)
        assert pauses._score(data.x, m) == pytest.approx(gm.score(x), rel=1e-13)


def test_fit_is_deterministic_and_zero_gaps_count_but_are_not_fitted():
    g = _two_scale_gaps(n=800, seed=3)
    a = fit_pause_model(g, n_init=2, seed=5)
    b = fit_pause_model(np.concatenate([g, [0.0, 0.0]]), n_init=2, seed=5)
    assert b.n_gaps == a.n_gaps + 2 and b.n_positive == a.n_positive
    # Same positive gaps and seed -> bit-identical fit (the zeros only change the counts).
    assert (a.threshold_s, a.bic, a.weights) == (b.threshold_s, b.bic, b.weights)


def test_fit_rejects_bad_gaps():
    with pytest.raises(ValueError, match="non-negative"):
        fit_pause_model(np.array([1.0, -0.5] * 50))
    with pytest.raises(ValueError, match="too few"):
        fit_pause_model(np.array([1.0, 2.0, 3.0]))


def test_threshold_used_choices():
    m = fit_pause_model(_two_scale_gaps(n=600), n_init=1)
    assert threshold_used(m, "auto", 2.36) == (2.36, "preset (published value)")
    assert threshold_used(m, "auto", None) == (m.threshold_s, "fitted")
    assert threshold_used(m, "fitted", 2.36) == (m.threshold_s, "fitted")
    assert threshold_used(m, 3.5, 2.36) == (3.5, "config")
    with pytest.raises(ValueError):
        threshold_used(m, "median", None)
    rec = model_record(m, 2.36, "preset")
    assert rec["threshold_used_s"] == 2.36 and rec["threshold_s"] == m.threshold_s
    assert set(rec["bic"]) == {"1", "2", "3"}


def test_converged_fit_continues_em_until_the_crossing_is_stable():
    g = _two_scale_gaps(n=1500, seed=4)
    start = fit_pause_model(g, n_init=2, seed=3, tol=1e-3)
    m = fit_converged_pause_model(g, n_init=2, seed=3, tol=1e-3, max_move_s=1e-3)
    assert m.converged and m.check is not None
    steps = m.check["steps"]
    assert steps and steps[-1]["moved_s"] <= 1e-3
    # Each continuation divides the tolerance by 100; the reported tolerance is the last one.
    assert [s["em_tol"] for s in steps] == pytest.approx(
        [1e-3 / 100 ** (i + 1) for i in range(len(steps))]
    )
    assert m.tol == pytest.approx(steps[-1]["em_tol"])
    assert m.threshold_s == pytest.approx(steps[-1]["crossing_s"])
    assert m.check["start_crossing_s"] == pytest.approx(start.threshold_s)
    assert m.n_iter == m.check["start_n_iter"] + sum(s["n_iter"] for s in steps)
    # Continuing EM never lowers the likelihood.
    assert m.log_likelihood >= start.log_likelihood - 1e-6


def test_converged_fit_reports_failure_at_the_tolerance_cap():
    g = _two_scale_gaps(n=1500, seed=4)
    m = fit_converged_pause_model(g, n_init=1, seed=3, tol=1e-3, max_move_s=1e-15, min_tol=1e-7)
    assert not m.converged
    assert [s["em_tol"] for s in m.check["steps"]] == pytest.approx([1e-5, 1e-7])


def test_random_state_check_and_records():
    g = _two_scale_gaps(n=1200, seed=6)
    m = fit_converged_pause_model(g, n_init=2, seed=1, max_move_s=1e-3)
    rs = random_state_check(g, m, [2, 3, 4], max_move_s=1e-3)
    assert rs["seeds"] == [2, 3, 4] and len(rs["crossings_s"]) == 3
    # A start that ends without a crossing is reported (NaN) and makes the check disagree.
    ok = [c for c in rs["crossings_s"] if np.isfinite(c)]
    assert rs["agree"] == (len(ok) == 3 and max(abs(c - m.threshold_s) for c in ok) <= 1e-3)
    rec = fit_record(m)
    assert rec["log_likelihood_per_gap"] == pytest.approx(m.log_likelihood / m.n_positive)
    assert rec["converged"] is True and rec["check"]["steps"]
    assert set(rec["delta_bic_vs_1"]) == {"2", "3"}


def test_pause_threshold_record_has_both_fits():
    g = _two_scale_gaps(n=800, seed=2)
    conv = {"random_state_checks": 1}
    rec = pause_threshold(g, n_init=1, preset_threshold=2.36, preset_em_tol=1e-3, converged=conv)
    # A preset with a published tolerance: top level = published-settings fit, used = preset.
    assert rec["em_tol"] == 1e-3 and rec["threshold_used_s"] == 2.36
    assert rec["threshold_s"] == rec["published_settings_fit"]["threshold_s"]
    assert rec["converged_fit"]["converged"] and rec["converged_fit"]["random_state_check"]
    rec2 = pause_threshold(g, n_init=1, converged=conv)
    # No preset: the converged fit is the fitted and the used threshold.
    assert rec2["threshold_s"] == rec2["converged_fit"]["threshold_s"] == rec2["threshold_used_s"]
    assert rec2["threshold_source"] == "fitted"


def test_large_studies_fit_a_seeded_subsample():
    """Above max_fit_gaps the mixtures see a seeded subsample (recorded); the crossing stays
    within 5 % of the fit to every gap, and the same seed gives the same record."""
    g = _two_scale_gaps(n=12000, seed=7)
    full = pause_threshold(g, n_init=1, converged={"random_state_checks": 0})
    sub = pause_threshold(g, n_init=1, converged={"random_state_checks": 0}, max_fit_gaps=6000)
    assert "fit_subsample" not in full
    assert sub["fit_subsample"] == {"n_gaps": len(g), "n_fitted": 6000, "seed": 42}
    assert sub["n_gaps"] == 6000
    assert sub["threshold_s"] == pytest.approx(full["threshold_s"], rel=0.05)
    again = pause_threshold(g, n_init=1, converged={"random_state_checks": 0}, max_fit_gaps=6000)
    assert again == sub
    unlimited = pause_threshold(
        g, n_init=1, converged={"random_state_checks": 0}, max_fit_gaps=len(g)
    )
    assert unlimited == full


@pytest.mark.parametrize(("k", "seed"), [(2, 42), (3, 7), (4, 0), (3, 11)])
def test_kmeans_starts_are_scikit_learns_kmeans(k, seed):
    """The one-feature k-means of the starts gives scikit-learn KMeans's labels, drawing the
    same numbers from the same RandomState (three starts in sequence)."""
    from sklearn.cluster import KMeans

    x = np.log(_two_scale_gaps(n=2000, seed=seed))
    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    for _ in range(3):
        want = KMeans(n_clusters=k, n_init=1, random_state=theirs).fit(x[:, None]).labels_
        assert np.array_equal(pauses._kmeans_labels(x, k, ours), want)
