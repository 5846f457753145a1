"""Tests of the Bradley-Terry participant bootstrap (nonolab.stats.ranking): resamples whose win
graph is not strongly connected are skipped and counted, choix non-convergence is counted, an
undefined point estimate gives a table with its reason, and the published analysis's k-squared
weighting matches a direct implementation of its pair-forming step."""

from __future__ import annotations

import itertools
from functools import lru_cache
from pathlib import Path

import choix
import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.special import log_expit

from nonolab.stats import ranking
from nonolab.stats.ranking import (
    NotStronglyConnectedError,
    _choix_data,
    bootstrap_log_strengths,
    fit_log_strengths,
    pairwise_comparisons,
    strengths_table,
    win_graph_components,
)
from nonolab.study.features import attempt_features
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset
from nonolab.study.schemas import validate_table

ITEMS = ["a", "b", "c", "d"]
HASHES = {k: f"hash-{k}" for k in ITEMS}


def _ratings(rows):
    return pd.DataFrame(rows, columns=["participant_id", "puzzle_id", "final_difficulty"])


# Three participants. p1 ties a and b and rates both above c; p2 ties c and d; p3 rates d above a.
# Win graph (edge winner -> loser, a tie both ways): a<->b, a->c, b->c (p1); c<->d (p2);
# d->a (p3). All three: the cycle a->c->d->a plus a<->b, strongly connected. Without p3 every
# item still wins and loses (a beats b, loses to b; c beats d, loses to a; ...) but nothing
# leads from {c, d} back to {a, b}: two components, ML unbounded, and choix does not converge.
# Without p1, b is unrated; without p2, c never wins. So a resample is usable only if it draws
# each participant exactly once.
DESIGN = _ratings(
    [
        ("p1", "a", 3),
        ("p1", "b", 3),
        ("p1", "c", 1),
        ("p2", "c", 2),
        ("p2", "d", 2),
        ("p3", "d", 2),
        ("p3", "a", 1),
    ]
)


def test_components_of_the_hand_made_design():
    c = pairwise_comparisons(DESIGN)
    assert win_graph_components(c, ITEMS) == [ITEMS]
    without_p3 = c[c["participant_id"] != "p3"]
    assert win_graph_components(without_p3, ITEMS) == [["a", "b"], ["c", "d"]]
    # Every item wins and loses, so the old guard let this reach choix, which fails (here: no
    # unique stationary distribution; on the example study: no convergence).
    assert set(without_p3["winner"]) == set(without_p3["loser"]) == set(ITEMS)
    with pytest.raises((RuntimeError, ValueError), match="converge|stationary"):
        choix.ilsr_pairwise(4, _choix_data(without_p3, ITEMS), alpha=0.0, max_iter=10_000)
    with pytest.raises(NotStronglyConnectedError, match=r"\{a, b\}; \{c, d\}"):
        fit_log_strengths(without_p3, ITEMS)
    assert win_graph_components(c[c["participant_id"] != "p1"], ITEMS) == [
        ["a"],
        ["b"],
        ["c", "d"],
    ]


def test_disconnected_resamples_are_skipped_and_counted():
    c = pairwise_comparisons(DESIGN)
    n_boot, seed = 200, 5
    # By hand: usable iff the three draws are a permutation of the three participants.
    rng = np.random.default_rng(seed)
    usable = sum(len(set(rng.integers(0, 3, size=3))) == 3 for _ in range(n_boot))
    assert 0.15 < usable / n_boot < 0.3  # P = 3!/3^3 = 2/9
    full = fit_log_strengths(c, ITEMS)
    for weighting in ("k", "k2"):
        b = bootstrap_log_strengths(c, ITEMS, n_boot, seed, weighting=weighting)
        assert (b.n_used, b.n_not_connected, b.n_not_converged) == (usable, n_boot - usable, 0)
        assert b.n_failed == n_boot - usable
        # Each usable resample is the full data once (k = 1, so k**2 = 1 too).
        assert np.allclose(b.theta, full, atol=1e-6)
    t = strengths_table(c, ITEMS, bootstrap_log_strengths(c, ITEMS, n_boot, seed))
    assert t["n_boot_used"].tolist() == [usable] * 4
    assert t["n_boot_not_connected"].tolist() == [n_boot - usable] * 4
    assert (t["status"] == "ok").all()


