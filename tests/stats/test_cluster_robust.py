"""Cluster-robust OLS of a puzzle-level outcome (nonolab.stats.behaviour_regressions.
cluster_robust_ols): against the CR1 sandwich written out by hand, on generated data sets, and
against R's sandwich::vcovCL (type HC1, the same small-sample factor) with t on G - 1 df (marker
``r``; skipped locally without R's sandwich package, a failure under CI=true).
Tolerance: 1e-10 relative against the hand computation, 1e-8 against R."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nonolab.stats import rcheck
from nonolab.stats.behaviour_regressions import cluster_robust_ols


def _data(seed: int, n_groups: int, per: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), per)
    level = rng.normal(size=n_groups)[g]
    x1 = rng.normal(size=len(g)) + level
    x2 = rng.poisson(3, size=len(g)).astype(float)
    y = (10 * rng.normal(size=n_groups))[g]  # constant within a group, like a SAT metric
    return pd.DataFrame({"g": g.astype(str), "x1": x1, "x2": x2, "y": y})


def _by_hand(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.column_stack([np.ones(len(d)), d["x1"], d["x2"]])
    y = d["y"].to_numpy()
    bread = np.linalg.inv(x.T @ x)
    beta = bread @ x.T @ y
    u = y - x @ beta
    meat = np.zeros((3, 3))
    groups = d["g"].unique()
    for grp in groups:
        s = x[d["g"].to_numpy() == grp].T @ u[d["g"].to_numpy() == grp]
        meat += np.outer(s, s)
    n, k, big_g = len(d), x.shape[1], len(groups)
    v = big_g / (big_g - 1) * (n - 1) / (n - k) * bread @ meat @ bread
    se = np.sqrt(np.diag(v))
    p = 2 * stats.t.sf(np.abs(beta / se), big_g - 1)
    return se, p, big_g


@pytest.mark.parametrize(("seed", "n_groups", "per"), [(1, 6, 30), (2, 6, 5), (3, 12, 9)])
def test_cluster_robust_ols_equals_the_sandwich_by_hand(seed, n_groups, per):
    d = _data(seed, n_groups, per)
    got = cluster_robust_ols(d, "y", ["x1", "x2"], "g").set_index("predictor")
    se, p, big_g = _by_hand(d)
    np.testing.assert_allclose(got["se_cluster"], se, rtol=1e-10)
    np.testing.assert_allclose(got["p_cluster"], p, rtol=1e-10)
    assert (got["df_cluster"] == big_g - 1).all() and (got["n_clusters"] == big_g).all()


def test_cluster_robust_ols_without_residual_df_is_missing():
    d = _data(4, 2, 1)
    got = cluster_robust_ols(d, "y", ["x1", "x2"], "g")
    assert got["p_cluster"].isna().all()


_R = r"""
suppressMessages(library(sandwich))
d <- read.csv("data.csv", colClasses = c(g = "character"))
fit <- lm(y ~ x1 + x2, data = d)
v <- vcovCL(fit, cluster = ~g, type = "HC1")
se <- sqrt(diag(v))
G <- length(unique(d$g))
p <- 2 * pt(abs(coef(fit) / se), df = G - 1, lower.tail = FALSE)
write.csv(data.frame(term = names(se), se = se, p = p), "out.csv", row.names = FALSE)
"""


@pytest.mark.r
@pytest.mark.parametrize("seed", [11, 12])
def test_cluster_robust_ols_agrees_with_r_sandwich(seed, tmp_path):
    if not rcheck.r_available(["sandwich"]):
        msg = "Rscript with the sandwich package not available"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; under CI=true this is a failure, not a skip")
        pytest.skip(msg)
    d = _data(seed, 6, 20)
    d.to_csv(tmp_path / "data.csv", index=False)
    rcheck.run_r(_R, tmp_path)
    ref = pd.read_csv(tmp_path / "out.csv")
    got = cluster_robust_ols(d, "y", ["x1", "x2"], "g")
    np.testing.assert_allclose(got["se_cluster"], ref["se"], rtol=1e-8)
    np.testing.assert_allclose(got["p_cluster"], ref["p"], rtol=1e-8)
