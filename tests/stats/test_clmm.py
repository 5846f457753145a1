"""The cumulative-link mixed model (nonolab.stats.clmm) against independent references: without
random effects (or with SDs shrunk to zero) it is statsmodels' OrderedModel (logit) to 1e-5; the
dense and Schur-complement factorisations give the same Laplace likelihood; a hand-computed
Laplace approximation for one group; the likelihood-ratio test. The R cross-check
(``ordinal::clmm``) is tests/stats/test_clmm_r.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.special import expit
from statsmodels.miscmodels.ordinal_model import OrderedModel

from nonolab.stats import clmm


def simulated(seed: int = 11, n_p: int = 60, n_q: int = 10, per: int = 4) -> pd.DataFrame:
    """Ratings 1-5 from a cumulative logit with crossed random intercepts and an interaction
    of a puzzle covariate ``x`` and a participant covariate ``m``."""
    rng = np.random.default_rng(seed)
    p = np.repeat(np.arange(n_p), per)
    q = np.concatenate([rng.choice(n_q, per, replace=False) for _ in range(n_p)])
    x_q, m_p = rng.normal(size=n_q), rng.normal(size=n_p)
    eta = (
        0.8 * x_q[q]
        + 0.3 * m_p[p]
        - 0.5 * x_q[q] * m_p[p]
        + rng.normal(0, 1.0, n_p)[p]
        + rng.normal(0, 0.7, n_q)[q]
    )
    latent = eta + rng.logistic(size=len(p))
    y = 1 + np.searchsorted(np.array([-2.5, -0.8, 0.8, 2.5]), latent)
    return pd.DataFrame(
        {
            "participant_id": [f"P{i}" for i in p],
            "puzzle_hash": [f"h{j}" for j in q],
            "x": x_q[q],
            "m": m_p[p],
            "y": y.astype(float),
        }
    )


def ordered_model(d: pd.DataFrame):
    x = np.column_stack([d["x"], d["m"], d["x"] * d["m"]])
    y = np.searchsorted(np.sort(d["y"].unique()), d["y"])
    res = OrderedModel(y, x, distr="logit").fit(method="newton", disp=False, maxiter=100)
    assert res.mle_retvals["converged"]
    model = res.model
    return res, model.transform_threshold_params(res.params)[1:-1], res.params[:3]


def test_no_random_effects_is_ordered_model():
    d = simulated()
    res, theta, beta = ordered_model(d)
    fit = clmm.fit_clmm(d, "y ~ x * m", groups=())
    np.testing.assert_allclose(fit.thresholds.to_numpy(), theta, rtol=0, atol=1e-5)
    np.testing.assert_allclose(fit.params.to_numpy(), beta, rtol=0, atol=1e-5)
    assert fit.llf == pytest.approx(res.llf, abs=1e-5)
    # standard errors: OrderedModel's are in its own threshold parameterisation; the
    # fixed-effect ones are parameterisation-free at the optimum
    np.testing.assert_allclose(fit.bse.iloc[4:].to_numpy(), res.bse[:3], rtol=1e-4)
    assert list(fit.thresholds.index) == ["1|2", "2|3", "3|4", "4|5"]
    assert list(fit.params.index) == ["x", "m", "x:m"]


def test_laplace_with_vanishing_sds_is_the_ordered_model_likelihood():
    d = simulated()
    res, theta, beta = ordered_model(d)
    fit = clmm.fit_clmm(d, "y ~ x * m")  # builds the problem the same way
    y = np.searchsorted(np.sort(d["y"].unique()), d["y"])
    x = np.column_stack([d["x"], d["m"], d["x"] * d["m"]])
    codes = [pd.factorize(d[g], sort=True)[0] for g in ("participant_id", "puzzle_hash")]
    prob = clmm.ClmmProblem(y, x, codes, 5)
    assert prob.laplace(theta, beta, np.array([1e-8, 1e-8])) == pytest.approx(res.llf, abs=1e-5)
    assert fit.llf > res.llf  # the random effects are real in these data


def test_laplace_matches_quadrature_for_one_group():
    """One participant with a random intercept: the Laplace value is the hand-built
    approximation log p(y|u*) + log phi(u*) + log sqrt(2 pi / H(u*)) at the mode u*, and it is
    close to the exact integral (scipy quad)."""
    y = np.array([0, 1, 1, 2, 2, 2, 3])
    x = np.zeros((7, 1))
    theta, beta, sd = np.array([-1.0, 0.5, 2.0]), np.zeros(1), 1.3
    prob = clmm.ClmmProblem(y, x, [np.zeros(7, int)], 4)
    ext = np.r_[-np.inf, theta, np.inf]

    def joint(u):  # log p(y | u) + log phi(u)
        p = expit(ext[y + 1] - sd * u) - expit(ext[y] - sd * u)
        return np.log(p).sum() + stats.norm.logpdf(u)

    grid = np.linspace(-5, 5, 200001)
    vals = np.array([joint(u) for u in grid[::100]])
    u0 = grid[::100][vals.argmax()]
    from scipy.optimize import minimize_scalar

    u_star = minimize_scalar(lambda u: -joint(u), bracket=(u0 - 0.1, u0 + 0.1), tol=1e-12).x
    h = 1e-4
    curv = -(joint(u_star + h) - 2 * joint(u_star) + joint(u_star - h)) / h**2
    hand = joint(u_star) + 0.5 * np.log(2 * np.pi / curv)
    assert prob.laplace(theta, beta, np.array([sd])) == pytest.approx(hand, abs=1e-6)
    exact = np.log(integrate.quad(lambda u: np.exp(joint(u)), -10, 10, epsabs=1e-14)[0])
    assert prob.laplace(theta, beta, np.array([sd])) == pytest.approx(exact, abs=0.02)


def test_dense_and_schur_factorisations_agree():
    d = simulated(seed=3)
    dense = clmm.fit_clmm(d, "y ~ x * m", dense_max=10**6)
    schur = clmm.fit_clmm(d, "y ~ x * m", dense_max=0)
    assert schur.llf == pytest.approx(dense.llf, abs=1e-8)
    np.testing.assert_allclose(schur.params, dense.params, rtol=1e-5)
    np.testing.assert_allclose(schur.bse, dense.bse, rtol=1e-4)
    np.testing.assert_allclose(schur.sd, dense.sd, rtol=1e-5)


def test_recovers_the_simulated_interaction_and_lrt():
    d = simulated(seed=5, n_p=150)
    full = clmm.fit_clmm(d, "y ~ x * m")
    reduced = clmm.fit_clmm(d, "y ~ x + m")
    assert full.converged and reduced.converged
    w = full.wald("x:m")
    assert w["coef"] == pytest.approx(-0.5, abs=3 * w["se"])
    assert w["p"] == pytest.approx(2 * stats.norm.sf(abs(w["coef"] / w["se"])))
    chi2, p = clmm.lrt(full, reduced)
    assert chi2 == pytest.approx(2 * (full.llf - reduced.llf))
    assert p == pytest.approx(stats.chi2.sf(chi2, 1))
    # Wald and likelihood-ratio statistics agree to first order
    assert chi2 == pytest.approx(w["z"] ** 2, rel=0.25)


def test_rejects_a_constant_column_and_a_single_category():
    d = simulated()
    with pytest.raises(ValueError, match="constant"):
        clmm.fit_clmm(d.assign(x=1.0), "y ~ x * m")
    with pytest.raises(ValueError, match="two observed categories"):
        clmm.fit_clmm(d.assign(y=3.0), "y ~ x * m")


def test_moderation_ordinal_table():
    from statsmodels.stats.multitest import multipletests

    d = simulated(seed=2)
    cov = d[["puzzle_hash", "x"]].drop_duplicates().assign(x2=lambda f: f["x"] ** 3)
    att = d.drop(columns=["x"]).rename(columns={"y": "final_difficulty", "m": "expertise"})
    att.loc[att.index[:5], "final_difficulty"] = np.nan  # unrated attempts are left out
    table = clmm.moderation_ordinal(att, cov, moderator="expertise", metrics=("x", "x2"))
    assert list(table["term"]) == ["x:expertise", "x2:expertise"]
    np.testing.assert_allclose(table["p_fdr"], multipletests(table["p"], method="fdr_bh")[1])
    assert (table["n"] == len(d) - 5).all()
    assert table["converged"].all()
    for c in ("threshold_1_2", "threshold_4_5", "sd_participant", "sd_puzzle", "lrt_p"):
        assert table[c].notna().all(), c
    used = d.iloc[5:]
    full = clmm.fit_clmm(used, "y ~ x * m")
    reduced = clmm.fit_clmm(used, "y ~ x + m")
    row = table.iloc[0]
    assert row["coef"] == pytest.approx(full.params["x:m"], rel=1e-6)
    assert row["lrt_chi2"] == pytest.approx(2 * (full.llf - reduced.llf), rel=1e-6)
    assert row["n_participants"] == used["participant_id"].nunique()


def _problem(d: pd.DataFrame, groups=("participant_id", "puzzle_hash"), **kw) -> clmm.ClmmProblem:
    y = np.searchsorted(np.sort(d["y"].unique()), d["y"])
    x = np.column_stack([d["x"], d["m"], d["x"] * d["m"]])
    codes = [pd.factorize(d[g], sort=True)[0] for g in groups]
    return clmm.ClmmProblem(y, x, codes, 5, **kw)


def test_laplace_many_is_laplace_point_by_point(monkeypatch):
    """Many points in one call give each point's own Laplace value (each from a cold start),
    whatever the warm start, in one batch or in chunks; non-increasing thresholds give -inf."""
    rng = np.random.default_rng(4)
    theta = np.sort(rng.normal(0, 2, (25, 4)), axis=1)
    theta[3] = theta[3, ::-1]  # decreasing: undefined
    beta, sd = rng.normal(0, 0.5, (25, 3)), np.exp(rng.normal(0, 1, (25, 2)))
    one = []
    for t, b, s in zip(theta, beta, sd, strict=True):
        cold = _problem(simulated(seed=3))
        one.append(cold.laplace(t, b, s))
    many = _problem(simulated(seed=3)).laplace_many(theta, beta, sd)
    assert np.isneginf(many[3]) and np.isneginf(one[3])
    np.testing.assert_allclose(many, one, rtol=0, atol=1e-10)
    monkeypatch.setattr(clmm, "BATCH_ELEMENTS", 720)  # chunks of one point (60 x 10 block)
    chunked = _problem(simulated(seed=3)).laplace_many(theta, beta, sd)
    np.testing.assert_allclose(chunked, one, rtol=0, atol=1e-10)


def test_schur_with_two_factors_left_dense_is_the_dense_factorisation():
    """Three crossed factors: the Schur complement of the largest leaves a dense block with a
    cross block of its own; the Laplace value is the dense one, for one or many points."""
    d = simulated(seed=8).assign(session=lambda f: np.arange(len(f)) % 7)
    groups = ("participant_id", "puzzle_hash", "session")
    theta, beta, sd = np.array([-2.0, -0.5, 0.7, 2.2]), np.array([0.5, 0.2, -0.3]), np.ones(3)
    dense = _problem(d, groups, dense_max=10**6).laplace(theta, beta, sd * [1.0, 0.7, 0.4])
    schur = _problem(d, groups, dense_max=0).laplace(theta, beta, sd * [1.0, 0.7, 0.4])
    assert schur == pytest.approx(dense, abs=1e-10)
    assert np.isfinite(dense)


def test_a_warm_start_from_the_nesting_model_reaches_the_same_fit():
    d = simulated(seed=6)
    full = clmm.fit_clmm(d, "y ~ x * m")
    cold = clmm.fit_clmm(d, "y ~ x + m")
    warm = clmm.fit_clmm(d, "y ~ x + m", start=full)
    assert warm.converged and cold.converged
    assert warm.llf == pytest.approx(cold.llf, abs=1e-9)
    np.testing.assert_allclose(warm.params, cold.params, rtol=1e-5)
    np.testing.assert_allclose(warm.bse, cold.bse, rtol=1e-5)
    with pytest.raises(ValueError, match="other categories"):
        clmm.fit_clmm(d[d["y"] < 5], "y ~ x + m", start=full)


@pytest.mark.parametrize("groups", [("participant_id", "puzzle_hash"), ("puzzle_hash",)])
def test_laplace_gradient_is_the_derivative_of_the_laplace_likelihood(groups):
    """The exact gradient (through the conditional mode) against Richardson-extrapolated central
    differences of the Laplace log-likelihood, at random points."""
    rng = np.random.default_rng(7)
    prob = _problem(simulated(seed=3), groups)
    for _ in range(3):
        psi = np.concatenate(
            [
                np.sort(rng.normal(0, 2, 4)),
                rng.normal(0, 0.5, 3),
                np.exp(rng.normal(0, 0.5, len(groups))),
            ]
        )
        val, grad = prob.laplace_gradient(psi[:4], psi[4:7], psi[7:])
        assert val == pytest.approx(prob.laplace(psi[:4], psi[4:7], psi[7:]), abs=1e-10)

        def f(q):
            return prob.laplace(q[:4], q[4:7], q[7:])

        fd = []
        for i in range(len(psi)):
            e = np.zeros(len(psi))
            e[i] = 1e-4
            d1 = (f(psi + e) - f(psi - e)) / 2e-4
            d2 = (f(psi + 2 * e) - f(psi - 2 * e)) / 4e-4
            fd.append((4 * d1 - d2) / 3)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_finite_difference_bfgs_above_the_dense_gradient_limit_reaches_the_same_fit(monkeypatch):
    d = simulated(seed=9)
    exact = clmm.fit_clmm(d, "y ~ x * m")
    monkeypatch.setattr(clmm, "GRADIENT_DENSE_MAX", 0)
    differences = clmm.fit_clmm(d, "y ~ x * m")
    assert exact.converged and differences.converged
    assert differences.llf == pytest.approx(exact.llf, abs=1e-9)
    np.testing.assert_allclose(differences.params, exact.params, rtol=1e-5)
    np.testing.assert_allclose(differences.bse, exact.bse, rtol=1e-5)
