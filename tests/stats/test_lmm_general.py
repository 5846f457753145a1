"""nonolab.stats.lmm_general and nonolab.stats.maximal_models: the intercept-only special case
against nonolab.stats.lmm.fit_crossed, the deviance against a dense formula, invariances that
any correct fit has, exact df in a balanced design, the reduction rule and the table's FDR.
The lme4 / lmerTest / pbkrtest cross-check is tests/stats/test_r_crosscheck_maximal.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from nonolab.stats import lmm
from nonolab.stats import lmm_general as lg
from nonolab.stats.maximal_models import (
    Structure,
    moderation_maximal,
    moderation_structures,
    reduce_structure,
)


def slope_data(seed: int = 5, n_p: int = 30, n_q: int = 8, per: int = 5, slopes: bool = True):
    """Crossed design: each participant meets ``per`` of ``n_q`` puzzles; ``x`` puzzle-level,
    ``m`` participant-level; random slopes for x by participant and m by puzzle if ``slopes``."""
    rng = np.random.default_rng(seed)
    x_q, m_p = rng.normal(1.0, 1.0, n_q), rng.normal(size=n_p)
    sd = 0.5 if slopes else 0.0
    bp = rng.normal(size=(n_p, 2)) * [0.7, sd]
    bq = rng.normal(size=(n_q, 2)) * [0.9, sd]
    rows = []
    for i in range(n_p):
        for j in rng.choice(n_q, per, replace=False):
            y = (
                1.0
                + 0.5 * x_q[j]
                - 0.2 * x_q[j] * m_p[i]
                + bp[i, 0]
                + bp[i, 1] * x_q[j]
                + bq[j, 0]
                + bq[j, 1] * m_p[i]
                + rng.normal(0, 0.8)
            )
            rows.append((f"P{i:02d}", f"h{j:02d}", x_q[j], m_p[i], y))
    return pd.DataFrame(rows, columns=["participant_id", "puzzle_hash", "x", "m", "y"])


INTERCEPTS = (lg.RandomTerm("participant_id"), lg.RandomTerm("puzzle_hash"))


@pytest.mark.parametrize("reml", [True, False])
def test_intercepts_equal_fit_crossed(reml):
    d = slope_data(seed=1)
    ours = lg.fit_general(d, "y ~ x * m", INTERCEPTS, reml=reml)
    ref = lmm.fit_crossed(d, "y ~ x * m", reml=reml)
    diff = np.abs(ours.params - ref.params).to_numpy()
    assert np.all(diff <= 1e-6 * np.abs(ref.params.to_numpy()) + 1e-6 * ref.bse.to_numpy())
    np.testing.assert_allclose(ours.bse, ref.bse, rtol=1e-6)
    vc = ours.varcorr.set_index("group")["vcov"]
    np.testing.assert_allclose(
        [vc["participant_id"], vc["puzzle_hash"], ours.var_residual],
        [ref.var_participant, ref.var_puzzle, ref.var_residual],
        rtol=1e-6,
    )
    assert ours.llf == pytest.approx(ref.llf, rel=1e-9, abs=1e-8)
    if reml:
        for t in ("x", "x:m"):
            assert ours.satterthwaite(t).df == pytest.approx(lmm.satterthwaite_df(ref, t), rel=1e-6)


def _dense_reml_deviance(fit: lg.GeneralFit, data: pd.DataFrame) -> float:
    """-2 REML log-likelihood from V built observation by observation (covariates' units)."""
    n = fit.n
    V = np.eye(n) * fit.var_residual
    for t in fit.terms:
        cols = np.column_stack(
            [np.ones(n) if c == "1" else data[c].to_numpy(float) for c in t.columns]
        )
        vc = fit.varcorr[fit.varcorr["group"] == t.group]
        G = np.zeros((len(t.columns), len(t.columns)))
        for _, r in vc.iterrows():
            a = t.columns.index(r["var1"])
            b = a if r["var2"] == "" else t.columns.index(r["var2"])
            G[a, b] = G[b, a] = r["vcov"]
        g = data[t.group].to_numpy()
        for i in range(n):
            for j in range(n):
                if g[i] == g[j]:
                    V[i, j] += cols[i] @ G @ cols[j]
    X, y = fit._X, fit._y
    Vi = np.linalg.inv(V)
    XVX = X.T @ Vi @ X
    r = y - X @ np.linalg.solve(XVX, X.T @ Vi @ y)
    p = X.shape[1]
    return float(
        np.linalg.slogdet(V)[1]
        + np.linalg.slogdet(XVX)[1]
        + r @ Vi @ r
        + (n - p) * np.log(2 * np.pi)
    )


def test_deviance_equals_dense_formula_with_slopes():
    d = slope_data(seed=2, n_p=12, n_q=5, per=3)
    fit = lg.fit_general(d, "y ~ x * m", moderation_structures("x", "m")[0].terms)
    assert -2 * fit.llf == pytest.approx(_dense_reml_deviance(fit, d), rel=1e-10)


def test_affine_change_of_covariate_leaves_the_tests_unchanged():
    # (1 + x | g) with an intercept spans the same model for a*x + b: the interaction's t, df
    # and p are unchanged and its coefficient scales by 1/a.
    d = slope_data(seed=3)
    terms = moderation_structures("x", "m")[0].terms
    a = lg.fit_general(d, "y ~ x * m", terms)
    d2 = d.assign(x=1000.0 * d["x"] + 7.0)
    b = lg.fit_general(d2, "y ~ x * m", terms)
    assert b.params["x:m"] * 1000 == pytest.approx(a.params["x:m"], rel=1e-5)
    for method in ("satterthwaite", "kenward_roger"):
        ta, tb = getattr(a, method)("x:m"), getattr(b, method)("x:m")
        assert tb.t == pytest.approx(ta.t, rel=1e-4)
        assert tb.df == pytest.approx(ta.df, rel=1e-3)
        assert tb.p == pytest.approx(ta.p, rel=1e-3)
    assert a.singular == b.singular


def test_balanced_design_df_equal_puzzle_stratum():
    # Every participant meets every puzzle: the puzzle-level slope is tested in the puzzle
    # stratum with n_puzzles - 2 df, exactly, by Satterthwaite and by Kenward-Roger alike; the
    # KR adjustment of the variance vanishes there.
    d = slope_data(seed=4, n_p=15, n_q=9, per=9, slopes=False)
    fit = lg.fit_general(d, "y ~ x", INTERCEPTS)
    assert not fit.singular
    assert fit.satterthwaite("x").df == pytest.approx(7, abs=2e-3)
    kr = fit.kenward_roger("x")
    assert kr.df == pytest.approx(7, abs=2e-3)
    assert kr.se == pytest.approx(fit.bse["x"], rel=1e-6)


def test_reduction_keeps_the_first_non_singular_step():
    d = slope_data(seed=6, slopes=False)
    steps = moderation_structures("x", "m")
    fits, kept, reason = reduce_structure(d, "y ~ x * m", steps)
    assert len(fits) == kept + 1
    assert all(f is not None and f.singular for f in fits[:kept])
    assert fits[kept] is not None and not fits[kept].singular
    assert reason.endswith(f"{steps[kept].name} not singular: kept")
    for f, s in zip(fits, steps, strict=False):
        assert f.terms == s.terms


def test_reduction_keeps_last_step_when_all_singular():
    # Complete balanced design whose noise is centred within every participant and every
    # puzzle: the REML variance estimates of both factors are exactly zero.
    rng = np.random.default_rng(7)
    e = rng.normal(size=(10, 4))
    e = e - e.mean(axis=0) - e.mean(axis=1, keepdims=True) + e.mean()
    i, j = np.meshgrid(np.arange(10), np.arange(4), indexing="ij")
    d = pd.DataFrame(
        {
            "participant_id": [f"P{k}" for k in i.ravel()],
            "puzzle_hash": [f"h{k}" for k in j.ravel()],
            "x": rng.normal(size=40),
            "y": e.ravel(),
        }
    )
    step = Structure("intercepts", INTERCEPTS)
    fits, kept, reason = reduce_structure(d, "y ~ 1", [step, step])
    assert kept == 1 and fits[0].singular and fits[1].singular
    assert "every step singular: kept intercepts" in reason


def test_moderation_table_columns_fdr_and_lrt():
    d = slope_data(seed=8, n_p=24, n_q=6, per=3)
    rng = np.random.default_rng(0)
    att = d[["participant_id", "puzzle_hash", "y", "m"]].rename(columns={"m": "e"})
    cov = d[["puzzle_hash", "x"]].drop_duplicates().reset_index(drop=True)
    cov["z"] = rng.normal(size=len(cov))
    kept, tried = moderation_maximal(att, cov, outcome="y", moderator="e", metrics=["x", "z"])
    lead = ["metric", "structure", "coef", "se", "df_satt", "p_satt", "df_kr", "p_kr"]
    assert list(kept.columns[: len(lead)]) == lead
    for c in ("lrt_chi2", "lrt_p", "p_fdr", "singular", "n"):
        assert c in kept.columns
    assert list(kept["metric"]) == ["x", "z"]
    np.testing.assert_allclose(kept["p_fdr"], multipletests(kept["p_kr"], method="fdr_bh")[1])
    np.testing.assert_allclose(kept["lrt_p"], stats.chi2.sf(kept["lrt_chi2"], 1))
    assert kept["kept"].all() and tried["kept"].sum() == 2
    # every structure of the rule is in the second table, for both metrics
    assert len(tried) == 2 * len(moderation_structures("x", "e"))
    k = tried[tried["kept"]].reset_index(drop=True)
    pd.testing.assert_series_equal(k["coef"], kept["coef"])


def test_bootstrap_lrt_is_deterministic_and_a_valid_p():
    from nonolab.stats.maximal_models import term_tests

    d = slope_data(seed=9, n_p=20, n_q=5, per=3)
    fit = lg.fit_general(d, "y ~ x * m", INTERCEPTS)
    a = term_tests(d, fit, "x:m", "y ~ x + m", n_boot=9, seed=3)
    b = term_tests(d, fit, "x:m", "y ~ x + m", n_boot=9, seed=3)
    assert a["p_boot_lrt"] == b["p_boot_lrt"]
    assert a["n_boot"] == 9
    assert 0.1 <= a["p_boot_lrt"] <= 1.0
    assert (a["p_boot_lrt"] * 10) == pytest.approx(round(a["p_boot_lrt"] * 10))


def test_behaviour_table_structures_and_fdr():
    from nonolab.stats.maximal_models import behaviour_maximal, behaviour_structures

    d = slope_data(seed=10, n_p=24, n_q=6, per=3)
    att = d[["participant_id", "puzzle_hash", "y"]].assign(w=d["y"] * 2 + d["m"])
    cov = d[["puzzle_hash", "x"]].drop_duplicates().reset_index(drop=True)
    kept, tried = behaviour_maximal(att, cov, behaviours={"y": "why", "w": "dub"}, metrics=["x"])
    assert list(kept.columns[:4]) == ["behaviour", "outcome_column", "metric", "structure"]
    assert list(kept["behaviour"]) == ["why", "dub"]
    names = [s.name for s in behaviour_structures("x")]
    assert list(tried["structure"]) == names * 2
    # the puzzle-level metric has no by-puzzle slope in any step
    assert all("puzzle_hash: 1" == r.split("; ")[1] for r in tried["random_effects"])
    assert tried["random_effects"].iloc[0] == "participant_id: 1 + x, correlated; puzzle_hash: 1"
    np.testing.assert_allclose(kept["p_fdr"], multipletests(kept["p_kr"], method="fdr_bh")[1])


def _dense_value_grad(theta, fit, reml):
    """Profiled deviance and its gradient in theta from dense n x n matrices: ``W = I + sum_k
    S_k o (Z_k L_k L_k' Z_k')``, ``d = log|W| + [log|X'W^-1X|] + r (1 + log(2 pi y'Py / r))``,
    ``dd/dtheta_i = tr(Q dW_i) - (r / y'Py) (Py)' dW_i (Py)`` (``Q = P`` REML, ``W^-1`` ML)."""
    y, X = fit._y, fit._X
    n, p = X.shape
    W, dW, pos = np.eye(n), [], 0
    for t in fit._terms:
        same = t.codes[:, None] == t.codes[None, :]
        nt = t.spec.n_theta()
        lam = t.lam(theta[pos : pos + nt])
        W += same * (t.values @ lam @ lam.T @ t.values.T)
        for i, j in t.spec.entries():
            E = np.zeros_like(lam)
            E[i, j] = 1.0
            dW.append(same * (t.values @ (E @ lam.T + lam @ E.T) @ t.values.T))
        pos += nt
    Wi = np.linalg.inv(W)
    XtWX = X.T @ Wi @ X
    P = Wi - Wi @ X @ np.linalg.solve(XtWX, X.T @ Wi)
    r = n - p if reml else n
    rss = y @ P @ y
    dev = np.linalg.slogdet(W)[1] + r * (1 + np.log(2 * np.pi * rss / r))
    dev += np.linalg.slogdet(XtWX)[1] if reml else 0.0
    Q, Py = (P if reml else Wi), P @ y
    return dev, np.array([np.sum(Q * d) - r / rss * Py @ d @ Py for d in dW])


@pytest.mark.parametrize("reml", [True, False])
def test_exact_gradient_equals_dense_formula_and_differences(reml):
    d = slope_data(seed=3)
    structures = moderation_structures("x", "m") + [
        Structure("one", (lg.RandomTerm("participant_id", ("1", "x")),))
    ]
    for st in structures:
        fit = lg.fit_general(d, "y ~ x * m", st.terms, reml=reml)
        s = lg._Stats.of(fit._y, fit._X, fit._terms)
        theta = fit._theta_scaled + np.linspace(0.05, 0.3, len(fit._theta_scaled))
        dev, grad = lg._schur_value_grad(theta, s, reml)
        dense_dev, dense_grad = _dense_value_grad(theta, fit, reml)
        assert dev == pytest.approx(dense_dev, rel=1e-10)
        np.testing.assert_allclose(grad, dense_grad, rtol=1e-7, atol=1e-8)
        h = 1e-5
        fd = [
            (lg._evaluate(theta + h * e, s, reml)[0] - lg._evaluate(theta - h * e, s, reml)[0])
            / (2 * h)
            for e in np.eye(len(theta))
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


def test_batched_bootstrap_refits_equal_one_by_one_refits():
    d = slope_data(seed=4)
    terms = moderation_structures("x", "m")[1].terms
    full = lg.fit_general(d, "y ~ x * m", terms, reml=False)
    rng = np.random.default_rng(11)
    Y = np.array([lg.simulate_general(full, rng) for _ in range(6)])
    batch = lg.refit_llf_batch(full, Y)
    one = [lg.refit(full, y, warm=False).llf for y in Y]
    np.testing.assert_allclose(batch, one, rtol=0, atol=1e-6)
    # the statistics of each response, not the first one's, enter each fit
    assert len(set(np.round(batch, 6))) == len(Y)


def test_started_fit_and_memoised_design_match_a_cold_fit():
    d = slope_data(seed=6)
    terms = moderation_structures("x", "m")[2].terms
    full = lg.fit_general(d, "y ~ x * m", terms, reml=False)
    cold = lg.fit_general(d, "y ~ x + m", terms, reml=False)
    warm = lg.fit_general(d, "y ~ x + m", terms, reml=False, start=full)
    assert warm.llf == pytest.approx(cold.llf, abs=1e-8)
    np.testing.assert_allclose(warm.params, cold.params, rtol=1e-6)
    # same formula, changed response values: the design must be rebuilt
    d2 = d.assign(y=d["y"] + np.linspace(0.0, 1.0, len(d)))
    other = lg.fit_general(d2, "y ~ x + m", terms, reml=False)
    assert not np.allclose(other.params, cold.params)
    y2 = d2["y"].to_numpy()
    np.testing.assert_allclose(other._y, y2)


def test_moderation_table_without_any_rating_keeps_its_layout():
    """No outcome at all (a study without post-surveys): every structure is 'not fitted', the
    tables keep their columns with missing tests instead of stopping the rule."""
    d = slope_data(seed=8, n_p=12, n_q=4, per=3)
    att = d[["participant_id", "puzzle_hash", "y", "m"]].rename(columns={"m": "e"})
    att["y"] = np.nan
    cov = d[["puzzle_hash", "x"]].drop_duplicates().reset_index(drop=True)
    kept, tried = moderation_maximal(att, cov, outcome="y", moderator="e", metrics=["x"])
    assert len(kept) == 1 and kept[["p_kr", "p_fdr", "lrt_p", "coef"]].isna().all().all()
    assert tried["reason"].str.contains("not fitted").all() and (kept["n"] == 0).all()
