"""Tests of the power analysis (nonolab.sim.power, nonolab.stats.power) and its figure."""

from __future__ import annotations

import math

import choix
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nonolab.sim.model import SimParams, ordered_triples_batch
from nonolab.sim.power import (
    POWER_COLUMNS,
    PowerDesign,
    power_cell,
    power_table,
    simulate_ratings,
    simulate_replications,
)
from nonolab.stats.correlations import spearman_permutation_p
from nonolab.stats.power import (
    bt_scores,
    bt_scores_batch,
    bt_win_counts,
    mean_scores,
    mean_scores_batch,
    pearson_for_spearman,
    regularised_bt,
    spearman_test,
    spearman_tests,
)


def _random_design(rng, n_rep, n_puzzles, n_participants):
    """Random (not balanced) triples and 1-5 ratings with 10% missing, (R, participants, 3)."""
    queues = np.array(
        [
            [rng.choice(n_puzzles, 3, replace=False) for _ in range(n_participants)]
            for _ in range(n_rep)
        ]
    )
    ratings = rng.integers(1, 6, size=queues.shape).astype(float)
    ratings[rng.random(queues.shape) < 0.1] = np.nan
    return queues, ratings


def _choix_data(queues, ratings):
    """The comparisons as choix's (winner, loser) list: decided pairs twice, ties each way."""
    data = []
    for q, r in zip(queues.tolist(), ratings.tolist(), strict=True):
        for a, b in ((0, 1), (0, 2), (1, 2)):
            if math.isnan(r[a]) or math.isnan(r[b]):
                continue
            if r[a] == r[b]:
                data += [(q[a], q[b]), (q[b], q[a])]
            else:
                w, lo = (q[a], q[b]) if r[a] > r[b] else (q[b], q[a])
                data += [(w, lo)] * 2
    return data


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


def test_win_counts_hand_case():
    queues = np.array([[[0, 1, 2], [2, 1, 0]]])
    ratings = np.array([[[4.0, 2.0, 4.0], [np.nan, 3.0, 1.0]]])
    w = bt_win_counts(queues, ratings, 3)[0]
    # participant 1: 0 beats 1 (2), 0 ties 2 (1 each way), 2 beats 1 (2); participant 2: 1 beats 0
    assert w.tolist() == [[0, 2, 1], [2, 0, 0], [1, 2, 0]]


@pytest.mark.parametrize(("n_puzzles", "n_participants"), [(3, 4), (6, 67), (12, 20), (48, 67)])
def test_batched_bt_equals_choix_ilsr(n_puzzles, n_participants):
    # independent check: choix's own ILSR on the comparison list, one replication at a time
    rng = np.random.default_rng(n_puzzles * 1000 + n_participants)
    queues, ratings = _random_design(rng, 6, n_puzzles, n_participants)
    got = bt_scores_batch(queues, ratings, n_puzzles, ridge=0.01)
    for r in range(len(queues)):
        data = _choix_data(queues[r], ratings[r])
        ref = choix.ilsr_pairwise(n_puzzles, data, alpha=0.01, max_iter=10_000)
        assert np.abs(got[r] - ref).max() < 1e-6
        tight = choix.ilsr_pairwise(n_puzzles, data, alpha=0.01, max_iter=100_000, tol=1e-14)
        assert np.abs(got[r] - tight).max() < 1e-9
        assert abs(got[r].mean()) < 1e-12
        assert np.allclose(bt_scores(queues[r], ratings[r], n_puzzles), got[r], atol=1e-12)


def test_regularised_bt_without_comparisons_is_zero_and_ridge_bounds_unbeaten():
    assert np.array_equal(regularised_bt(np.zeros((2, 4, 4))), np.zeros((2, 4)))
    wins = np.zeros((1, 3, 3))
    wins[0, 2, 0] = wins[0, 2, 1] = 5  # puzzle 2 never loses: finite only thanks to the ridge
    got = regularised_bt(wins, 0.01)[0]
    ref = choix.ilsr_pairwise(3, [(2, 0)] * 5 + [(2, 1)] * 5, alpha=0.01, max_iter=100_000)
    assert np.all(np.isfinite(got)) and got[2] > got[0] == pytest.approx(got[1])
    assert np.abs(got - ref).max() < 1e-6