def test_non_convergence_is_counted_not_raised(monkeypatch):
    rows = [(f"p{p}", f"i{i}", (p + i) % 5 + 1) for p in range(12) for i in range(3)]
    c = pairwise_comparisons(_ratings(rows))
    items = ["i0", "i1", "i2"]
    real = ranking.ilsr_dense_batch
    seen = {"n": 0}

    def flaky(wins, **kw):
        theta, ok = real(wins, **kw)
        fail = (np.arange(len(ok)) + seen["n"]) % 3 != 0  # two of every three fail
        seen["n"] += len(ok)
        theta[fail] = np.nan
        return theta, ok & ~fail

    monkeypatch.setattr(ranking, "ilsr_dense_batch", flaky)
    b = bootstrap_log_strengths(c, items, 30, seed=1, progress_every=7)
    assert b.n_not_connected + b.n_not_converged + b.n_used == 30
    assert seen["n"] == 30 - b.n_not_connected
    assert b.n_used == len(range(0, seen["n"], 3)) and np.isfinite(b.theta).all()


def test_batch_fit_reports_what_choix_raises():
    c = pairwise_comparisons(DESIGN)
    w = np.zeros((4, 4))
    for a, b in _choix_data(c, ITEMS):
        w[a, b] += 1
    cut = w.copy()
    cut[3, 0] = 0.0  # without p3: {a, b} and {c, d}, no chain back; choix cannot fit it
    with pytest.raises((RuntimeError, ValueError), match="converge|stationary"):
        choix.ilsr_pairwise_dense(cut, alpha=0.0, max_iter=10_000)
    theta, ok = ranking.ilsr_dense_batch(np.stack([w, cut, w]))
    assert ok.tolist() == [True, False, True] and np.isnan(theta[1]).all()
    assert theta[0] == pytest.approx(fit_log_strengths(c, ITEMS), abs=1e-8)
    # One I-LSR step cannot meet the convergence test (it compares two steps), as in choix.
    with pytest.raises(RuntimeError, match="converge"):
        choix.ilsr_pairwise_dense(w, alpha=0.0, max_iter=1)
    assert not ranking.ilsr_dense_batch(w[None], max_iter=1)[1].any()


def test_batch_fit_is_choix_on_every_resample():
    """Each resample's fit equals choix.ilsr_pairwise on the resample's concatenated index pairs
    (the bootstrap's former per-resample fit) and choix.ilsr_pairwise_dense on its k-squared
    win matrix, to rounding (same iterates, same stopping rule)."""
    att = _example_minus_p4()
    items = sorted(att["puzzle_id"].unique(), key=lambda s: (len(s), s))
    c = pairwise_comparisons(att)
    parts = sorted(c["participant_id"].unique())
    per = [_choix_data(c[c["participant_id"] == p], items) for p in parts]
    n, n_boot = len(items), 60
    k = bootstrap_log_strengths(c, items, n_boot, MASTER_SEED)
    k2 = bootstrap_log_strengths(c, items, n_boot, MASTER_SEED, weighting="k2")
    rng = np.random.default_rng(MASTER_SEED)
    refs: dict[str, list] = {"k": [], "k2": []}
    for _ in range(n_boot):
        draw = rng.integers(0, len(parts), len(parts))
        pairs = [x for j in draw for x in per[j]]
        adj = np.zeros((n, n), dtype=bool)
        adj[tuple(np.array(pairs).T)] = True
        if not _closure(adj).all():
            continue
        th = choix.ilsr_pairwise(n, pairs, alpha=0.0, tol=1e-9, max_iter=10_000)
        refs["k"].append(th - th.mean())
        w2 = np.zeros((n, n))
        for j, m in enumerate(np.bincount(draw, minlength=len(parts))):
            for a, b in per[j]:
                w2[a, b] += m**2
        th = choix.ilsr_pairwise_dense(w2, alpha=0.0, tol=1e-9, max_iter=10_000)
        refs["k2"].append(th - th.mean())
    for boot, w in ((k, "k"), (k2, "k2")):
        assert boot.n_used == len(refs[w]) > 40
        assert np.abs(boot.theta - np.array(refs[w])).max() < 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_connectivity_is_the_transitive_closure(seed):
    rng = np.random.default_rng(seed)
    adj = rng.random((300, 5, 5)) < rng.uniform(0.15, 0.6, size=(300, 1, 1))
    got = ranking._strongly_connected_batch(adj)
    want = [bool(_closure(a).all()) for a in adj]
    assert got.tolist() == want and 20 < sum(want) < 280


