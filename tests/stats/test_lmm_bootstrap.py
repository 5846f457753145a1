"""Batched parametric bootstrap of nonolab.stats.lmm: simulated responses identical to the
sequential draws, the batched REML criterion and its exact derivatives against the one-response
engine and finite differences, batched fits against fit_crossed on every response (and lme4 where
the old warm-started refit stopped short), and bootstrap_p's failure accounting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.stats import lmm, rcheck


def crossed(
    n_p: int, n_q: int, var_p: float, var_q: float, seed: int, keep: float = 0.8
) -> pd.DataFrame:
    """Simulated crossed design (a share ``keep`` of the participant x puzzle cells kept;
    every participant and puzzle keeps at least one row); ``x`` a puzzle-level covariate,
    ``y`` with no effect of ``x``."""
    rng = np.random.default_rng(seed)
    x_q = rng.normal(size=n_q)
    p, q = np.meshgrid(np.arange(n_p), np.arange(n_q), indexing="ij")
    p, q = p.ravel(), q.ravel()
    y = (
        rng.normal(0, np.sqrt(var_p), n_p)[p]
        + rng.normal(0, np.sqrt(var_q), n_q)[q]
        + rng.normal(size=len(p))
    )
    kept = (rng.random(len(p)) < keep) | (q == p % n_q) | (p == q % n_p)
    return pd.DataFrame(
        {
            "participant_id": [f"p{i:03d}" for i in p[kept]],
            "puzzle_hash": [f"h{j:03d}" for j in q[kept]],
            "x": x_q[q[kept]],
            "y": y[kept],
        }
    )


def null_and_full(d: pd.DataFrame) -> tuple[lmm.CrossedFit, lmm.CrossedFit]:
    return lmm.fit_crossed(d, "y ~ 1"), lmm.fit_crossed(d, "y ~ x")


def z_of(beta: np.ndarray, cov: np.ndarray) -> np.ndarray:
    return beta[..., 1] / np.sqrt(cov[..., 1, 1])


@pytest.mark.parametrize("zero_puzzle_variance", [False, True])
def test_simulated_responses_are_the_sequential_draws(zero_puzzle_variance):
    d = crossed(9, 5, 0.7, 0.0 if zero_puzzle_variance else 0.4, seed=4)
    null, _ = null_and_full(d)
    if zero_puzzle_variance:  # a boundary null fit still consumes its puzzle draws
        from dataclasses import replace

        null = replace(null, var_puzzle=0.0)
    a = np.random.default_rng(11)
    b = np.random.default_rng(11)
    block = lmm.simulate_responses(null, a, 7)
    one_by_one = np.array([lmm.simulate_response(null, b) for _ in range(7)])
    np.testing.assert_array_equal(block, one_by_one)
    assert a.random() == b.random()  # the generators end in the same state


def test_batched_criterion_and_derivatives():
    d = crossed(12, 6, 0.8, 0.3, seed=7)
    null, full = null_and_full(d)
    Y = lmm.simulate_responses(null, np.random.default_rng(3), 4)
    codes = [full.participant_codes, full.puzzle_codes]
    cb = lmm._CrossBatch.of(Y, full.exog, codes)
    phi = np.random.default_rng(5).uniform(0.0, 2.0, (4, 2))
    phi[0, 1] = 0.0  # on the boundary too
    f, g, H = lmm._batch_criterion(cb, phi)
    h = 1e-5

    def crit(b: int, ph: np.ndarray) -> float:
        return lmm.reml_criterion(np.sqrt(ph), lmm._Cross.of(Y[b], full.exog, codes))[0]

    for b in range(4):
        assert f[b] == pytest.approx(crit(b, phi[b]), rel=1e-12)
        for j, e in enumerate(np.eye(2)):
            if phi[b, j] > h:  # central difference
                fd = (crit(b, phi[b] + h * e) - crit(b, phi[b] - h * e)) / (2 * h)
            else:  # second-order one-sided difference at phi = 0
                f0, f1, f2 = (crit(b, phi[b] + i * h * e) for i in range(3))
                fd = (-3 * f0 + 4 * f1 - f2) / (2 * h)
            assert g[b, j] == pytest.approx(fd, rel=1e-5, abs=1e-5)
        # Hessian: central differences of the exact gradient
        for j, e in enumerate(np.eye(2)):
            up = lmm._batch_criterion(cb.take(np.array([b])), (phi[b] + h * e)[None])[1][0]
            dn = lmm._batch_criterion(cb.take(np.array([b])), (phi[b] - h * e)[None])[1][0]
            if phi[b, j] > h:
                np.testing.assert_allclose(H[b, j], (up - dn) / (2 * h), rtol=1e-5, atol=1e-5)


def _per_response_fits(d: pd.DataFrame, Y: np.ndarray) -> list[lmm.CrossedFit]:
    out = []
    for y in Y:
        dy = d.assign(y=y)
        out.append(lmm.fit_crossed(dy, "y ~ x"))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batched_fits_equal_fit_crossed_on_every_response(seed):
    d = crossed(15, 7, 0.6, 0.15, seed=seed)
    null, full = null_and_full(d)
    Y = lmm.simulate_responses(null, np.random.default_rng(seed), 25)
    codes = [full.participant_codes, full.puzzle_codes]
    beta, cov, var, ll, ok = lmm.reml_fit_batch(Y, full.exog, codes)
    assert ok.all()
    for b, fit in enumerate(_per_response_fits(d, Y)):
        # The batched optimum is never worse than fit_crossed's (several starts, every face)
        assert ll[b] >= fit.llf - 1e-9
        if ll[b] - fit.llf < 1e-7:  # the same optimum: the same estimates
            np.testing.assert_allclose(beta[b], fit.params.to_numpy(), rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(
                var[b], [fit.var_participant, fit.var_puzzle, fit.var_residual], atol=1e-6
            )
            assert z_of(beta[b], cov[b]) == pytest.approx(
                fit.params["x"] / fit.bse["x"], rel=1e-6, abs=1e-8
            )


@settings(max_examples=25, deadline=None)
@given(
    n_p=st.integers(4, 14),
    n_q=st.integers(3, 7),
    var_p=st.floats(0.0, 2.0),
    var_q=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
)
def test_batched_fit_is_a_kkt_point_at_least_as_good_as_fit_crossed(n_p, n_q, var_p, var_q, seed):
    d = crossed(n_p, n_q, var_p, var_q, seed=seed, keep=0.7)
    null, full = null_and_full(d)
    Y = lmm.simulate_responses(null, np.random.default_rng(seed), 6)
    codes = [full.participant_codes, full.puzzle_codes]
    beta, cov, var, ll, ok = lmm.reml_fit_batch(Y, full.exog, codes, start=lmm._relative_sd(full))
    cb = lmm._CrossBatch.of(Y, full.exog, codes)
    phi = var[:, :2] / var[:, 2:]
    _, g, _ = lmm._batch_criterion(cb, phi)
    for b, fit in enumerate(_per_response_fits(d, Y)):
        if not ok[b]:  # left to the one-response engine by bootstrap_p
            continue
        assert ll[b] >= fit.llf - 1e-8
        # Karush-Kuhn-Tucker: zero gradient where a variance is free, non-negative at zero
        for j in range(2):
            scale = 1.0 + abs(ll[b])
            if phi[b, j] > 0:
                assert abs(g[b, j]) * max(phi[b, j], 1e-3) < 1e-6 * scale
            else:
                assert g[b, j] > -1e-6 * scale


def study_like(n_p: int, n_q: int, per: int, var_p: float, var_q: float, seed: int) -> pd.DataFrame:
    """The study's design: each participant attempts ``per`` of ``n_q`` puzzles at random."""
    rng = np.random.default_rng(seed)
    x_q = rng.normal(size=n_q)
    p = np.repeat(np.arange(n_p), per)
    q = np.argsort(rng.random((n_p, n_q)), axis=1)[:, :per].ravel()
    y = (
        rng.normal(0, np.sqrt(var_p), n_p)[p]
        + rng.normal(0, np.sqrt(var_q), n_q)[q]
        + rng.normal(size=len(p))
    )
    return pd.DataFrame(
        {
            "participant_id": [f"p{i:03d}" for i in p],
            "puzzle_hash": [f"h{j}" for j in q],
            "x": x_q[q],
            "y": y,
        }
    )


