"""Scores and tests of the power analysis that need no simulator (:mod:`nonolab.sim.power`).

Given replications of one design (``queues``: puzzle ids per participant, replications x
participants x 3) and their final ratings (same shape, NaN when missing), the puzzles are
scored by Bradley-Terry strengths (:func:`bt_scores_batch`: within-participant pairs, harder
wins, ties half) or by mean rating (:func:`mean_scores_batch`), and :func:`spearman_tests`
tests Spearman's rho between each replication's scores and its metric. The single-replication
forms (:func:`bt_scores`, :func:`mean_scores`, :func:`spearman_test`) take 2-D ``queues`` and
1-D vectors. :func:`pearson_for_spearman` converts a target Spearman rho into the
bivariate-normal Pearson r that has it.

Bradley-Terry is choix's regularised ILSR estimate (``ridge`` = choix's ``alpha``) because with
many puzzles and few participants some puzzles never win or never lose, where the ML estimate is
unbounded; the ranking of the other puzzles is barely affected (decisions.md, "Simulation").
:func:`regularised_bt` computes the point ILSR converges to for all replications at once
(Newton's method on the concave objective whose maximum it is); tests compare it with
``choix.ilsr_pairwise``.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import special

#: puzzle scores the power analysis ranks by: Bradley-Terry strengths, mean final rating
METHODS = ("bt", "mean")


def _slot_pairs(n_slots: int) -> tuple[tuple[int, int], ...]:
    """Return every pair of slots ``(a, b)``, ``a < b``, of a session with ``n_slots`` ratings."""
    return tuple(itertools.combinations(range(n_slots), 2))


def pearson_for_spearman(rho_s: float) -> float:
    """Return the bivariate-normal Pearson r whose population Spearman rho is ``rho_s``."""
    return 2.0 * math.sin(math.pi * rho_s / 6.0)


def bt_win_counts(queues: np.ndarray, ratings: np.ndarray, n_puzzles: int) -> np.ndarray:
    """Return the Bradley-Terry win counts of each replication, shape (R, n_puzzles, n_puzzles).

    ``[r, i, j]`` counts how often puzzle ``i`` was rated harder than ``j`` by one participant
    of replication ``r``: a decided pair counts 2, a tie 1 each way (a tie is half a win each),
    as in :mod:`nonolab.stats.ranking`. ``queues`` and ``ratings``: (R, participants, M) with
    M puzzles per session (every pair of a session's ratings is compared).
    """
    n_rep = queues.shape[0]
    rep = np.broadcast_to(np.arange(n_rep)[:, None], queues.shape[:2])
    idx, wts = [], []
    for a, b in _slot_pairs(queues.shape[-1]):
        ra, rb = ratings[..., a], ratings[..., b]
        ok = ~(np.isnan(ra) | np.isnan(rb))
        r, qa, qb, ra, rb = rep[ok], queues[..., a][ok], queues[..., b][ok], ra[ok], rb[ok]
        tie = ra == rb
        win = np.where(ra > rb, qa, qb)
        lose = np.where(ra > rb, qb, qa)
        base = r * n_puzzles * n_puzzles
        idx += [base + win * n_puzzles + lose, base + lose * n_puzzles + win]
        wts += [np.where(tie, 1.0, 2.0), tie.astype(float)]
    flat = np.bincount(
        np.concatenate(idx), np.concatenate(wts), minlength=n_rep * n_puzzles * n_puzzles
    )
    return flat.reshape(n_rep, n_puzzles, n_puzzles)


def regularised_bt(
    wins: np.ndarray, alpha: float = 0.01, tol: float = 1e-12, max_iter: int = 200
) -> np.ndarray:
    """Return the centred Bradley-Terry log-strengths that ``choix.ilsr_pairwise`` with
    regularisation ``alpha`` converges to, for every replication of ``wins`` at once.

    ``wins``: (R, n, n) win counts (:func:`bt_win_counts`). ILSR's fixed point ``pi`` (scaled to
    sum ``n``) solves ``sum_j (w_ij pi_j - w_ji pi_i) / (pi_i + pi_j) = alpha (n pi_i - n)``:
    the stationary point of the strictly concave ``log-likelihood(theta) - alpha n sum_i
    (exp(theta_i) - theta_i)`` in ``theta = log pi`` (its gradient summed over ``i`` forces
    ``sum pi = n``). Newton's method with step halving finds it; iteration stops when no step
    is larger than ``tol``. Returns (R, n), each row centred to mean 0 like choix's. Raises
    ``RuntimeError`` when ``max_iter`` steps do not converge.
    """
    w = np.asarray(wins, dtype=float)
    n_rep, n, _ = w.shape
    n_pairs = w + np.swapaxes(w, 1, 2)
    theta = np.zeros((n_rep, n))
    pen = alpha * n

    def objective(th: np.ndarray, wins: np.ndarray) -> np.ndarray:
        diff = th[:, None, :] - th[:, :, None]  # [r, i, j] = theta_j - theta_i
        ll = -(wins * np.logaddexp(0.0, diff)).sum(axis=(1, 2))
        return ll - pen * (np.exp(th) - th).sum(axis=1)

    value = objective(theta, w)
    active = np.ones(n_rep, dtype=bool)
    for _ in range(max_iter):
        th = theta[active]
        p = special.expit(th[:, :, None] - th[:, None, :])  # P(i beats j)
        wa, na = w[active], n_pairs[active]
        grad = (wa - na * p).sum(axis=2) - pen * (np.exp(th) - 1.0)
        hess = na * p * (1.0 - p)
        hess[:, np.arange(n), np.arange(n)] = -hess.sum(axis=2) - pen * np.exp(th)
        step = -np.linalg.solve(hess, grad[..., None])[..., 0]
        val_a = value[active]
        scale = np.ones(len(th))
        new = th + step
        new_val = objective(new, wa)
        for _ in range(60):  # halve steps that do not increase the objective
            worse = new_val < val_a - 1e-12 * np.abs(val_a)
            if not worse.any():
                break
            scale[worse] /= 2
            new[worse] = th[worse] + scale[worse, None] * step[worse]
            new_val[worse] = objective(new[worse], wa[worse])
        theta[active], value[active] = new, new_val
        done = np.abs(scale[:, None] * step).max(axis=1) <= tol
        active[np.flatnonzero(active)[done]] = False
        if not active.any():
            return theta - theta.mean(axis=1, keepdims=True)
    raise RuntimeError(f"Bradley-Terry Newton iteration did not converge in {max_iter} steps")


def bt_scores_batch(
    queues: np.ndarray, ratings: np.ndarray, n_puzzles: int, ridge: float = 0.01
) -> np.ndarray:
    """Return Bradley-Terry log-strengths (higher = rated harder) per replication, (R, n_puzzles).

    From within-participant pairs (:func:`bt_win_counts`), regularised by ``ridge`` as choix's
    ``ilsr_pairwise(..., alpha=ridge)`` (:func:`regularised_bt`); a replication without any
    comparison scores all zeros.
    """
    return regularised_bt(bt_win_counts(queues, ratings, n_puzzles), ridge)


def bt_scores(
    queues: np.ndarray, ratings: np.ndarray, n_puzzles: int, ridge: float = 0.01
) -> np.ndarray:
    """Return :func:`bt_scores_batch` of one replication (``queues``, ``ratings``: participants
    x 3), shape (n_puzzles,)."""
    return bt_scores_batch(queues[None], ratings[None], n_puzzles, ridge)[0]


def mean_scores_batch(queues: np.ndarray, ratings: np.ndarray, n_puzzles: int) -> np.ndarray:
    """Return each puzzle's mean rating per replication, (R, n_puzzles); NaN when unrated."""
    n_rep = queues.shape[0]
    ok = ~np.isnan(ratings)
    flat = (np.arange(n_rep)[:, None, None] * n_puzzles + queues)[ok]
    size = n_rep * n_puzzles
    s = np.bincount(flat, weights=ratings[ok], minlength=size)
    n = np.bincount(flat, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (s / n).reshape(n_rep, n_puzzles)


def mean_scores(queues: np.ndarray, ratings: np.ndarray, n_puzzles: int) -> np.ndarray:
    """Return each puzzle's mean rating of one replication (NaN for a puzzle with no rating)."""
    return mean_scores_batch(queues[None], ratings[None], n_puzzles)[0]


def spearman_test(metric: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    """Return Spearman's rho and its two-sided p (exact permutation for n <= 8, else t approx).

    Puzzles with a NaN score are dropped; NaN results when fewer than 3 remain or one side is
    constant. The exact p is the share of all ``n!`` pairings with ``|rho| >= |rho_obs|``
    (as :func:`nonolab.stats.correlations.spearman_permutation_p`). One row of
    :func:`spearman_tests`.
    """
    rho, p = spearman_tests(np.asarray(metric)[None], np.asarray(score)[None])
    return float(rho[0]), float(p[0])


def spearman_tests(
    metric: np.ndarray, score: np.ndarray, exact_max_n: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Return Spearman's rho and its two-sided p for every row of ``metric`` and ``score`` (R, n).

    Per row, puzzles with a NaN score are dropped; rho is the Pearson correlation of the
    average ranks (NaN when fewer than 3 puzzles remain or one side is constant). For at most
    ``exact_max_n`` puzzles p is exact: the share of all ``n!`` pairings of the centred ranks
    ``2 r - n - 1`` whose ``|sum cx cy|`` (an integer that orders pairings as ``|rho|`` does)
    reaches the observed one, as :func:`nonolab.stats.correlations.spearman_permutation_p`;
    the pairings are enumerated once per ``n``. Otherwise p is the two-sided t approximation
    on ``n - 2`` df (as ``scipy.stats.spearmanr``).
    """
    x = np.atleast_2d(np.asarray(metric, dtype=float))
    y = np.atleast_2d(np.asarray(score, dtype=float))
    rho = np.full(len(x), np.nan)
    p = np.full(len(x), np.nan)
    whole = ~np.isnan(y).any(axis=1)
    if whole.any():
        rho[whole], p[whole] = _rank_tests(x[whole], y[whole], exact_max_n)
    for i in np.flatnonzero(~whole):
        ok = ~np.isnan(y[i])
        r, q = _rank_tests(x[i, ok][None], y[i, ok][None], exact_max_n)
        rho[i], p[i] = r[0], q[0]
    return rho, p


def _centred_ranks(a: np.ndarray) -> np.ndarray:
    """Return ``2 r - n - 1`` of the average ranks ``r`` of each row (integers as floats)."""
    n = a.shape[1]
    return 2 * pd.DataFrame(a).rank(axis=1, method="average").to_numpy() - n - 1


@lru_cache(maxsize=8)
def _index_permutations(n: int) -> np.ndarray:
    """Return every ordering of ``0..n-1``, (n!, n)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.intp)


def _rank_tests(x: np.ndarray, y: np.ndarray, exact_max_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`spearman_tests` of rows without NaN."""
    n_rep, n = x.shape
    rho = np.full(n_rep, np.nan)
    p = np.full(n_rep, np.nan)
    if n < 3:
        return rho, p
    cx, cy = _centred_ranks(x), _centred_ranks(y)
    ok = (np.ptp(cx, axis=1) > 0) & (np.ptp(cy, axis=1) > 0)
    if not ok.any():
        return rho, p
    cx, cy = cx[ok], cy[ok]
    dot = (cx * cy).sum(axis=1)
    r = np.clip(dot / np.sqrt((cx * cx).sum(axis=1) * (cy * cy).sum(axis=1)), -1.0, 1.0)
    rho[ok] = r
    if n > exact_max_n:
        t = r * np.sqrt((n - 2) / np.maximum(1e-300, 1 - r * r))
        p[ok] = 2 * special.stdtr(n - 2, -np.abs(t))  # t survival function at |t|
        return rho, p
    # exact: the pairings of cy with cx are the orderings of cx against cy; untied metric
    # ranks are an ordering of the same centred ranks in every row, so one table serves all
    perms = _index_permutations(n)
    base = 2.0 * np.arange(1, n + 1) - n - 1
    untied = (np.sort(cx, axis=1) == base).all(axis=1)
    hits = np.empty(len(cx))
    table = base[perms]
    chunk = max(1, 2**20 // len(perms))
    idx = np.flatnonzero(untied)
    for lo in range(0, len(idx), chunk):
        rows = idx[lo : lo + chunk]
        null = np.abs(table @ cy[rows].T)  # integers, exact in floats
        hits[rows] = (null >= np.abs(dot[rows]) - 0.5).sum(axis=0)
    for i in np.flatnonzero(~untied):
        null = np.abs(cx[i][perms] @ cy[i])
        hits[i] = (null >= abs(dot[i]) - 0.5).sum()
    p[ok] = hits / len(perms)
    return rho, p
