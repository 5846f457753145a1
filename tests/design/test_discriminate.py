"""The discriminating selection criterion and the dependent-correlation contrast."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from nonolab.design import discriminate as dc
from nonolab.design.power import RatingModel
from nonolab.design.schedule import balanced_schedule
from nonolab.design.selection import SelectionError, d_criterion, exchange, log_det_scores


def _pool(seed: int, n: int, r: float, p: int = 2) -> np.ndarray:
    """n puzzles with p measures, equicorrelated r, z-scored over the pool."""
    rng = np.random.default_rng(seed)
    cov = np.full((p, p), r) + (1 - r) * np.eye(p)
    x = rng.multivariate_normal(np.zeros(p), cov, n)
    return (x - x.mean(0)) / x.std(0)


# -- criterion ---------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    r=st.floats(0.5, 0.9),
    k=st.integers(6, 16),
)
def test_discriminating_selection_decorrelates_more_than_d_optimal(seed, r, k):
    """On generated pools with correlated measures, the criterion with a spread weight below 1
    has a lower |corr| than the D-optimal selection (w = 1 without floor: same candidates, same
    exchange) and keeps each measure's SD at the floor (pool SD) or above."""
    Z = _pool(seed, 150, r)
    disc = dc.select_discriminating(Z, k, seed=seed, starts=4, w=0.25)
    dopt = dc.select_discriminating(Z, k, seed=seed, starts=4, w=1.0, min_sd=1e-6)
    r_disc = abs(np.corrcoef(Z[disc].T)[0, 1])
    r_dopt = abs(np.corrcoef(Z[dopt].T)[0, 1])
    assert r_disc <= r_dopt + 1e-9
    assert r_disc < r  # below the pool's correlation
    assert Z[disc].std(0).min() >= dc.MIN_SD - 0.05
    # each wins its own criterion
    assert dc.criterion(Z[disc], w=0.25) >= dc.criterion(Z[dopt], w=0.25) - 1e-9
    d_disc = dc.selection_row("d", Z[disc], "ab")["d_criterion"]
    assert dc.selection_row("o", Z[dopt], "ab")["d_criterion"] >= d_disc - 1e-9


def test_criterion_is_log_det_correlation_plus_weighted_spread():
    """phi by hand: log det R + w sum log v (above the floor), and w = 1 is log det C."""
    rng = np.random.default_rng(3)
    Z = rng.normal(0, 2, (12, 3))
    C = np.cov(Z.T, bias=True)
    v = np.diag(C)
    R = C / np.sqrt(np.outer(v, v))
    assert min(v) > 1
    want = math.log(np.linalg.det(R)) + 0.25 * np.log(v).sum()
    assert dc.criterion(Z, w=0.25) == pytest.approx(want, rel=1e-10)
    assert dc.criterion(Z, w=1.0) == pytest.approx(math.log(np.linalg.det(C)), rel=1e-10)
    # below the floor: the penalty 10 * (log s_min^2 - log v_i) per measure
    small = Z / 4
    vs = np.diag(np.cov(small.T, bias=True))
    pen = 10 * np.maximum(0, -np.log(vs)).sum()
    want_small = math.log(np.linalg.det(R)) + 0.25 * np.log(vs).sum() - pen
    assert dc.criterion(small, w=0.25) == pytest.approx(want_small, rel=1e-10)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_vectorised_scores_equal_the_criterion_of_each_swap(seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(30, 2))
    rest = rng.choice(30, 7, replace=False)
    got = dc.criterion_scores(Z)(rest)
    for j in rng.choice(30, 5, replace=False):
        want = dc.criterion(Z[np.append(rest, j)])
        assert got[j] == pytest.approx(want, rel=1e-9, abs=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(4, 10))
