"""Balanced schedules: exact position balance per block, carry-over balance, the paper's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.design.schedule import (
    balanced_schedule,
    read_schedule_file,
    schedule_balance,
    williams_base,
)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 14), st.data(), st.integers(0, 2**31))
def test_every_block_is_position_balanced(k: int, data, seed: int) -> None:
    m = data.draw(st.integers(1, k))
    blocks = data.draw(st.integers(1, 4))
    s = balanced_schedule(k, m, blocks * k, seed)
    assert s.sessions.shape == (blocks * k, m)
    for b in range(blocks):
        block = s.sessions[b * k : (b + 1) * k]
        # distinct puzzles within a session
        assert all(len(set(row)) == m for row in block.tolist())
        # each puzzle once in each position
        for j in range(m):
            assert sorted(block[:, j].tolist()) == list(range(k))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.data(), st.integers(0, 2**31))
def test_partial_blocks_are_nearly_balanced(k: int, data, seed: int) -> None:
    m = data.draw(st.integers(1, k))
    n = data.draw(st.integers(1, 3 * k))
    row = schedule_balance(balanced_schedule(k, m, n, seed).sessions, k, n=n)
    assert row["position_max"] - row["position_min"] <= 1
    assert row["exposures_max"] - row["exposures_min"] <= m


@pytest.mark.parametrize("k", [2, 4, 6, 8, 10, 16])
def test_williams_design_for_even_k(k: int) -> None:
    base = williams_base(k)
    assert sorted(base) == list(range(k))
    diffs = {(b - a) % k for a, b in itertools.pairwise(base)}
    assert len(diffs) == k - 1
    s = balanced_schedule(k, k, k, 0)
    assert s.method == "williams"
    row = schedule_balance(s.sessions, k)
    assert row["carryover_min"] == row["carryover_max"] == 1  # every ordered pair once
    assert row["position_min"] == row["position_max"] == 1


@pytest.mark.parametrize(("k", "m"), [(6, 3), (7, 3), (12, 3), (24, 3), (9, 3), (13, 4)])
def test_carryover_balanced_after_a_full_cycle(k: int, m: int) -> None:
    """After (K-1)/gcd(K-1, M-1) blocks every consecutive difference was used equally often,
    so every ordered pair is served in a row equally often."""
    cycle = (k - 1) // math.gcd(k - 1, m - 1)
    s = balanced_schedule(k, m, cycle * k, 3)
    row = schedule_balance(s.sessions, k)
    assert row["carryover_min"] == row["carryover_max"] > 0


def test_deterministic_and_seeded() -> None:
    a = balanced_schedule(24, 3, 96, 5).sessions
    assert np.array_equal(a, balanced_schedule(24, 3, 96, 5).sessions)
    assert not np.array_equal(a, balanced_schedule(24, 3, 96, 6).sessions)


def test_balance_counts_by_hand() -> None:
    sessions = [[0, 1, 2], [1, 2, 0], [0, 2, 1]]
    row = schedule_balance(sessions, 3)
    assert (row["exposures_min"], row["exposures_max"]) == (3, 3)
    # position 0: puzzle 0 twice, 1 once, 2 never
    assert (row["position_min"], row["position_max"]) == (0, 2)
    # consecutive pairs: 01 12 12 20 02 21 -> 12 twice, 10 never
    assert (row["carryover_min"], row["carryover_max"]) == (0, 2)
    assert row["carryover_pairs_seen"] == 5
    assert row["distinct_sequences"] == 3


def test_paper_schedule_is_unbalanced_where_ours_is_not(study_dir) -> None:
    path = study_dir / "assignment_schedule_6puzzles_3perms.json"
    paper = read_schedule_file(str(path))
    assert paper.shape == (120, 3)
    p = schedule_balance(paper, 6, n=48)
    ours = schedule_balance(balanced_schedule(6, 3, 48, 0).sessions, 6)
    assert p["position_max"] - p["position_min"] > 1
    assert ours["position_max"] == ours["position_min"] == 8
    assert ours["exposures_max"] == ours["exposures_min"] == 24


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 30), st.data(), st.integers(0, 2**31))
def test_design_schedule_is_balanced_at_every_whole_block_to_600(k: int, data, seed: int) -> None:
    """The schedule a design serves (:func:`schedule_length` sessions, never cycled) is exactly
    position-balanced after every whole block up to at least 600 sessions and any planned N,
    and the plain-words balance agrees with counts made here."""
    from nonolab.design.schedule import balance_text
    from nonolab.design.study import SCHEDULE_SESSIONS, schedule_length

    m = data.draw(st.integers(1, min(k, 6)))
    searched = data.draw(st.integers(1, 1200))
    n = schedule_length(k, searched)
    assert n >= max(SCHEDULE_SESSIONS, searched) and n % k == 0 and n - k < max(600, searched, k)
    s = balanced_schedule(k, m, n, seed).sessions
    assert s.shape == (n, m)
    onehot = np.zeros((n, k, m))
    onehot[np.arange(n)[:, None], s, np.arange(m)[None, :]] = 1
    cum = onehot.cumsum(axis=0)[k - 1 :: k]  # counts after each whole block
    blocks = np.arange(1, n // k + 1)[:, None, None]
    assert (cum == blocks).all()
    stop = data.draw(st.integers(1, n))
    row = schedule_balance(s, k, "x", stop)
    met = {frozenset(p) for r in s[:stop].tolist() for p in itertools.combinations(r, 2)}
    follows = {(a, b) for r in s[:stop].tolist() for a, b in itertools.pairwise(r)}
    assert row["pairs_never_met"] == k * (k - 1) // 2 - len(met)
    assert row["carryover_pairs_seen"] == len(follows)
    text = balance_text(row)
    assert f"Over {stop} sessions" in text
    if m > 1 and len(follows) < k * (k - 1):
        assert f"only {len(follows)} of the {k * (k - 1)} ordered" in text
    if stop % k == 0:
        assert f"exactly {stop // k} times in each of the {m} positions" in text
