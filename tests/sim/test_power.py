"""Tests of the power analysis (nonolab.sim.power, nonolab.stats.power) and its figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nonolab.sim.model import SimParams
from nonolab.sim.power import POWER_COLUMNS, PowerDesign, power_cell, power_table, simulate_ratings
from nonolab.stats.power import bt_scores, mean_scores, pearson_for_spearman, spearman_test


def test_pearson_for_spearman_hand_values_and_monte_carlo():
    assert pearson_for_spearman(0.0) == 0.0
    assert pearson_for_spearman(1.0) == pytest.approx(1.0)
    assert pearson_for_spearman(0.5) == pytest.approx(2 * math.sin(math.pi / 12))
    rng = np.random.default_rng(0)
    for rho_s in (0.4, 0.8):
        r = pearson_for_spearman(rho_s)
        x = rng.standard_normal(200_000)
        y = r * x + math.sqrt(1 - r * r) * rng.standard_normal(200_000)
        assert stats.spearmanr(x, y).statistic == pytest.approx(rho_s, abs=0.01)


def test_mean_scores_hand_case():
    queues = np.array([[0, 1, 2], [2, 1, 3]])
    ratings = np.array([[1.0, 3.0, np.nan], [5.0, 4.0, 2.0]])
    got = mean_scores(queues, ratings, 5)
    assert got[:4].tolist() == [1.0, 3.5, 5.0, 2.0]
    assert math.isnan(got[4])


def test_bt_scores_order_follows_consistent_preferences():
    # every participant rates puzzle 2 hardest and puzzle 0 easiest
    queues = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0]] * 5)
    base = {0: 1.0, 1: 3.0, 2: 5.0}
    ratings = np.array([[base[q] for q in row] for row in queues])
    ratings[0, 1] = 1.0  # one tie between puzzles 0 and 1 keeps the estimate finite
    s = bt_scores(queues, ratings, 3)
    assert s[2] > s[1] > s[0]


def test_spearman_test_exact_permutation_hand_case():
    x = np.arange(6.0)
    rho, p = spearman_test(x, x * 2)
    assert rho == pytest.approx(1.0)
    assert p == pytest.approx(2 / 720)  # only the identity and its reverse reach |rho| = 1
    rho, p = spearman_test(np.arange(20.0), np.arange(20.0) ** 3)
    assert rho == pytest.approx(1.0) and p < 1e-10
    assert all(math.isnan(v) for v in spearman_test(x, np.ones(6)))


def test_simulated_ratings_follow_design():
    design = PowerDesign(12, 40, 0.6)
    z, queues, ratings = simulate_ratings(design, SimParams(), np.random.default_rng(1))
    assert z.shape == (12,) and queues.shape == (40, 3) and ratings.shape == (40, 3)
    assert all(len(set(q)) == 3 for q in queues.tolist())
    ok = ratings[~np.isnan(ratings)]
    assert set(np.unique(ok)) <= {1, 2, 3, 4, 5}
    assert 0.02 < np.isnan(ratings).mean() < 0.25


def test_null_rejection_rate_is_near_alpha():
    t = power_cell(PowerDesign(6, 67, 0.0), replications=200, seed=3)
    assert list(t.columns) == POWER_COLUMNS
    for p in t["power"]:
        assert p <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)


def test_power_grows_with_puzzles_and_is_deterministic():
    small = power_cell(PowerDesign(6, 67, 0.8), replications=60, seed=5)
    big = power_cell(PowerDesign(24, 67, 0.8), replications=60, seed=5)
    assert (big["power"].to_numpy() > small["power"].to_numpy() + 0.3).all()
    again = power_cell(PowerDesign(6, 67, 0.8), replications=60, seed=5)
    pd.testing.assert_frame_equal(small, again)


def test_cells_do_not_depend_on_the_other_cells():
    both = power_table(6, 30, [0.4, 0.8], replications=20, seed=9)
    one = power_table(6, 30, [0.8], replications=20, seed=9)
    pd.testing.assert_frame_equal(
        both[both.rho_true == 0.8].reset_index(drop=True), one.reset_index(drop=True)
    )


def test_unknown_method_rejected():
    with pytest.raises(ValueError, match="unknown ranking methods"):
        power_cell(PowerDesign(6, 10, 0.4), 1, 0, methods=("elo",))


def test_power_figure_draws_one_panel_per_rho():
    from nonolab.report.figures.power import power_figure

    t = power_table(6, 20, [0.4, 0.8], replications=5, seed=1)
    t = pd.concat([t, power_table(12, 20, [0.4, 0.8], replications=5, seed=1)])
    fig = power_figure(t, alpha=0.05)
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="lacks columns"):
        power_figure(t.drop(columns=["power"]))
