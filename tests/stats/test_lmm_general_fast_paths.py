"""The maximal engine's fast paths against the forms they replace: the one-response deviance
and gradient (both column layouts) against the dense n x n formulas and the batched
evaluator, the direct L-BFGS-B driver against ``scipy.optimize.minimize`` (the same iterates,
bit for bit), and the null model's ML fit from the full design against the formula fit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lmm_general import _dense_value_grad, slope_data

from nonolab.stats import lmm_general as lg
from nonolab.stats.maximal_models import (
    Structure,
    _null_ml,
    behaviour_structures,
    moderation_structures,
    term_tests,
)

P, G = "participant_id", "puzzle_hash"
#: every structure of the rules, plus the shapes they do not use: a one-column eliminated
#: term beside a two-column one, a three-column (general) eliminated term, a single term
STRUCTURES = [
    *moderation_structures("x", "m"),
    Structure("puzzle_slope_only", (lg.RandomTerm(P), lg.RandomTerm(G, ("1", "m")))),
    Structure("three_columns", (lg.RandomTerm(P, ("1", "x", "m")), lg.RandomTerm(G))),
    Structure("one_term", (lg.RandomTerm(P, ("1", "x")),)),
]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(0, len(STRUCTURES) - 1),
    reml=st.booleans(),
    full=st.booleans(),
    shift=st.floats(0.01, 0.5),
)
def test_one_response_gradient_equals_dense_and_batched_forms(seed, k, reml, full, shift):
    """Generated designs, structures, criteria, column layouts and points ``theta``."""
    d = slope_data(seed=seed, n_p=14, n_q=6, per=3)
    st_ = STRUCTURES[k]
    old = lg._FULL_COLUMNS
    lg._FULL_COLUMNS = 10**6 if full else 0  # the layout is chosen when first used
    try:
        fit = lg.fit_general(d, "y ~ x * m", st_.terms, reml=reml)
        s = lg._Stats.of(fit._y, fit._X, fit._terms)
        assert s.layout().full is full
        rng = np.random.default_rng(seed)
        theta = fit._theta_scaled + shift * rng.standard_normal(len(fit._theta_scaled))
        lower = np.concatenate([[0.0 if i == j else -np.inf for i, j in t.entries()]
                                for t in st_.terms])  # fmt: skip
        theta = np.where(lower == 0, np.abs(theta) + 0.05, theta)
        dev, grad = lg._value_grad(theta, s, reml)
    finally:
        lg._FULL_COLUMNS = old
    dense_dev, dense_grad = _dense_value_grad(theta, fit, reml)
    assert dev == pytest.approx(dense_dev, rel=1e-10)
    np.testing.assert_allclose(grad, dense_grad, rtol=1e-7, atol=1e-8)
    bdev, bgrad = lg._batch_value_grad(theta[None], s, s.ZtR[None], s.RtR[None], reml)
    assert dev == pytest.approx(float(bdev[0]), rel=1e-12)
    np.testing.assert_allclose(grad, bgrad[0], rtol=1e-9, atol=1e-9)


def test_one_response_gradient_of_another_response():
    """The bootstrap's statistics (another ``y``) enter through ``Zc`` and ``RtR``."""
    d = slope_data(seed=2)
    fit = lg.fit_general(d, "y ~ x * m", moderation_structures("x", "m")[0].terms)
    y2 = fit._y[::-1].copy()
    s, s2 = (lg._Stats.of(y, fit._X, fit._terms) for y in (fit._y, y2))
    theta = fit._theta_scaled + 0.1
    ours = lg._value_grad(theta, s, True, s.layout().columns(s, s2.ZtR), s2.RtR)
    ref = lg._value_grad(theta, s2, True)
    assert ours[0] == pytest.approx(ref[0], rel=1e-13)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k", range(4))
@pytest.mark.parametrize("reml", [True, False])
def test_direct_lbfgsb_gives_minimize_iterates(k, reml):
    """Bit for bit the optimum, value and status of scipy's minimize, from lme4's start and
    from a start on the boundary (a zero diagonal entry)."""
    d = slope_data(seed=7 + k)
    terms = moderation_structures("x", "m")[k].terms
    fit = lg.fit_general(d, "y ~ x * m", terms, reml=reml)
    s = lg._Stats.of(fit._y, fit._X, fit._terms)
    calls: list[np.ndarray] = []

    def f(th):
        calls.append(th.copy())
        return lg._value_grad(th, s, reml)

    lower = np.concatenate([[0.0 if i == j else -np.inf for i, j in t.entries()] for t in terms])
    opts = {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000, "maxfun": 50000}
    for x0 in (lg._starts(terms)[0], np.where(lower == 0, 0.0, 0.2)):
        calls.clear()
        ref = lg._scipy_lbfgsb(f, x0, lower, opts)
        ref_calls = list(calls)
        calls.clear()
        ours = lg._lbfgsb(f, x0, lower, opts)
        assert ref.fun == ours.fun and ref.status == ours.status
        np.testing.assert_array_equal(ours.x, ref.x)
        if lg._setulb_driver_matches():  # the same points evaluated, none twice
            assert len(calls) == len(ref_calls)
            np.testing.assert_array_equal(np.array(calls), np.array(ref_calls))
    assert lg._setulb_driver_matches()  # the installed scipy uses the direct driver


@pytest.mark.parametrize(
    ("formula", "null", "term", "k"),
    [
        ("y ~ x * m", "y ~ x + m", "x:m", 0),
        ("y ~ x * m", "y ~ x + m", "x:m", 3),
        ("y ~ x", "y ~ 1", "x", 0),
        ("y ~ x", "y ~ 1", "x", 2),
    ],
)
def test_null_fit_from_the_full_design_equals_the_formula_fit(formula, null, term, k):
    d = slope_data(seed=12)
    structures = moderation_structures if "m" in formula else lambda a, b: behaviour_structures(a)
    terms = structures("x", "m")[k].terms
    fit = lg.fit_general(d, formula, terms)
    full = lg.refit(fit, fit._y, reml=False, warm=False, precise=True)
    ours = _null_ml(d, full, term, null)
    ref = lg.fit_general(d, null, terms, reml=False, start=full)
    assert ours.llf == ref.llf and ours.n == ref.n
    np.testing.assert_array_equal(ours.params.to_numpy(), ref.params.to_numpy())
    assert list(ours.params.index) == list(ref.params.index)


def test_null_fit_on_other_rows_is_fitted_from_its_formula():
    """A metric missing on some rows: the null formula without it keeps more rows, so it is
    fitted from its own design (and term_tests refuses the pair, as before)."""
    d = slope_data(seed=13)
    d.loc[d.index[:4], "x"] = np.nan
    terms = behaviour_structures("x")[2].terms  # intercepts: x is in no random term
    fit = lg.fit_general(d, "y ~ x", terms)
    full = lg.refit(fit, fit._y, reml=False, warm=False, precise=True)
    null = _null_ml(d, full, "x", "y ~ 1")
    assert null.n == full.n + 4
    with pytest.raises(ValueError, match="other rows"):
        term_tests(d, fit, "x", "y ~ 1")