def test_undefined_point_estimate_gives_a_table_with_the_reason():
    c = pairwise_comparisons(DESIGN[DESIGN["participant_id"] != "p3"])
    boot = bootstrap_log_strengths(c, ITEMS, 20, seed=0)
    k2 = bootstrap_log_strengths(c, ITEMS, 20, seed=0, weighting="k2")
    # Every resample is a sub-graph of a graph that is not strongly connected.
    assert (boot.n_used, boot.n_not_connected) == (0, 20)
    t = strengths_table(c, ITEMS, boot, published=k2, hashes=HASHES)
    validate_table(t, "bt_strengths", mode="write")
    assert t["strength"].isna().all() and t["ci_low"].isna().all() and t["rank"].isna().all()
    assert t["status"].str.startswith("point estimate undefined").all()
    assert "{a, b}; {c, d}" in t.loc[0, "status"]


def test_table_columns_and_weighting_guard():
    c = pairwise_comparisons(DESIGN)
    boot = bootstrap_log_strengths(c, ITEMS, 30, seed=2)
    k2 = bootstrap_log_strengths(c, ITEMS, 30, seed=2, weighting="k2")
    t = strengths_table(c, ITEMS, boot, published=k2, hashes=HASHES)
    validate_table(t, "bt_strengths", mode="write")
    assert list(t.columns[:7]) == [
        "puzzle_id",
        "puzzle_hash",
        "strength",
        "log_strength",
        "ci_low",
        "ci_high",
        "rank",
    ]
    assert "ci_low_published_semantics" in t.columns
    # a study without a published analysis: no published-semantics columns, still valid
    own = strengths_table(c, ITEMS, boot, hashes=HASHES)
    validate_table(own, "bt_strengths", mode="write")
    assert not own.columns.str.contains("published").any()
    assert own.equals(t.drop(columns=["ci_low_published_semantics", "ci_high_published_semantics"]))
    with pytest.raises(ValueError, match="weighting"):
        strengths_table(c, ITEMS, k2)
    with pytest.raises(ValueError, match="weighting"):
        bootstrap_log_strengths(c, ITEMS, 3, seed=2, weighting="k3")


def _published_win_matrix(ratings: pd.DataFrame, drawn: list[str], items: list[str]) -> np.ndarray:
    """The published analysis's resample, written out: concatenate the drawn participants' rows,
    group by participant id and compare every pair of rows (a row with its own copy is a tie of
    an item with itself, which the likelihood ignores)."""
    idx = {k: i for i, k in enumerate(items)}
    boot = pd.concat([ratings[ratings["participant_id"] == p] for p in drawn])
    w = np.zeros((len(items), len(items)))
    for _, g in boot.groupby("participant_id"):
        rows = list(zip(g["puzzle_id"], g["final_difficulty"], strict=True))
        for (i, ri), (j, rj) in itertools.combinations(rows, 2):
            if ri > rj:
                w[idx[i], idx[j]] += 1
            elif rj > ri:
                w[idx[j], idx[i]] += 1
            else:
                w[idx[i], idx[j]] += 0.5
                w[idx[j], idx[i]] += 0.5
    np.fill_diagonal(w, 0.0)
    return w


def _ml_from_matrix(w: np.ndarray) -> np.ndarray:
    i, j = np.nonzero(w)

    def nll(free):
        th = np.concatenate([[0.0], free])
        return -np.sum(w[i, j] * log_expit(th[i] - th[j]))

    res = optimize.minimize(nll, np.zeros(len(w) - 1), method="BFGS", options={"gtol": 1e-10})
    th = np.concatenate([[0.0], res.x])
    return th - th.mean()