@pytest.mark.skipif(not rcheck.r_available(("lme4",)), reason="R with lme4 not installed")
def test_batched_fit_matches_lme4_where_the_warm_refit_stopped_short(tmp_path):
    # Response 77 of this bootstrap: the warm-started one-response refit (reml_fit_arrays)
    # stopped at a zero puzzle variance, REML log-likelihood ~0.013 below the interior
    # optimum that the batched fit and lme4 find.
    d = study_like(40, 6, 3, 0.5, 0.1, seed=27)
    null, full = null_and_full(d)
    y = lmm.simulate_responses(null, np.random.default_rng(27), 100)[77]
    codes = [full.participant_codes, full.puzzle_codes]
    beta, cov, var, ll, ok = lmm.reml_fit_batch(
        y[None], full.exog, codes, start=lmm._relative_sd(full)
    )
    r = rcheck.lmer_crossed(d.assign(y=y), [("m", "y", "x")], tmp_path)["m"]
    assert ok[0] and var[0, 1] > 0
    assert ll[0] == pytest.approx(r.reml_loglik, abs=1e-6)
    assert var[0, 1] == pytest.approx(r.var_puzzle, rel=1e-4)
    assert var[0, 0] == pytest.approx(r.var_participant, rel=1e-4)
    assert beta[0, 1] == pytest.approx(r.fixed.loc["x", "estimate"], rel=1e-6)
    assert np.sqrt(cov[0, 1, 1]) == pytest.approx(r.fixed.loc["x", "se"], rel=1e-5)