def test_mean_scores_batch_equals_per_replication():
    rng = np.random.default_rng(4)
    queues, ratings = _random_design(rng, 5, 8, 6)
    got = mean_scores_batch(queues, ratings, 8)
    for r in range(5):
        for j in range(8):
            vals = ratings[r][queues[r] == j]
            vals = vals[~np.isnan(vals)]
            want = vals.mean() if len(vals) else np.nan
            np.testing.assert_equal(got[r, j], want)


@pytest.mark.parametrize("n", [3, 5, 6, 8, 12, 30])
def test_batched_spearman_equals_scipy_and_permutation_test(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((40, n))
    y = rng.integers(1, 4, size=(40, n)).astype(float)  # many ties
    y[:10] = x[:10] + rng.standard_normal((10, n))  # no ties
    y[10, 0] = np.nan  # a puzzle without a score: tested without it
    y[11] = 2.0  # constant: undefined
    x[12, 1] = x[12, 0]  # tied metric values
    rho, p = spearman_tests(x, y)
    for i in range(40):
        ok = ~np.isnan(y[i])
        xi, yi = x[i][ok], y[i][ok]
        if len(xi) < 3 or np.ptp(yi) == 0:  # too few puzzles or a constant score: undefined
            assert math.isnan(rho[i]) and math.isnan(p[i])
            continue
        res = stats.spearmanr(xi, yi)
        assert rho[i] == pytest.approx(res.statistic, abs=1e-12)
        if len(xi) <= 8:
            assert p[i] == pytest.approx(spearman_permutation_p(xi, yi), abs=1e-12)
        else:  # scipy's own t approximation
            assert p[i] == pytest.approx(res.pvalue, rel=1e-9)


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


def test_batched_triples_distinct_balanced_and_uniform():
    rng = np.random.default_rng(2)
    q = ordered_triples_batch(7, 50, 400, rng)
    assert q.shape == (400, 50, 3)
    assert (np.sort(q, axis=2)[..., 1:] != np.sort(q, axis=2)[..., :-1]).all()
    for s in range(400):
        counts = np.bincount(q[s].ravel(), minlength=7)
        assert counts.max() - counts.min() <= 1
    # every puzzle equally likely in every slot (ties broken at random, random order)
    first = np.bincount(q[:, :, 0].ravel(), minlength=7) / (400 * 50)
    assert np.abs(first - 1 / 7).max() < 0.01
    with pytest.raises(ValueError, match="at least 3"):
        ordered_triples_batch(2, 1, 1, rng)


def test_replications_are_independent_draws_of_the_design():
    rng = np.random.default_rng(6)
    z, queues, ratings = simulate_replications(PowerDesign(12, 60, 0.8), SimParams(), rng, 300)
    assert z.shape == (300, 12) and queues.shape == ratings.shape == (300, 60, 3)
    assert abs(z.mean()) < 0.02 and z.std() == pytest.approx(1, abs=0.02)
    # puzzle means of the ratings follow the metric with the design's correlation
    rho = [
        stats.spearmanr(z[r], mean_scores(queues[r], ratings[r], 12)).statistic for r in range(300)
    ]
    assert 0.55 < np.nanmean(rho) < 0.8
    assert not np.array_equal(queues[0], queues[1])


@pytest.mark.parametrize("n_puzzles", [6, 12, 24])
def test_null_rejection_rate_is_near_alpha(n_puzzles):
    reps = 2000
    t = power_cell(PowerDesign(n_puzzles, 67, 0.0), replications=reps, seed=3)
    assert list(t.columns) == POWER_COLUMNS
    se = math.sqrt(0.05 * 0.95 / reps)
    for p in t["power"]:
        # the exact permutation test (6 puzzles) cannot exceed alpha; the t approximation is close
        assert p <= 0.05 + 3 * se
        assert p >= (0.02 if n_puzzles == 6 else 0.05 - 3 * se)
    assert t["mean_rho_hat"].abs().max() < 0.02


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
