"""Scores and tests of the power analysis that need no simulator (:mod:`nonolab.sim.power`).

Given one replication's design (``queues``: puzzle ids per participant, participants x 3) and
final ratings (same shape, NaN when missing), the puzzles are scored by Bradley-Terry strengths
(:func:`bt_scores`: within-participant pairs, harder wins, ties half) or by mean rating
(:func:`mean_scores`), and :func:`spearman_test` tests Spearman's rho between a score and the
metric. :func:`pearson_for_spearman` converts a target Spearman rho into the bivariate-normal
Pearson r that has it.

Bradley-Terry here uses choix's ILSR with a small ridge (``ridge``) because with many puzzles
and few participants some puzzles never win or never lose, where the ML estimate is unbounded;
the ranking of the other puzzles is barely affected (decisions.md, "Simulation").
"""

from __future__ import annotations

import math

import choix
import numpy as np
from scipy import stats

from nonolab.stats.correlations import spearman_permutation_p

#: puzzle scores the power analysis ranks by: Bradley-Terry strengths, mean final rating
METHODS = ("bt", "mean")


def pearson_for_spearman(rho_s: float) -> float:
    """Return the bivariate-normal Pearson r whose population Spearman rho is ``rho_s``."""
    return 2.0 * math.sin(math.pi * rho_s / 6.0)


def bt_scores(
    queues: np.ndarray, ratings: np.ndarray, n_puzzles: int, ridge: float = 0.01
) -> np.ndarray:
    """Return Bradley-Terry log-strengths (higher = rated harder) from within-participant pairs.

    Each decided pair counts twice and a tie once each way (so a tie is half a win each), as in
    :mod:`nonolab.stats.ranking`; ``ridge`` is choix's regularisation.
    """
    data: list[tuple[int, int]] = []
    for a, b in ((0, 1), (0, 2), (1, 2)):
        ra, rb = ratings[:, a], ratings[:, b]
        ok = ~(np.isnan(ra) | np.isnan(rb))
        qa, qb = queues[ok, a], queues[ok, b]
        ra, rb = ra[ok], rb[ok]
        for w, lo in zip(
            np.where(ra > rb, qa, qb)[ra != rb], np.where(ra > rb, qb, qa)[ra != rb], strict=True
        ):
            data.extend([(int(w), int(lo))] * 2)
        for x, y in zip(qa[ra == rb], qb[ra == rb], strict=True):
            data.extend([(int(x), int(y)), (int(y), int(x))])
    if not data:
        return np.zeros(n_puzzles)
    return np.asarray(choix.ilsr_pairwise(n_puzzles, data, alpha=ridge, max_iter=10_000))


def mean_scores(queues: np.ndarray, ratings: np.ndarray, n_puzzles: int) -> np.ndarray:
    """Return each puzzle's mean rating (NaN for a puzzle with no rating)."""
    ok = ~np.isnan(ratings)
    s = np.bincount(queues[ok], weights=ratings[ok], minlength=n_puzzles)
    n = np.bincount(queues[ok], minlength=n_puzzles)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / n


def spearman_test(metric: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    """Return Spearman's rho and its two-sided p (exact permutation for n <= 8, else t approx).

    Puzzles with a NaN score are dropped; NaN results when fewer than 3 remain or one side is
    constant.
    """
    ok = ~np.isnan(score)
    x, y = metric[ok], score[ok]
    if len(x) < 3 or np.ptp(y) == 0 or np.ptp(x) == 0:
        return float("nan"), float("nan")
    rho = float(stats.spearmanr(x, y).statistic)
    if len(x) <= 8:
        return rho, float(spearman_permutation_p(x, y))
    t = rho * math.sqrt((len(x) - 2) / max(1e-300, 1 - rho * rho))
    return rho, float(2 * stats.t.sf(abs(t), len(x) - 2))
