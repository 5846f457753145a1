"""The power simulation follows the study's puzzles per session (not always 3)."""

from __future__ import annotations

import numpy as np
import pytest

from nonolab.sim.model import SimParams, ordered_sets_batch, ordered_triples_batch
from nonolab.sim.power import PowerDesign, power_cell, simulate_ratings
from nonolab.stats.power import bt_win_counts


@pytest.mark.parametrize(("n_puzzles", "k"), [(4, 4), (8, 2), (7, 3), (9, 5)])
def test_sets_are_distinct_and_balanced(n_puzzles, k):
    q = ordered_sets_batch(n_puzzles, 30, 50, np.random.default_rng(k), k)
    assert q.shape == (50, 30, k)
    assert all(len(set(row)) == k for row in q.reshape(-1, k).tolist())
    for s in range(50):
        counts = np.bincount(q[s].ravel(), minlength=n_puzzles)
        assert counts.max() - counts.min() <= 1


def test_three_per_session_is_the_triples_schedule():
    a = ordered_triples_batch(6, 10, 4, np.random.default_rng(5))
    b = ordered_sets_batch(6, 10, 4, np.random.default_rng(5), 3)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_every_pair_of_a_participants_puzzles_is_compared(k):
    design = PowerDesign(n_puzzles=4, n_participants=8, rho_true=0.6, per_session=k)
    _, queues, ratings = simulate_ratings(design, SimParams(), np.random.default_rng(1), 0.0)
    assert queues.shape == (8, k)
    wins = bt_win_counts(queues[None], ratings[None], 4)[0]
    # a decided pair adds 2, a tie 1 + 1: every pair of every participant adds 2
    assert wins.sum() == 2 * 8 * k * (k - 1) // 2


def test_power_rows_name_the_puzzles_per_session():
    t = power_cell(PowerDesign(4, 8, 0.8, per_session=4), replications=20, seed=1)
    assert (t["per_session"] == 4).all() and t["power"].between(0, 1).all()
    with pytest.raises(ValueError, match="at least 4 puzzles"):
        power_cell(PowerDesign(3, 8, 0.8, per_session=4), replications=2, seed=1)
