"""Crossed-random-intercept mixed models (nonolab.stats.mixed_models): hand-checkable cases, identities,
property tests and determinism. The lme4 cross-check is in tests/test_r_crosscheck.py."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from nonolab.stats import lmm
from nonolab.stats import mixed_models as mm
from nonolab.stats.sensitivity import threshold_sensitivity


def crossed_data(
    n_p: int,
    n_q: int,
    var_p: float,
    var_q: float,
    var_e: float,
    beta: tuple[float, float] = (2.0, 0.5),
    seed: int = 0,
    keep: float = 1.0,
) -> pd.DataFrame:
    """Simulated crossed design: every participant meets every puzzle (a share ``keep`` kept);
    ``x`` is a puzzle-level covariate, ``m`` a participant-level moderator."""
    rng = np.random.default_rng(seed)
    x_q = rng.normal(size=n_q)
    m_p = rng.normal(size=n_p)
    up = rng.normal(0, np.sqrt(var_p), n_p)
    uq = rng.normal(0, np.sqrt(var_q), n_q)
    p, q = np.meshgrid(np.arange(n_p), np.arange(n_q), indexing="ij")
    p, q = p.ravel(), q.ravel()
    y = beta[0] + beta[1] * x_q[q] + up[p] + uq[q] + rng.normal(0, np.sqrt(var_e), len(p))
    d = pd.DataFrame(
        {
            "participant_id": [f"p{i:03d}" for i in p],
            "puzzle_hash": [f"h{j:03d}" for j in q],
            "x": x_q[q],
            "m": m_p[p],
            "y": y,
        }
    )
    if keep < 1.0:
        d = d[rng.random(len(d)) < keep].reset_index(drop=True)
    return d


def test_balanced_design_fixed_effect_equals_ols():
    # Balanced crossed design, puzzle-level covariate: X spans an invariant subspace of V, so
    # the GLS (REML) estimate equals ordinary least squares exactly.
    d = crossed_data(12, 8, 1.5, 2.0, 1.0, seed=3)
    fit = lmm.fit_crossed(d, "y ~ x")
    X = np.column_stack([np.ones(len(d)), d["x"]])
    ols = np.linalg.lstsq(X, d["y"].to_numpy(), rcond=None)[0]
    np.testing.assert_allclose(fit.params.to_numpy(), ols, rtol=1e-8, atol=1e-10)
    assert fit.n == 96 and fit.n_participants == 12 and fit.n_puzzles == 8


def test_balanced_design_satterthwaite_df_is_puzzle_stratum_df():
    # In a balanced crossed design the puzzle-level slope is tested in the puzzle stratum:
    # Satterthwaite's df is exactly n_puzzles - 2 (one mean square).
    d = crossed_data(15, 9, 1.0, 1.0, 1.0, seed=11)
    fit = lmm.fit_crossed(d, "y ~ x")
    assert not fit.singular
    assert lmm.satterthwaite_df(fit, "x") == pytest.approx(9 - 2, abs=2e-3)


def test_variance_components_recovered():
    var_p, var_q, var_e = 4.0, 9.0, 1.0
    d = crossed_data(40, 40, var_p, var_q, var_e, beta=(1.0, 2.0), seed=7)
    fit = lmm.fit_crossed(d, "y ~ x")
    # Approximate sampling SDs of the variance estimates: var * sqrt(2 / df).
    for est, true, df in (
        (fit.var_participant, var_p, 39),
        (fit.var_puzzle, var_q, 38),
        (fit.var_residual, var_e, 39 * 39),
    ):
        assert abs(est - true) < 3 * true * np.sqrt(2 / df), (est, true)
    assert abs(fit.params["x"] - 2.0) < 3 * fit.bse["x"]
    assert fit.converged and fit.warning_text() == ""


def test_reml_loglik_matches_dense_formula():
    # The reported REML log-likelihood equals the textbook dense-V formula at the estimates.
    d = crossed_data(10, 6, 0.7, 1.3, 1.1, seed=5, keep=0.8)
    fit = lmm.fit_crossed(d, "y ~ x")
    n, p = fit.exog.shape
    Zp, Zq = lmm._indicator_matrices(fit)
    V = fit.var_participant * Zp @ Zp.T + fit.var_puzzle * Zq @ Zq.T + fit.var_residual * np.eye(n)
    Vi = np.linalg.inv(V)
    X, y = fit.exog, fit.endog
    XtViX = X.T @ Vi @ X
    b = np.linalg.solve(XtViX, X.T @ Vi @ y)
    r = y - X @ b
    ll = -0.5 * (
        np.linalg.slogdet(V)[1]
        + np.linalg.slogdet(XtViX)[1]
        + r @ Vi @ r
        + (n - p) * np.log(2 * np.pi)
    )
    assert fit.llf == pytest.approx(ll, abs=1e-8)
    np.testing.assert_allclose(fit.params.to_numpy(), b, rtol=1e-8)
    np.testing.assert_allclose(fit.cov_params.to_numpy(), np.linalg.inv(XtViX), rtol=1e-7)


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    var_p=st.floats(0.0, 3.0),
    var_q=st.floats(0.0, 3.0),
    keep=st.floats(0.6, 1.0),
)
# found by hypothesis: every start of the direct fit stopped at the stationary point
# var_participant = 0, short of the interior optimum (REML log-likelihood 0.01 lower)
@example(seed=342, var_p=0.0, var_q=0.03125, keep=1.0)
def test_fit_is_never_below_statsmodels_reml(seed, var_p, var_q, keep):
    # statsmodels' MixedLM (one group, the crossed intercepts as variance components) is an
    # independent implementation of the same REML model: our optimum is never lower.
    from statsmodels.regression.mixed_linear_model import MixedLM

    d = crossed_data(9, 6, var_p, var_q, 1.0, seed=seed, keep=keep)
    fit = lmm.fit_crossed(d, "y ~ x")
    sm = MixedLM.from_formula(
        "y ~ x",
        data=d.assign(one=1),
        groups="one",
        re_formula="0",
        vc_formula={"p": "0 + C(participant_id)", "q": "0 + C(puzzle_hash)"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.fit(reml=True, method=["lbfgs"])
    assert fit.llf >= res.llf - 1e-7
    if res.llf > fit.llf - 1e-6:  # statsmodels reached the optimum too: same estimates
        np.testing.assert_allclose(fit.params.to_numpy(), res.fe_params, rtol=1e-3, atol=1e-3)


def test_design_inputs_give_the_same_fit():
    # Code vectors, dense and sparse indicator matrices are the same design.
    from scipy import sparse

    d = crossed_data(15, 7, 0.6, 0.9, 1.0, seed=21, keep=0.9)
    fit = lmm.fit_crossed(d, "y ~ x")
    codes = [fit.participant_codes, fit.puzzle_codes]
    dense = lmm._indicator_matrices(fit)
    ref = lmm.reml_fit_arrays(fit.endog, fit.exog, codes)
    for Z in (dense, [sparse.csr_matrix(z) for z in dense]):
        out = lmm.reml_fit_arrays(fit.endog, fit.exog, Z)
        for a, b in zip(out, ref, strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ref[0], fit.params.to_numpy(), rtol=1e-12)
    assert ref[3] == pytest.approx(fit.llf, abs=1e-12)


def dense_criterion(theta, y, X, Z, reml=True):
    """lme4's profiled REML (ML) deviance from the dense n x n matrix W."""
    n, p = X.shape
    W = np.eye(n) + sum(t**2 * z @ z.T for t, z in zip(theta, Z, strict=True))
    Wi = np.linalg.inv(W)
    XtWX = X.T @ Wi @ X
    beta = np.linalg.solve(XtWX, X.T @ Wi @ y)
    r = y - X @ beta
    dfr = n - p if reml else n
    s2 = r @ Wi @ r / dfr
    crit = np.linalg.slogdet(W)[1] + dfr * (1 + np.log(2 * np.pi * s2))
    if reml:
        crit += np.linalg.slogdet(XtWX)[1]
    return crit, beta, np.linalg.inv(XtWX), s2


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("n_p", [3, 25])
def test_structured_criterion_equals_dense_formula(reml, n_p):
    # The Schur-complement evaluation (participants eliminated; with 3 participants the
    # puzzles are) equals the dense-W formula, also for a general (non-indicator) design.
    d = crossed_data(n_p, 7, 0.6, 0.9, 1.0, seed=5, keep=0.8)
    fit = lmm.fit_crossed(d, "y ~ x * m")
    X, y = fit.exog, fit.endog
    Z = lmm._indicator_matrices(fit)
    slope = Z[1] * d.loc[: len(y) - 1, "m"].to_numpy()[:, None]  # a puzzle x m slope design
    for design in (Z, Z + [slope]):
        c = lmm._Cross.of(y, X, design)
        for theta in ([0.5, 1.3, 0.4][: len(design)], [0.0, 2.0, 1.0][: len(design)]):
            ours = lmm.reml_criterion(theta, c, reml=reml)
            ref = dense_criterion(theta, y, X, design, reml=reml)
            assert ours[0] == pytest.approx(ref[0], rel=1e-12)
            assert lmm._deviance(np.array(theta), c, reml) == pytest.approx(ref[0], rel=1e-12)
            for a, b in zip(ours[1:], ref[1:], strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_missing_rows_are_dropped_and_counted():
    d = crossed_data(8, 5, 1.0, 1.0, 1.0, seed=2)
    d.loc[[0, 3, 7], "y"] = np.nan
    fit = lmm.fit_crossed(d, "y ~ x")
    assert fit.n == len(d) - 3


def test_missing_grouping_column_is_a_clear_error():
    d = crossed_data(4, 3, 1.0, 1.0, 1.0).drop(columns="puzzle_hash")
    with pytest.raises(KeyError, match="puzzle_hash"):
        lmm.fit_crossed(d, "y ~ x")


def test_boundary_fit_is_recorded():
    # No puzzle effect at all and a puzzle-level covariate: puzzle variance at the boundary.
    d = crossed_data(30, 4, 1.0, 0.0, 1.0, seed=1)
    d["y"] = d["y"] - d.groupby("puzzle_hash")["y"].transform("mean") + 0.3 * d["x"]
    fit = lmm.fit_crossed(d, "y ~ x")
    assert fit.var_puzzle < 1e-6 * fit.var_residual
    assert "boundary" in fit.warning_text()
    assert np.isnan(lmm.satterthwaite_df(fit, "x"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=30))
def test_p_fdr_is_statsmodels_on_the_finite_entries(p):
    p = np.array(p)
    ours = mm._p_fdr(p)
    ok = np.isfinite(p)
    assert np.all(np.isnan(ours[~ok]))
    if ok.any():
        np.testing.assert_array_equal(ours[ok], multipletests(p[ok], method="fdr_bh")[1])


def test_p_fdr_hand_case():
    # m = 4: sorted p 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.04, 0.04, 0.5 (step-up minimum).
    np.testing.assert_allclose(mm._p_fdr([0.03, 0.5, 0.01, 0.02]), [0.04, 0.5, 0.04, 0.04])


def test_metric_covariates_hand_case():
    met = pd.DataFrame({"puzzle_hash": ["a", "b", "c"], "decisions": [0, np.e - 1, np.e**2 - 1]})
    cov = mm.metric_covariates(met, ["decisions"], "log1p_z")
    # log1p -> 0, 1, 2; z with population SD sqrt(2/3).
    np.testing.assert_allclose(cov["decisions"], np.array([-1, 0, 1]) / np.sqrt(2 / 3))
    raw = mm.metric_covariates(met, ["decisions"], "raw")
    np.testing.assert_allclose(raw["decisions"], met["decisions"])
    with pytest.raises(ValueError, match="transform"):
        mm.metric_covariates(met, ["decisions"], "log")
    with pytest.raises(ValueError, match="more than one"):
        mm.metric_covariates(pd.concat([met, met]), ["decisions"])


def test_simple_slope_equals_refit_with_centred_moderator():
    # The simple slope at moderator value w is the metric coefficient of the same model with
    # the moderator centred at w (an exact reparametrisation).
    d = crossed_data(25, 6, 0.5, 0.8, 1.0, seed=9)
    d["y"] = d["y"] + 0.4 * d["x"] * d["m"]
    fit = lmm.fit_crossed(d, "y ~ x * m")
    slopes = mm.simple_slopes(fit, "x", "m", at=(-1.0, 0.0, 1.5))
    for _, row in slopes.iterrows():
        w = row["moderator_value"]
        refit = lmm.fit_crossed(d.assign(m=d["m"] - w), "y ~ x * m")
        assert row["slope"] == pytest.approx(refit.params["x"], rel=1e-6, abs=1e-9)
        assert row["se"] == pytest.approx(refit.bse["x"], rel=1e-5)


def test_moderation_table_layout():
    d = crossed_data(20, 6, 0.5, 0.8, 1.0, seed=4).rename(
        columns={"y": "final_difficulty", "m": "expertise_composite"}
    )
    cov = d[["puzzle_hash", "x"]].drop_duplicates().rename(columns={"x": "decisions"})
    table, slopes = mm.moderation_models(
        d.drop(columns="x"), cov, metrics=["decisions"], at=(-1.0, 0.0, 1.0)
    )
    assert list(table["term"]) == [
        "Intercept",
        "decisions",
        "expertise_composite",
        "decisions:expertise_composite",
        "var_participant",
        "var_puzzle",
        "var_residual",
    ]
    assert (table["n"] == len(d)).all()
    assert list(slopes["moderator_value"]) == [-1.0, 0.0, 1.0]
    mid = slopes.loc[slopes["moderator_value"] == 0.0, "slope"].item()
    assert mid == pytest.approx(table.loc[table["term"] == "decisions", "coef"].item())


def test_bootstrap_is_deterministic_and_detects_a_strong_effect():
    d = crossed_data(20, 8, 0.5, 0.05, 1.0, beta=(0.0, 3.0), seed=12)
    a = lmm.bootstrap_p(d, "y", "x", "x", n_boot=30, seed=42)
    b = lmm.bootstrap_p(d, "y", "x", "x", n_boot=30, seed=42)
    c = lmm.bootstrap_p(d, "y", "x", "x", n_boot=30, seed=43)
    np.testing.assert_array_equal(a.z_null, b.z_null)
    assert not np.array_equal(a.z_null, c.z_null)
    assert a.n_valid == 30 and a.n_failed == 0
    # |z| of a 3-unit slope with little puzzle noise beats every null draw.
    assert a.p_boot == pytest.approx(1 / 31)


def test_bootstrap_refit_matches_full_fit_on_observed_data():
    # The warm-started refit used by the bootstrap gives the full fit's z on the observed data.
    d = crossed_data(15, 7, 0.6, 0.9, 1.0, seed=21, keep=0.9)
    fit = lmm.fit_crossed(d, "y ~ x")
    beta, cov, _, _ = lmm.reml_fit_arrays(
        fit.endog, fit.exog, lmm._indicator_matrices(fit), start=lmm._relative_sd(fit)
    )
    z = beta[1] / np.sqrt(cov[1, 1])
    assert z == pytest.approx(fit.params["x"] / fit.bse["x"], rel=1e-5)


def test_behaviour_models_table_is_deterministic():
    d = crossed_data(12, 6, 1.0, 1.0, 1.0, seed=8)
    d["pause_count"] = d["y"]
    d["error_count"] = d["y"] * 0.5 + d["m"]
    cov = d[["puzzle_hash", "x"]].drop_duplicates().rename(columns={"x": "decisions"})
    att = d.drop(columns=["x", "y"])
    kw = dict(
        behaviours={"pause_count": "pauses", "error_count": "errors"},
        metrics=["decisions"],
        n_boot=5,
        seed=1,
    )
    t1 = mm.behaviour_models(att, cov, **kw)
    t2 = mm.behaviour_models(att, cov, **kw)
    pd.testing.assert_frame_equal(t1, t2)
    assert list(t1["behaviour"]) == ["pauses", "errors"]
    for raw, adj in (("p", "p_fdr"), ("p_satt", "p_satt_fdr"), ("p_boot", "p_boot_fdr")):
        np.testing.assert_allclose(t1[adj], mm._p_fdr(t1[raw]))
    for c in ("coef", "se", "p", "p_fdr", "p_boot", "df_satt", "ci_low", "ci_high"):
        assert t1[c].notna().all(), c


def test_threshold_sensitivity_counts_and_monotone_means():
    d = crossed_data(10, 6, 1.0, 1.0, 1.0, seed=13)
    d["order"] = d.groupby("participant_id").cumcount() + 1
    d["puzzle_id"] = d["puzzle_hash"]
    d["final_difficulty"] = d["y"]
    rng = np.random.default_rng(0)
    gaps = d[["participant_id", "order"]].loc[d.index.repeat(20)].reset_index(drop=True)
    gaps["gap_s"] = rng.lognormal(0.5, 1.0, len(gaps))
    cov = d[["puzzle_hash", "x"]].drop_duplicates().rename(columns={"x": "decisions"})
    t = threshold_sensitivity(
        d.drop(columns="x"), gaps, {"corrected": cov}, [1.0, 2.0, 4.0], metrics=["decisions"]
    )
    assert list(t["threshold_s"]) == [1.0, 2.0, 4.0]
    assert set(t["alignment"]) == {"corrected"}
    assert t["mean_pauses"].is_monotonic_decreasing
    assert t["rho_rating"].notna().all() and t["rho_bt"].isna().all()
    for _, r in t.iterrows():
        assert r["total_pauses"] == int((gaps["gap_s"] >= r["threshold_s"]).sum())
        assert r["share_gaps_pause"] == pytest.approx((gaps["gap_s"] >= r["threshold_s"]).mean())


@pytest.mark.parametrize("reml", [True, False])
def test_satterthwaite_df_matches_finite_differences(reml):
    """The analytic derivatives agree with central differences of the dense deviance."""
    d = crossed_data(30, 8, 1.0, 0.6, 1.0, seed=3, keep=0.6)
    fit = lmm.fit_crossed(d, "y ~ x", reml=reml)
    X, y = fit.exog, fit.endog
    dV = [z @ z.T for z in lmm._indicator_matrices(fit)] + [np.eye(len(y))]

    def pieces(t):
        V = sum(ti * di for ti, di in zip(t, dV, strict=True))
        L = np.linalg.cholesky(V)
        Xs, ys = np.linalg.solve(L, X), np.linalg.solve(L, y)
        A = Xs.T @ Xs
        r = ys - Xs @ np.linalg.solve(A, Xs.T @ ys)
        dev = 2 * np.log(np.diag(L)).sum() + r @ r + (np.linalg.slogdet(A)[1] if reml else 0)
        return dev, np.linalg.inv(A)

    c = np.array([0.0, 1.0])
    t0 = np.array([fit.var_participant, fit.var_puzzle, fit.var_residual])
    h = 1e-4 * t0
    E = np.diag(h)
    H = np.array(
        [
            [
                (
                    pieces(t0 + E[i] + E[j])[0]
                    - pieces(t0 + E[i] - E[j])[0]
                    - pieces(t0 - E[i] + E[j])[0]
                    + pieces(t0 - E[i] - E[j])[0]
                )
                / (4 * h[i] * h[j])
                for j in range(3)
            ]
            for i in range(3)
        ]
    )
    g = np.array(
        [
            (c @ pieces(t0 + E[i])[1] @ c - c @ pieces(t0 - E[i])[1] @ c) / (2 * h[i])
            for i in range(3)
        ]
    )
    ref = 2 * (c @ pieces(t0)[1] @ c) ** 2 / (g @ (2 * np.linalg.inv(H)) @ g)
    assert lmm.satterthwaite_df(fit, "x") == pytest.approx(ref, rel=1e-3)


def dense_satterthwaite(fit, c):
    """The dense-matrix formula of satterthwaite_df (n x n V; exact derivatives)."""
    X, y = fit.exog, fit.endog
    dV = [z @ z.T for z in lmm._indicator_matrices(fit)] + [np.eye(len(y))]
    theta = (fit.var_participant, fit.var_puzzle, fit.var_residual)
    Vinv = np.linalg.inv(sum(t * d for t, d in zip(theta, dV, strict=True)))
    VinvX = Vinv @ X
    Phi = np.linalg.inv(X.T @ VinvX)
    P = Vinv - VinvX @ Phi @ VinvX.T
    Py = P @ y
    Q = P if fit.reml else Vinv
    QdV = [Q @ d for d in dV]
    dVPy = [d @ Py for d in dV]
    H = np.zeros((3, 3))
    g = np.zeros(3)
    for i in range(3):
        g[i] = c @ Phi @ (VinvX.T @ dV[i] @ VinvX) @ Phi @ c
        for j in range(i, 3):
            H[i, j] = H[j, i] = -np.sum(QdV[i] * QdV[j].T) + 2 * dVPy[i] @ P @ dVPy[j]
    return float(2 * (c @ Phi @ c) ** 2 / (g @ (2 * np.linalg.inv(H)) @ g))


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize(("n_p", "n_q", "keep"), [(30, 8, 0.6), (40, 5, 1.0), (5, 12, 0.8)])
def test_satterthwaite_df_equals_dense_formula(reml, n_p, n_q, keep):
    """The structured (random-effect space) derivatives equal the dense n x n formulas, also
    when the puzzles are the eliminated factor (more puzzles than participants)."""
    d = crossed_data(n_p, n_q, 1.0, 0.6, 0.8, seed=n_p, keep=keep)
    d["y"] += 0.3 * d["x"] * d["m"]
    fit = lmm.fit_crossed(d, "y ~ x * m", reml=reml)
    assert not fit.singular
    names = list(fit.params.index)
    for t in names:
        c = np.zeros(len(names))
        c[names.index(t)] = 1.0
        assert lmm.satterthwaite_df(fit, t) == pytest.approx(dense_satterthwaite(fit, c), rel=1e-9)
    c = np.array([0.0, 1.0, 0.0, 0.5])
    assert lmm.satterthwaite_df(fit, c) == pytest.approx(dense_satterthwaite(fit, c), rel=1e-9)


def test_ml_covariance_is_lme4_vcov():
    # ML fits report lme4's vcov: sigma_ML^2 (X'W^-1X)^-1 at the ML variances.
    d = crossed_data(20, 6, 0.8, 0.5, 1.0, seed=17, keep=0.8)
    fit = lmm.fit_crossed(d, "y ~ x", reml=False)
    Z = lmm._indicator_matrices(fit)
    theta = np.sqrt(np.array([fit.var_participant, fit.var_puzzle]) / fit.var_residual)
    crit, beta, inv, s2 = dense_criterion(theta, fit.endog, fit.exog, Z, reml=False)
    np.testing.assert_allclose(fit.cov_params.to_numpy(), s2 * inv, rtol=1e-9)
    assert fit.llf == pytest.approx(-crit / 2, abs=1e-9)


def test_large_design_is_fitted_without_dense_matrices():
    # 20,000 participants x 3 of 30 puzzles: a dense participant design would be 60,000 x
    # 20,000 (9.6 GB); the structured engine fits it and its Satterthwaite df is the puzzle
    # stratum's 30 - 2 for a puzzle-level covariate.
    rng = np.random.default_rng(0)
    n_p, n_q = 20_000, 30
    p = np.repeat(np.arange(n_p), 3)
    q = np.concatenate([rng.choice(n_q, 3, replace=False) for _ in range(n_p)])
    x_q = rng.normal(size=n_q)
    y = 1 + 0.5 * x_q[q] + rng.normal(size=n_p)[p] + rng.normal(size=n_q)[q]
    y = y + rng.normal(size=len(p))
    d = pd.DataFrame({"participant_id": p, "puzzle_hash": q, "x": x_q[q], "y": y})
    fit = lmm.fit_crossed(d, "y ~ x")
    assert fit.n_participants == n_p and fit.converged
    assert abs(fit.var_participant - 1) < 0.1 and abs(fit.var_residual - 1) < 0.1
    assert lmm.satterthwaite_df(fit, "x") == pytest.approx(n_q - 2, abs=0.05)
