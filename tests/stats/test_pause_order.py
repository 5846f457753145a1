"""Data-order dependence of the pause fits (nonolab.stats.pauses.order_dependence) on generated
gaps: order 0 is the input order and equals the ordinary fits; the converged fit does not move
with the order; every order is a permutation of the same gaps (same median, same count)."""

from __future__ import annotations

import numpy as np
import pytest

from nonolab.stats import pauses


def _gaps(seed: int, n: int = 3000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    comp = rng.choice(3, size=n, p=[0.05, 0.55, 0.40])
    mu, sd = np.array([-4.0, -0.2, 1.6]), np.array([0.5, 0.6, 0.9])
    return np.exp(rng.normal(mu[comp], sd[comp]))


@pytest.mark.parametrize("seed", [3, 8])
def test_order_dependence_input_order_and_converged_invariance(seed):
    gaps = _gaps(seed)
    rows, summary = pauses.order_dependence(
        gaps, n_orders=3, seed=seed, n_init=3, n_published_orders=5
    )
    assert [r["order"] for r in rows] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 5]
    assert [r["fit"] for r in rows[-2:]] == ["published_settings"] * 2
    assert summary["published_settings"]["n_orders"] == 5
    assert summary["converged"]["n_orders"] == 3
    first = {r["fit"]: r for r in rows if r["order"] == 0}
    pub = pauses.fit_pause_model(gaps, n_init=3, tol=pauses.PUBLISHED_EM_TOL, max_iter=2000)
    assert first["published_settings"]["crossing_s"] == pytest.approx(pub.threshold_s, rel=1e-12)
    assert first["published_settings"]["delta_bic_2_vs_1"] == pytest.approx(
        pub.delta_bic_vs_1[2], rel=1e-12
    )
    conv = [r["crossing_s"] for r in rows if r["fit"] == "converged"]
    assert max(conv) - min(conv) < 1e-3
    c = summary["converged"]["crossing_s"]
    assert c["input_order"] == conv[0] and c["min"] == min(conv[1:]) and c["max"] == max(conv[1:])
    # the converged fit of each order continues that order's published-settings mixtures and
    # reaches the optimum the k-means starts reach on their own
    full = pauses.fit_converged_pause_model(gaps, n_init=3)
    assert abs(conv[0] - full.threshold_s) < 1e-3
    assert summary["n_orders"] == 3
    ll = {r["log_likelihood"] for r in rows if r["fit"] == "converged"}
    assert max(ll) - min(ll) < 1e-4 * abs(min(ll))


def test_order_dependence_without_orders_reports_the_input_order_only():
    rows, summary = pauses.order_dependence(
        _gaps(1, 800), n_orders=0, n_init=2, n_published_orders=0
    )
    assert [r["order"] for r in rows] == [0, 0]
    assert np.isnan(summary["published_settings"]["crossing_s"]["min"])


def test_the_published_settings_range_uses_at_least_the_minimum_orders():
    _, summary = pauses.order_dependence(
        _gaps(2, 600), n_orders=2, n_init=1, n_published_orders=None
    )
    n = summary["n_published_orders"]
    assert n in [pauses.MIN_PUBLISHED_ORDERS * 2**j for j in range(4)]
    assert summary["published_settings"]["n_orders"] == n
    # doubled until the first half of the orders gives the range of all (or the cap)
    assert summary["published_settings"]["crossing_stable"] or n == pauses.MAX_PUBLISHED_ORDERS


def test_range_stability_by_hand():
    assert pauses._range_stable([2.35, 2.37, 2.36, 2.351])
    assert not pauses._range_stable([2.36, 2.36, 2.35, 2.38])
    assert not pauses._range_stable([float("nan")] * 4)


def test_order_check_record_holds_the_summary_of_order_dependence():
    """The pause_order rule's record: run True and order_dependence's own summary (the same
    rows), which order_check_summary gives back as threshold.json used to hold it."""
    gaps = _gaps(4, 900)
    kw = dict(n_orders=1, seed=5, components=3, n_init=2, random_state=7)
    rows, record = pauses.order_check(gaps, **kw)
    want_rows, want = pauses.order_dependence(gaps, **kw)
    assert record["run"] is True and "why" not in record
    assert rows == want_rows and record["order_dependence"] == want
    assert pauses.order_check_summary(record) == want


@pytest.mark.parametrize(
    ("gaps", "kw", "why"),
    [
        (_gaps(1, 200), {"n_orders": 3, "why_not": "the preset names no published fit"}, "preset"),
        (_gaps(1, 200), {"n_orders": 0}, "n_orders is 0"),
        (np.zeros(500), {"n_orders": 3}, "only 0 positive gaps"),
        (np.array([]), {"n_orders": 3}, "only 0 positive gaps"),
        (np.r_[np.zeros(100), _gaps(1, 29)], {"n_orders": 3}, "only 29 positive gaps"),
    ],
)
def test_order_check_not_run_says_why_and_never_raises(gaps, kw, why):
    rows, record = pauses.order_check(gaps, seed=0, components=3, **kw)
    assert rows == [] and record["run"] is False and why in record["why"]
    assert pauses.order_check_summary(record) is None
    assert pauses.order_check_summary(None) is None


def test_order_check_runs_at_the_smallest_mixture_size():
    """Exactly 10 positive gaps per component: the fits' own minimum, so the check runs."""
    rows, record = pauses.order_check(_gaps(6, 30), n_orders=1, seed=0, components=3, n_init=1)
    od = record["order_dependence"]
    assert record["run"] and od["n_published_orders"] >= pauses.MIN_PUBLISHED_ORDERS
    assert len(rows) == (od["n_published_orders"] + 1) + (od["n_orders"] + 1)