def test_bootstrap_p_equals_per_response_fit_crossed():
    d = crossed(12, 6, 0.5, 0.2, seed=21)
    res = lmm.bootstrap_p(d, "y", "x", "x", n_boot=20, seed=9, chunk=8)
    null, full = null_and_full(d)
    Y = lmm.simulate_responses(null, np.random.default_rng(9), 20)
    ref = np.array([f.params["x"] / f.bse["x"] for f in _per_response_fits(d, Y)])
    np.testing.assert_allclose(res.z_null, ref, rtol=1e-6, atol=1e-6)
    assert res.n_failed == 0 and res.n_valid == 20
    assert res.z_observed == full.params["x"] / full.bse["x"]
    assert res.p_boot == (1 + np.sum(np.abs(ref) >= abs(res.z_observed))) / 21
    # Each response's fit is independent of the others in its chunk
    whole = lmm.bootstrap_p(d, "y", "x", "x", n_boot=20, seed=9)
    np.testing.assert_array_equal(whole.z_null, res.z_null)


def test_bootstrap_refits_alone_what_the_batch_leaves_and_counts_failures(monkeypatch):
    d = crossed(10, 5, 0.5, 0.2, seed=30)
    good = lmm.bootstrap_p(d, "y", "x", "x", n_boot=6, seed=2)
    real_batch, real_one = lmm.reml_fit_batch, lmm.reml_fit_arrays

    def batch_leaving_two(*args, **kwargs):
        out = real_batch(*args, **kwargs)
        out[4][[1, 4]] = False
        return out

    calls = []

    def one_failing_once(y, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise FloatingPointError("REML fit failed at every start")
        return real_one(y, *args, **kwargs)

    monkeypatch.setattr(lmm, "reml_fit_batch", batch_leaving_two)
    monkeypatch.setattr(lmm, "reml_fit_arrays", one_failing_once)
    res = lmm.bootstrap_p(d, "y", "x", "x", n_boot=6, seed=2)
    assert len(calls) == 2  # only the two responses the batch left
    assert res.n_failed == 1 and res.n_valid == 5
    assert np.isnan(res.z_null[4])
    np.testing.assert_allclose(res.z_null[[0, 1, 2, 3, 5]], good.z_null[[0, 1, 2, 3, 5]], rtol=1e-6)


@pytest.mark.parametrize("factors", [(0,), (0, 1), (1, 0, 2)])
def test_batched_fit_with_one_to_three_factors_equals_reml_fit_arrays(factors):
    # Any number of random intercepts in any order: the largest factor is eliminated and the
    # others enter the dense block, as in reml_fit_arrays.
    rng = np.random.default_rng(0)
    n, sizes, sds = 300, (40, 7, 5), (0.8, 0.5, 0.7)
    codes = [rng.integers(0, s, n) for s in sizes]
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    Y = sum(rng.normal(0, sd, (6, s))[:, c] for s, sd, c in zip(sizes, sds, codes, strict=True))
    Y = Y + rng.normal(size=(6, n))
    Z = [codes[j] for j in factors]
    beta, cov, var, ll, ok = lmm.reml_fit_batch(Y, X, Z)
    assert ok.all()
    for b in range(len(Y)):
        ref = lmm.reml_fit_arrays(Y[b], X, Z)
        assert ll[b] >= ref[3] - 1e-9
        np.testing.assert_allclose(beta[b], ref[0], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(cov[b], ref[1], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(var[b], ref[2], rtol=1e-6, atol=1e-9)


def test_behaviour_models_p_boot_is_bootstrap_p_with_missing_values(monkeypatch):
    # behaviour_models reuses its fit and one null fit per outcome and rows: the same bootstrap
    # as bootstrap_p's own two fits, with missing outcomes and a metric missing on a puzzle.
    from nonolab.stats import mixed_models as mm

    d = crossed(14, 6, 0.5, 0.2, seed=8)
    d.loc[[3, 17, 40], "y"] = np.nan
    d["y2"] = d["y"] * 2.0 + 1.0
    cov = d.groupby("puzzle_hash", as_index=False)["x"].first()
    cov["x2"] = cov["x"] ** 2
    cov.loc[0, "x2"] = np.nan
    att = d[["participant_id", "puzzle_hash", "y", "y2"]]
    seen = []

    def recording(*args, **kwargs):
        seen.append(lmm.parametric_bootstrap(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(mm, "parametric_bootstrap", recording)
    table = mm.behaviour_models(
        att, cov, behaviours={"y": "y", "y2": "y2"}, metrics=["x", "x2"], n_boot=15, seed=4,
        satterthwaite=False,
    )  # fmt: skip
    full = att.merge(cov, on="puzzle_hash")
    for k, (col, m) in enumerate([("y", "x"), ("y", "x2"), ("y2", "x"), ("y2", "x2")]):
        ref = lmm.bootstrap_p(full, col, m, m, n_boot=15, seed=4 + k)
        row = table.iloc[k]
        assert (row["outcome_column"], row["metric"]) == (col, m)
        np.testing.assert_array_equal(seen[k].z_null, ref.z_null)
        assert seen[k].z_observed == ref.z_observed
        assert row["p_boot"] == ref.p_boot and row["n_boot"] == ref.n_valid == 15


def test_satterthwaite_batch_equals_single_fits() -> None:
    """satterthwaite_df_batch on batched fits gives satterthwaite_df of fit_crossed fits."""
    from nonolab.stats.lmm import (
        fit_crossed,
        reml_fit_batch,
        satterthwaite_df,
        satterthwaite_df_batch,
    )

    rng = np.random.default_rng(8)
    n_p, n_q = 30, 8
    q = np.array([rng.choice(n_q, 3, replace=False) for _ in range(n_p)])
    pc, qc = np.repeat(np.arange(n_p), 3), q.ravel()
    x, e = rng.standard_normal(n_q), rng.standard_normal(n_p)
    X = np.column_stack([np.ones(len(qc)), x[qc], e[pc], x[qc] * e[pc]])
    Y = (
        X @ [3, 0.3, -0.1, 0.1]
        + rng.normal(0, 0.5, (5, n_p))[:, pc]
        + rng.normal(0, 0.4, (5, n_q))[:, qc]
        + rng.normal(0, 0.8, (5, len(qc)))
    )
    _, _, var, _, ok = reml_fit_batch(Y, X, [pc, qc])
    assert ok.all()
    df = satterthwaite_df_batch(Y, X, [pc, qc], var, [0, 0, 0, 1])
    for b in range(len(Y)):
        d = pd.DataFrame(
            {"y": Y[b], "x": X[:, 1], "e": X[:, 2], "participant_id": pc.astype(str),
             "puzzle_hash": qc.astype(str)}
        )  # fmt: skip
        want = satterthwaite_df(fit_crossed(d, "y ~ x * e"), "x:e")
        assert df[b] == pytest.approx(want, rel=1e-5) if np.isfinite(want) else np.isnan(df[b])