def test_k2_weighting_is_the_published_pair_forming():
    rng = np.random.default_rng(4)
    items = [f"i{i}" for i in range(4)]
    rows = [
        (f"p{p:02d}", f"i{i}", int(rng.integers(1, 6)))
        for p in range(10)
        for i in rng.permutation(4)[:3]
    ]
    ratings = _ratings(rows)
    c = pairwise_comparisons(ratings)
    parts = sorted(c["participant_id"].unique())
    seed, n_boot = 9, 8
    k2 = bootstrap_log_strengths(c, items, n_boot, seed, weighting="k2")
    assert k2.n_used == n_boot
    draws = np.random.default_rng(seed)
    for b in range(n_boot):
        drawn = [parts[j] for j in draws.integers(0, len(parts), size=len(parts))]
        ref = _ml_from_matrix(_published_win_matrix(ratings, drawn, items))
        assert k2.theta[b] == pytest.approx(ref, abs=1e-5)
    # The default weighting differs whenever someone is drawn twice.
    k = bootstrap_log_strengths(c, items, n_boot, seed)
    assert np.abs(k.theta - k2.theta).max() > 1e-3


# The example study with one participant's log removed: the participant bootstrap reached choix
# with a resample (index 639 under the master seed) that is not strongly connected although every
# puzzle wins and loses, and the ranking rule crashed there.
EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example-study"
MASTER_SEED = 20260301


@lru_cache(maxsize=1)
def _example_minus_p4() -> pd.DataFrame:
    att = attempt_features(ingest_study(EXAMPLE, resolve_preset(EXAMPLE)).tables, 3.0)
    # Removing the log file removes exactly this participant's rows (one log per participant).
    return att[att["participant_id"] != "Sim-p4"]


def _closure(adj: np.ndarray) -> np.ndarray:
    """Transitive closure by repeated boolean squaring (independent of scipy's csgraph)."""
    reach = adj | np.eye(len(adj), dtype=bool)
    while True:
        nxt = (reach.astype(int) @ reach.astype(int)) > 0
        if (nxt == reach).all():
            return reach
        reach = nxt


def test_example_minus_one_participant_does_not_crash():
    att = _example_minus_p4()
    items = sorted(att["puzzle_id"].unique(), key=lambda s: (len(s), s))
    c = pairwise_comparisons(att)
    parts = sorted(c["participant_id"].unique())
    per = [_choix_data(c[c["participant_id"] == p], items) for p in parts]
    n_boot = 660
    rng = np.random.default_rng(MASTER_SEED)
    not_connected, old_guard_missed = 0, []
    for b in range(n_boot):
        pairs = np.array([x for j in rng.integers(0, len(parts), len(parts)) for x in per[j]])
        adj = np.zeros((len(items), len(items)), dtype=bool)
        adj[pairs[:, 0], pairs[:, 1]] = True
        if not _closure(adj).all():
            not_connected += 1
            if adj.any(axis=0).all() and adj.any(axis=1).all():
                old_guard_missed.append(b)
    assert old_guard_missed == [639]
    boot = bootstrap_log_strengths(c, items, n_boot, MASTER_SEED)
    assert (boot.n_not_connected, boot.n_not_converged) == (not_connected, 0)
    assert boot.n_used == n_boot - not_connected
    t = strengths_table(c, items, boot)
    assert (t["status"] == "ok").all() and t["ci_low"].notna().all()


def test_no_comparisons_at_all():
    """Nobody rated two puzzles: no participant enters the resamples. Several items are then
    never connected; a single item is its own strongly connected graph, with strength 0."""
    empty = pd.DataFrame(columns=ranking.COMPARISON_COLUMNS)
    for w in ("k", "k2"):
        b = bootstrap_log_strengths(empty, ITEMS, 7, seed=3, weighting=w)
        assert (b.n_used, b.n_not_connected, b.n_not_converged) == (0, 7, 0)
        assert b.theta.shape == (0, 4)
        one = bootstrap_log_strengths(empty, ["a"], 7, seed=3, weighting=w)
        assert (one.n_used, one.n_not_connected) == (7, 0) and (one.theta == 0).all()