def test_generic_exchange_with_log_det_is_the_d_optimal_exchange(seed, k):
    """The one exchange (selection.exchange, used by the discriminating criterion too) with
    log det(X_S'X_S) computed directly per candidate reaches the same D as with the D-optimal
    selection's lemma score, which equals the direct one for every candidate."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(40), rng.normal(size=(40, 2))])
    start = rng.choice(40, k, replace=False)

    def score(rest):
        A = X[rest].T @ X[rest]
        return np.array([np.linalg.slogdet(A + np.outer(x, x))[1] for x in X])

    lemma = log_det_scores(X)
    assert lemma(start[1:]) == pytest.approx(score(start[1:]), rel=1e-9, abs=1e-9)
    ours = exchange(score, len(X), start)
    theirs = exchange(lemma, len(X), start)
    assert dc.exchange is exchange  # one algorithm, re-exported
    assert d_criterion(X[ours]) == pytest.approx(d_criterion(X[theirs]), rel=1e-9)


def test_selection_refuses_too_few_puzzles():
    Z = _pool(1, 20, 0.5, p=3)
    with pytest.raises(SelectionError, match="cannot decorrelate 3"):
        dc.select_discriminating(Z, 3)
    with pytest.raises(SelectionError, match="from 20 candidates"):
        dc.select_discriminating(Z, 21)


def test_undefined_and_constant_measures_are_not_placed():
    """Puzzles where a named measure is undefined are never chosen; a constant measure cannot
    be decorrelated and is refused."""
    rng = np.random.default_rng(4)
    n = 80
    el = pd.DataFrame({"conflicts": rng.poisson(5, n), "decisions": rng.poisson(9, n)})
    el["conflicts"] = el["conflicts"].astype(float)
    holes = [3, 17, 40]
    el.loc[holes, "decisions"] = np.nan
    chosen = {10: np.arange(10)}
    disc = dc.discriminating_choice(el, chosen, ["conflicts", "decisions"], 10, seed=1)
    assert not set(holes) & set(disc.chosen.tolist())
    assert set(disc.d_optimal.tolist()) == set(range(10))  # the D-optimal one kept to compare
    assert len(disc.rows()) == 2
    with pytest.raises(SelectionError, match="only 77 eligible puzzles"):
        dc.discriminating_choice(el, {78: np.arange(78)}, ["conflicts", "decisions"], 78, 1)
    with pytest.raises(SelectionError, match="constant"):
        dc.standardise(pd.DataFrame({"a": [1.0, 2.0, 3.0], "flat": [1.0, 1.0, 1.0]}))


def test_parse_measures():
    assert dc.parse_measures("conflicts, foothold_cells") == ("conflicts", "foothold_cells")
    for bad in ("conflicts", "a,a", ","):
        with pytest.raises(ValueError, match="two or more distinct"):
            dc.parse_measures(bad)


def test_selection_row_reports_decorrelation_and_spread():
    Z = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    row = dc.selection_row("x", Z, ["a", "b"])
    assert row["max_abs_correlation"] == pytest.approx(0.0, abs=1e-12)
    assert row["det_correlation"] == pytest.approx(1.0)
    assert row["a_sd"] == pytest.approx(1.0) and row["b_sd"] == pytest.approx(1.0)
    const = dc.selection_row("c", np.column_stack([np.ones(4), Z[:, 0]]), ["a", "b"])
    assert const["max_abs_correlation"] is None  # undefined, not 0


# -- Williams' test and Zou's interval ---------------------------------------------------------


def test_williams_t_by_hand():
    """Steiger (1980) eq. 7 written out for r_a = .5, r_b = .3, r_ab = .4, n = 50."""
    ra, rb, rab, n = 0.5, 0.3, 0.4, 50
    det = 1 - 0.25 - 0.09 - 0.16 + 2 * 0.5 * 0.3 * 0.4  # 0.62
    rbar = 0.4
    den = 2 * (49 / 47) * det + rbar**2 * 0.6**3  # 1.2927... + 0.03456
    t_hand = 0.2 * math.sqrt(49 * 1.4 / den)
    t, p = dc.williams_test(ra, rb, rab, n)
    assert det == pytest.approx(0.62)
    assert t == pytest.approx(t_hand, rel=1e-12)
    assert t == pytest.approx(1.4378, abs=1e-4)  # 0.2 * sqrt(68.6 / 1.32733)
    assert p == pytest.approx(2 * stats.t.sf(t_hand, 47), rel=1e-12)
    assert math.isnan(dc.williams_test(ra, rb, rab, 3)[0])  # undefined at n <= 3


def test_zou_interval_by_hand():
    """Zou (2007) overlapping case written out for r_a = .5, r_b = .3, r_ab = .4, n = 50."""
    ra, rb, rab, n = 0.5, 0.3, 0.4, 50
    h = 1.959963984540054 / math.sqrt(47)
    la, ua = math.tanh(math.atanh(ra) - h), math.tanh(math.atanh(ra) + h)
    lb, ub = math.tanh(math.atanh(rb) - h), math.tanh(math.atanh(rb) + h)
    c = ((0.4 - 0.075) * (1 - 0.25 - 0.09 - 0.16) + 0.064) / (0.75 * 0.91)
    lo = 0.2 - math.sqrt((ra - la) ** 2 + (ub - rb) ** 2 - 2 * c * (ra - la) * (ub - rb))
    hi = 0.2 + math.sqrt((ua - ra) ** 2 + (rb - lb) ** 2 - 2 * c * (ua - ra) * (rb - lb))
    got = dc.zou_interval(ra, rb, rab, n)
    assert got == pytest.approx((lo, hi), rel=1e-12)
    assert got[0] < 0 < got[1]  # consistent with Williams' p > 0.05 here


def _trivariate(rng, n, r_a, r_b, r_ab, reps):
    cov = np.array([[1, r_a, r_b], [r_a, 1, r_ab], [r_b, r_ab, 1]])
    x = rng.multivariate_normal(np.zeros(3), cov, (reps, n))
    c = np.array([np.corrcoef(s.T) for s in x])
    return c[:, 0, 1], c[:, 0, 2], c[:, 1, 2]


def test_williams_size_at_the_null_by_simulation():
    """At rho(y,a) = rho(y,b) the rejection rate is alpha within Monte-Carlo error, and Zou's
    interval covers the true difference (0) at its level."""
    rng = np.random.default_rng(20261207)
    reps, n = 4000, 30
    ra, rb, rab = _trivariate(rng, n, 0.4, 0.4, 0.5, reps)
    _, p = dc.williams_batch(ra, rb, rab, n)
    size = float((p < 0.05).mean())
    se = math.sqrt(0.05 * 0.95 / reps)
    assert abs(size - 0.05) < 4 * se
    intervals = [dc.zou_interval(a, b, c, n) for a, b, c in zip(ra, rb, rab, strict=True)]
    cover = np.mean([lo <= 0 <= hi for lo, hi in intervals])
    assert abs(cover - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)


@pytest.mark.parametrize("n", [6, 24])
def test_williams_on_spearman_correlations_holds_its_size(n):
    """The contrast applies Williams' t to Spearman correlations (as the pipeline ranks): at
    rho(y,a) = rho(y,b) its rejection rate is alpha within Monte-Carlo error, also at the
    paper's six puzzles."""
    rng = np.random.default_rng(n)
    reps = 4000
    cov = np.array([[1, 0.4, 0.4], [0.4, 1, 0.5], [0.4, 0.5, 1]])
    ranks = stats.rankdata(rng.multivariate_normal(np.zeros(3), cov, (reps, n)), axis=1)
    ranks -= ranks.mean(axis=1, keepdims=True)
    c = np.einsum("rni,rnj->rij", ranks, ranks)
    d = np.sqrt(np.einsum("rii->ri", c))
    c = c / (d[:, :, None] * d[:, None, :])
    _, p = dc.williams_batch(c[:, 0, 1], c[:, 0, 2], c[:, 1, 2], n)
    assert abs((p < 0.05).mean() - 0.05) < 4 * math.sqrt(0.05 * 0.95 / reps)


