"""Random grids and random unique puzzles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.sat.generate import (
    GenerationError,
    random_grid,
    random_unique_puzzle,
    random_unique_puzzles,
)
from nonolab.sat.solvers import uniqueness


@settings(max_examples=50, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), data=st.data(), seed=st.integers(0, 2**32))
def test_random_grid_fill_count(h, w, data, seed):
    filled = data.draw(st.integers(0, h * w))
    g = random_grid(h, w, filled, np.random.default_rng(seed))
    assert len(g) == h and all(len(r) == w for r in g)
    assert sum(map(sum, g)) == filled
    assert g == random_grid(h, w, filled, np.random.default_rng(seed))


def test_random_grid_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        random_grid(3, 3, 10, rng)
    with pytest.raises(ValueError):
        random_grid(0, 3, 0, rng)


def test_random_grid_uniform_cells():
    # every cell equally likely: 2000 grids of 4x4 with 8 filled -> each cell filled ~1000 times
    rng = np.random.default_rng(7)
    counts = np.zeros((4, 4))
    for _ in range(2000):
        counts += np.array(random_grid(4, 4, 8, rng))
    assert counts.sum() == 2000 * 8
    assert np.all(np.abs(counts - 1000) < 5 * np.sqrt(2000 * 0.25))


def test_random_unique_puzzle_is_unique_and_seeded():
    a = random_unique_puzzle(10, 10, 50, np.random.default_rng(42))
    b = random_unique_puzzle(10, 10, 50, np.random.default_rng(42))
    assert a == b and a.solution == b.solution
    assert sum(map(sum, a.solution)) == 50
    u = uniqueness(a, "block_start", "glucose42")
    assert u.status == "unique" and u.grid == a.solution


def test_random_unique_puzzles_labels():
    ps = list(random_unique_puzzles(3, 5, 5, 13, np.random.default_rng(1)))
    assert [p.label for p in ps] == ["0", "1", "2"]
    assert all(uniqueness(p).status == "unique" for p in ps)


def test_generation_gives_up():
    # seed 1 draws the anti-diagonal 2x2 grid first, which has two solutions: rejected
    assert random_grid(2, 2, 2, np.random.default_rng(1)) == ((0, 1), (1, 0))
    with pytest.raises(GenerationError, match="in 1 attempts"):
        random_unique_puzzle(2, 2, 2, np.random.default_rng(1), max_attempts=1)
    # seed 3 draws a unique grid (a filled column) first
    p = random_unique_puzzle(2, 2, 2, np.random.default_rng(3), max_attempts=1)
    assert p.solution == ((1, 0), (1, 0))
