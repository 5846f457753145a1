"""Tests of nonolab.stats.ranking: comparisons from ratings, ML fit vs an independent optimiser,
LR test by hand, bootstrap determinism."""

from __future__ import annotations

import choix
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats
from scipy.special import log_expit

from nonolab.stats.ranking import (
    _choix_data,
    bootstrap_log_strengths,
    fit_log_strengths,
    log_likelihood,
    lr_test,
    normalised_strengths,
    pairwise_comparisons,
    strengths_table,
)


def _ratings(rows):
    return pd.DataFrame(rows, columns=["participant_id", "puzzle_id", "final_difficulty"])


def test_comparisons_by_hand():
    r = _ratings([("p", "a", 4), ("p", "b", 2), ("p", "c", 4), ("q", "a", 1), ("q", "b", np.nan)])
    c = pairwise_comparisons(r)
    got = sorted(map(tuple, c[["participant_id", "winner", "loser", "weight"]].to_numpy()))
    # p: a>b, a=c (half each way), c>b ; q: only one rated puzzle -> nothing
    assert got == sorted(
        [("p", "a", "b", 1.0), ("p", "a", "c", 0.5), ("p", "c", "a", 0.5), ("p", "c", "b", 1.0)]
    )
    assert c["weight"].sum() == 3  # three pairs
    data = _choix_data(c, ["a", "b", "c"])
    assert sorted(data) == sorted([(0, 1), (0, 1), (0, 2), (2, 0), (2, 1), (2, 1)])


def test_duplicate_rating_is_an_error():
    with pytest.raises(ValueError, match="more than once"):
        pairwise_comparisons(_ratings([("p", "a", 1), ("p", "a", 2)]))


def test_two_item_ml_and_lr_by_hand():
    # a beats b 3 times, b beats a once: p(a beats b) = 3/4 -> theta_a - theta_b = ln 3.
    c = pd.DataFrame(
        {
            "participant_id": list("wxyz"),
            "winner": list("aaab"),
            "loser": list("bbba"),
            "weight": 1.0,
        }
    )
    th = fit_log_strengths(c, ["a", "b"])
    assert th[0] - th[1] == pytest.approx(np.log(3), abs=1e-7)
    assert th.sum() == pytest.approx(0.0, abs=1e-12)
    t = lr_test(c, ["a", "b"])
    ll1 = 3 * np.log(0.75) + np.log(0.25)
    ll0 = 4 * np.log(0.5)
    assert t["loglik"] == pytest.approx(ll1)
    assert t["chi2"] == pytest.approx(2 * (ll1 - ll0))
    assert t["df"] == 1
    assert t["p"] == pytest.approx(stats.chi2.sf(2 * (ll1 - ll0), 1))
    s = normalised_strengths(th)
    assert np.prod(s) == pytest.approx(1.0)
    assert s[0] / s[1] == pytest.approx(3.0, rel=1e-6)


def _scipy_ml(c, items):
    """Independent ML: maximise the weighted BT log-likelihood with theta_0 fixed at 0."""
    idx = {k: i for i, k in enumerate(items)}
    w = c["winner"].map(idx).to_numpy()
    lo = c["loser"].map(idx).to_numpy()
    wt = c["weight"].to_numpy()

    def nll(free):
        th = np.concatenate([[0.0], free])
        return -np.sum(wt * log_expit(th[w] - th[lo]))

    res = optimize.minimize(nll, np.zeros(len(items) - 1), method="BFGS", options={"gtol": 1e-10})
    th = np.concatenate([[0.0], res.x])
    return th - th.mean()


@st.composite
def rating_tables(draw):
    n_items = draw(st.integers(3, 6))
    n_part = draw(st.integers(8, 25))
    rows = []
    for p in range(n_part):
        k = draw(st.integers(2, min(3, n_items)))
        chosen = draw(st.permutations(range(n_items)))[:k]
        for i in chosen:
            rows.append((f"p{p}", f"i{i}", draw(st.integers(1, 5))))
    return _ratings(rows), [f"i{i}" for i in range(n_items)]


@given(rating_tables())
@settings(max_examples=40, deadline=None)
def test_choix_fit_matches_independent_optimiser(table):
    ratings, items = table
    c = pairwise_comparisons(ratings)
    try:
        th = fit_log_strengths(c, items)
    except ValueError:
        # Some item never wins or never loses (or is never rated): ML unbounded, refused.
        return
    ref = _scipy_ml(c, items)
    assert th == pytest.approx(ref, abs=2e-5)
    assert log_likelihood(th, c, items) >= log_likelihood(ref, c, items) - 1e-8


def test_fit_agrees_with_choix_opt_pairwise():
    rng = np.random.default_rng(7)
    rows = [
        (f"p{p}", f"i{i}", int(rng.integers(1, 6)))
        for p in range(40)
        for i in rng.permutation(5)[:3]
    ]
    c = pairwise_comparisons(_ratings(rows))
    items = [f"i{i}" for i in range(5)]
    th = fit_log_strengths(c, items)
    ref = choix.opt_pairwise(5, _choix_data(c, items), alpha=0.0, tol=1e-10)
    assert th == pytest.approx(ref - ref.mean(), abs=1e-5)


def test_unbounded_item_is_refused():
    c = pd.DataFrame(
        {"participant_id": ["p", "q"], "winner": ["a", "a"], "loser": ["b", "b"], "weight": 1.0}
    )
    with pytest.raises(ValueError, match="not strongly connected"):
        fit_log_strengths(c, ["a", "b"])


def test_bootstrap_is_seeded_and_table_is_consistent():
    rng = np.random.default_rng(11)
    rows = [
        (f"p{p}", f"i{i}", int(rng.integers(1, 6)))
        for p in range(30)
        for i in rng.permutation(4)[:3]
    ]
    c = pairwise_comparisons(_ratings(rows))
    items = [f"i{i}" for i in range(4)]
    seen = []
    a = bootstrap_log_strengths(
        c, items, 60, seed=3, progress=lambda i, n: seen.append(i), progress_every=20
    )
    b = bootstrap_log_strengths(c, items, 60, seed=3)
    assert seen == [20, 40, 60]
    assert np.array_equal(a.theta, b.theta) and a.n_failed == b.n_failed
    assert len(a.theta) + a.n_failed == 60
    t = strengths_table(c, items, a, hashes={"i0": "h0"})
    assert np.prod(t["strength"]) == pytest.approx(1.0)
    assert (t["ci_low"] <= t["ci_high"]).all()
    assert t.loc[t["strength"].idxmax(), "rank"] == 1
    assert t["puzzle_hash"].tolist() == ["h0", "", "", ""]