def test_williams_has_power_off_the_null():
    rng = np.random.default_rng(5)
    ra, rb, rab = _trivariate(rng, 60, 0.6, 0.1, 0.2, 500)
    _, p = dc.williams_batch(ra, rb, rab, 60)
    assert (p < 0.05).mean() > 0.8


# -- contrast power on a design ----------------------------------------------------------------


def _design(values, pool_values):
    k = len(values)
    q = balanced_schedule(k, 3, 60, 1).sessions[:60]
    scores = np.column_stack(
        [dc.pool_normal_scores(pool_values[:, j], values[:, j]) for j in range(2)]
    )
    return dc.ContrastDesign(q, values, scores, ("a", "b"))


def test_decorrelated_design_has_more_contrast_power_than_a_correlated_one():
    """The same pool and K: the selection that decorrelates the measures gives the contrast
    more power than one where they move together (both drivers)."""
    Z = _pool(11, 300, 0.8)
    k = 18
    disc = dc.select_discriminating(Z, k, seed=1, starts=3, w=0.25)
    corr = np.argsort(Z.sum(1))[np.linspace(0, 299, k).astype(int)]  # along the diagonal
    assert abs(np.corrcoef(Z[corr].T)[0, 1]) > 0.9
    model = RatingModel()
    for drv in (0, 1):
        pd_ = dc.contrast_power(_design(Z[disc], Z), drv, 0.6, 300, 3, model)
        pc = dc.contrast_power(_design(Z[corr], Z), drv, 0.6, 300, 3, model)
        assert pd_.power > pc.power + 4 * math.hypot(pd_.mc_se, pc.mc_se)
        assert pd_.extra["driver"] == "ab"[drv]


def test_contrast_power_is_near_alpha_when_measures_coincide():
    """Two copies of one measure cannot be told apart: nothing is rejected in the driver's
    favour beyond chance (Williams' t is 0 when the correlations are equal)."""
    Z = _pool(2, 200, 0.3)[:, :1]
    vals = np.column_stack([Z[:24, 0], Z[:24, 0]])
    r = dc.contrast_power(_design(vals, np.column_stack([Z, Z])), 0, 0.6, 200, 1)
    assert r.power == 0.0


def test_three_measures_the_driver_is_declared_against_each_other():
    """With three decorrelated measures the intersection-union contrast declares the driver in
    a share of studies no larger than it is merely picked (highest rho), and that share is
    high with many participants."""
    Z = _pool(8, 400, 0.5, p=3)
    sel = dc.select_discriminating(Z, 24, seed=2, starts=2, w=0.25)
    q = balanced_schedule(24, 3, 120, 1).sessions[:120]
    scores = np.column_stack([dc.pool_normal_scores(Z[:, j], Z[sel, j]) for j in range(3)])
    cd = dc.ContrastDesign(q, Z[sel], scores, ("a", "b", "c"))
    for drv in range(3):
        r = dc.contrast_power(cd, drv, 0.6, 200, 5)
        assert r.power <= r.extra["picked_share"]
        assert r.extra["picked_share"] > 0.8
        assert r.extra["selection_max_abs_spearman"] < 0.3
