"""Designs that tell measures apart: the decorrelation criterion, the exchange selection against
random and D-optimal choices, and the contrast power (hand-checked cases)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nonolab.design.discriminating import (
    contrast_power,
    d_criterion,
    d_optimal_selection,
    decorrelation,
    discriminating_selection,
    scaled_measures,
    selection_summary,
)


def _pool(n: int = 300, r: float = 0.85, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n)
    b = r * a + np.sqrt(1 - r * r) * rng.standard_normal(n)
    return pd.DataFrame({"a": a, "b": np.expm1(b - b.min()), "flat": 1.0})


def test_criteria_by_hand():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 1.0], [3.0, 2.0]])
    r = np.corrcoef(x[:, 0], x[:, 1])[0, 1]
    # two measures: det of [[1, r], [r, 1]] = 1 - r^2
    assert decorrelation(x, 0.0) == pytest.approx(1 - r * r)
    # the spread floor: SD of column 2 is 0.707 (pool SD units), so a floor of 0.8 scores 0
    assert decorrelation(x, 0.8) == 0.0
    # det(X'X)/n^m of the centred columns: var_a var_b (1 - r^2) with population variances
    va, vb = x[:, 0].var(), x[:, 1].var()
    assert d_criterion(x) == pytest.approx(va * vb * (1 - r * r))


def test_scaled_measures_refuse_what_cannot_be_decorrelated():
    pool = _pool()
    with pytest.raises(ValueError, match="constant over the pool"):
        scaled_measures(pool, ["a", "flat"])
    pool.loc[3, "a"] = np.nan
    with pytest.raises(ValueError, match="undefined"):
        scaled_measures(pool, ["a", "b"], {"b": "log1p"})


def test_selection_decorrelates_better_than_random_and_d_optimal():
    pool = _pool()
    tr = {"b": "log1p"}
    x = scaled_measures(pool, ["a", "b"], tr)
    assert abs(np.corrcoef(x, rowvar=False)[0, 1]) > 0.8  # correlated over the pool
    k = 12
    disc = discriminating_selection(pool, ["a", "b"], k, transforms=tr, seed=1)
    dopt = d_optimal_selection(pool, ["a", "b"], k, transforms=tr, seed=1)
    rand = sorted(np.random.default_rng(1).choice(len(pool), k, replace=False))
    s_disc, s_dopt, s_rand = (selection_summary(x[s]) for s in (disc, dopt, rand))
    assert len(disc) == len(set(disc)) == k
    assert s_disc["max_abs_r"] < 0.1 < s_rand["max_abs_r"]
    assert s_disc["decorrelation"] >= s_dopt["decorrelation"]
    assert s_disc["min_sd"] >= 0.5  # the spread floor holds
    assert d_criterion(x[dopt]) >= d_criterion(x[disc])  # each wins its own criterion


def test_contrast_power_by_hand():
    # identical rankings: every study ties at the top, so the contrast never picks the driver
    same = np.column_stack([np.arange(6.0), 2 * np.arange(6.0)])
    assert contrast_power(same, 40, reps=10, strength=0.9, seed=0).tolist() == [0.0, 0.0]
    # orthogonal rankings over 8 puzzles and a perfect driver: picked in most studies
    a = np.array([0, 1, 2, 3, 4, 5, 6, 7.0])
    b = np.array([3, 7, 0, 4, 6, 1, 5, 2.0])  # Spearman with a: 0.0
    pw = contrast_power(np.column_stack([a, b]), 120, reps=20, strength=0.99, seed=0)
    assert (pw >= 0.8).all()
