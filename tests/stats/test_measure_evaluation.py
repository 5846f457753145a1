"""One evaluation for every measure: a simulated study with a known driver measure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict

from nonolab.stats.measure_evaluation import (
    _loo_mse_orderings,
    _loo_mse_puzzles,
    _loo_predictions,
    evaluate_measures,
    measure_status,
    out_of_sample,
)
from nonolab.stats.ranking import pairwise_comparisons, strengths_table

DRIVER = np.array([0.0, 1, 2, 3, 4, 5])
NOISE = np.array([3.0, 0, 5, 1, 4, 2])  # Pearson r with DRIVER 0.09


def _study(seed: int = 1, n_participants: int = 24, slope: float = 0.6):
    rng = np.random.default_rng(seed)
    hashes = [f"h{i}" for i in range(6)]
    puzzle_effect = rng.normal(0, 0.3, 6)  # what no measure explains (no singular LMM fit)
    rows = []
    for j in range(n_participants):
        u = rng.normal(0, 0.5)
        expertise = rng.normal()
        for i, h in enumerate(hashes):
            y = 1.5 + slope * DRIVER[i] + puzzle_effect[i] + u + rng.normal(0, 0.6)
            rows.append(
                {
                    "participant_id": f"p{j}",
                    "puzzle_hash": h,
                    "puzzle_id": str(i),
                    "final_difficulty": float(np.clip(np.round(y), 1, 5)),
                    "time_to_solve_s": 60
                    + 30 * NOISE[i]
                    + 40 * puzzle_effect[i]
                    + rng.normal(0, 20),
                    "expertise_composite": expertise,
                }
            )
    att = pd.DataFrame(rows)
    meas = pd.DataFrame(
        {
            "puzzle_hash": hashes,
            "puzzle_id": [str(i) for i in range(6)],
            "driver": DRIVER,
            "noise": NOISE,
            "n_cells": 100.0,
            "filled_share": 0.5,
            "flat": 0.0,
            "gappy": [1.0, np.nan, 2, 3, 4, 5],
        }
    )
    reg = pd.DataFrame(
        {
            "name": ["driver", "noise", "n_cells", "filled_share", "flat", "gappy"],
            "label": ["Driver", "Noise", "Size", "Filled", "Flat", "Gappy"],
            "kind": ["strategy", "sat", "structure", "structure", "strategy", "strategy"],
            "transform": ["identity", "log1p", "identity", "identity", "identity", "identity"],
        }
    )
    hmap = dict(zip(att["puzzle_id"], att["puzzle_hash"], strict=False))
    items = [str(i) for i in range(6)]
    bt = strengths_table(
        pairwise_comparisons(att, rating_col="final_difficulty"), items, hashes=hmap
    )
    return att, bt, meas, reg


@pytest.fixture(scope="module")
def result():
    att, bt, meas, reg = _study()
    outcomes = {"final_difficulty": "final difficulty", "time_to_solve_s": "time to solve"}
    return evaluate_measures(att, bt, meas, reg, outcomes=outcomes), att, meas


def test_statuses_are_reasons_not_zeros(result):
    res, _att, meas = result
    board = res["leaderboard"].set_index("measure")
    assert board.loc["driver", "status"] == "ok"
    assert board.loc["flat", "status"] == "constant over the 6 puzzles (0)"
    assert board.loc["n_cells", "status"].startswith("constant")
    assert board.loc["gappy", "status"] == "undefined for 1 of 6 puzzles"
    assert board.loc["flat", ["bt_rho", "difficulty_slope", "oos_gain"]].isna().all()
    assert set(res["tests"]["measure"]) == {"driver", "noise"}
    assert measure_status(meas, "driver", list(meas["puzzle_hash"])) == "ok"


def test_driver_is_found_and_noise_is_not(result):
    res, _att, _meas = result
    board = res["leaderboard"].set_index("measure")
    # the BT ranking of a strong driver is perfect: rho 1, and the exact two-sided permutation p
    # of rho = +-1 over 6 puzzles is 2 of 720 orderings
    assert board.loc["driver", "bt_rho"] == 1.0
    assert board.loc["driver", "bt_p"] == pytest.approx(2 / 720)
    # the LMM slope per SD of the driver (population SD of 0..5 is 1.708) is about 0.6 * 1.708,
    # attenuated by rounding and clipping the ratings to 1..5
    assert 0.6 < board.loc["driver", "difficulty_slope"] < 1.1
    assert board.loc["driver", "difficulty_q"] < 0.05
    assert board.loc["noise", "difficulty_p"] > 0.05
    # out of sample: the driver beats the baseline; a permutation as good as the observed one
    # is only the reversed ordering (an affine map of the values: the same fit)
    assert board.loc["driver", "oos_gain"] > 0
    assert board.loc["driver", "oos_p"] == pytest.approx(2 / 720)
    assert board.loc["driver", "oos_r2"] > 0.2
    assert board.loc["noise", "oos_p"] > 0.05
    # the leaderboard is ordered by the family q
    assert board.index[0] == "driver"


def test_one_multiplicity_family(result):
    res, _att, _meas = result
    t = res["tests"]
    # 2 measures x (Spearman + 2 LMM slopes + moderation + 2 out-of-sample gains)
    assert len(t) == 2 * 6
    # a test without a p (a singular fit has no Satterthwaite df) is not in the family
    ok = np.isfinite(t["p"].to_numpy())
    assert ok.sum() >= 8
    assert t.loc[~ok, "q"].isna().all() and t.loc[~ok, "note"].str.contains("singular").all()
    p = t["p"].to_numpy()[ok]
    # Benjamini-Hochberg by hand: q_(i) = min_{j >= i} p_(j) m / j
    order = np.argsort(p)
    m = len(p)
    q_sorted = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    q = np.empty(m)
    q[order] = np.minimum(q_sorted, 1)
    np.testing.assert_allclose(t["q"].to_numpy()[ok], q)


def test_moderation_is_the_interaction(result):
    res, _att, _meas = result
    mod = res["tests"][res["tests"]["test"] == "moderation"].set_index("measure")
    # expertise does not moderate the simulated driver
    assert abs(mod.loc["driver", "estimate"]) < 0.2
    assert mod.loc["driver", "p"] > 0.01


def test_loo_predictions_equal_sklearn_on_the_attempts():
    att, _bt, meas, _reg = _study(seed=3)
    d = att.merge(meas, on="puzzle_hash")
    y = d["final_difficulty"].to_numpy()
    x = d[["driver", "noise"]].to_numpy()
    groups = d["puzzle_hash"].to_numpy()
    ref = cross_val_predict(LinearRegression(), x, y, groups=groups, cv=LeaveOneGroupOut())
    np.testing.assert_allclose(_loo_predictions(y, x, groups), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(_loo_predictions(y, x, groups, fast=True), ref, rtol=1e-9, atol=1e-9)
    # the permutation test's puzzle-level path gives the same mean squared error
    _keys, idx = np.unique(groups, return_inverse=True)
    counts = np.bincount(idx).astype(float)
    ybar = np.bincount(idx, weights=y) / counts
    ss = np.bincount(idx, weights=(y - ybar[idx]) ** 2)
    first = np.unique(idx, return_index=True)[1]
    assert _loo_mse_puzzles(ybar, counts, ss, x[first]) == pytest.approx(np.mean((y - ref) ** 2))
    # intercept-only: the mean of the other puzzles' attempts
    got = _loo_predictions(y, np.empty((len(y), 0)), groups)
    for h in np.unique(groups):
        assert got[groups == h][0] == pytest.approx(y[groups != h].mean())


@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(3, 9),
    n_features=st.integers(0, 3),
    shape=st.sampled_from(["general", "collinear", "tied", "one_apart", "few_values"]),
)
def test_every_ordering_at_once_equals_the_fold_by_fold_fits(seed, k, n_features, shape):
    """The batched leave-one-puzzle-out error (deleted-residual identity, the permutation test's
    path) equals the fold-by-fold minimum-norm fits on generated puzzle sets: collinear features,
    tied values, one puzzle whose removal leaves a rank-deficient fit, few distinct values."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 30, k).astype(float)
    ybar = rng.normal(0, 2, k)
    ss = rng.uniform(0, 5, k) * (counts - 1)
    x = rng.normal(0, 1, (k, n_features))
    if shape == "collinear" and n_features >= 2:
        x[:, 1] = 2 * x[:, 0] - 1
    elif shape == "tied":
        x = np.round(x)
    elif shape == "one_apart" and n_features:
        x[:, 0] = 0.0
        x[0, 0] = 1.0  # only puzzle 0 has a non-zero first feature: leverage 1
    elif shape == "few_values":
        x = rng.integers(0, 2, (k, n_features)).astype(float)
    orders = np.stack([rng.permutation(k) for _ in range(12)])
    xs = np.stack([x[o] for o in orders])
    got = _loo_mse_orderings(ybar, counts, ss, xs)
    want = np.array([_loo_mse_puzzles(ybar, counts, ss, xs[i]) for i in range(len(xs))])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_out_of_sample_needs_three_puzzles():
    att, _bt, meas, _reg = _study()
    two = att[att["puzzle_hash"].isin(["h0", "h1"])]
    o = out_of_sample(two, meas, "driver", "final_difficulty")
    assert o["oos_status"].startswith("2 puzzles")
