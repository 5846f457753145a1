"""Power of the study design to detect a puzzle-level correlation between a metric and difficulty.

Design (like the study): every participant rates 3 distinct puzzles (balanced ordered triples,
:func:`nonolab.sim.simulate.ordered_triples`); some final ratings are missing (skipped puzzles).
For a true puzzle-level Spearman correlation ``rho_s`` between a solver metric and latent
perceived difficulty, one replication draws

* the metric ``z_j ~ N(0, 1)`` and latent difficulty ``D_j = sd * (r z_j + sqrt(1 - r^2) e_j)``
  with Pearson ``r = 2 sin(pi rho_s / 6)``, the bivariate-normal correlation whose population
  Spearman correlation is ``rho_s``;
* ratings with the simulator's rating model (:class:`nonolab.sim.simulate.SimParams`): latent
  ``mean + D_j + b_E E_i + v_i + noise``, rounded and clipped to 1-5;

then ranks the puzzles by Bradley-Terry strengths (within-participant pairs, harder wins, ties
half) or by mean rating, and tests Spearman's rho between that ranking and the metric
(two-sided, exact permutation p for at most 8 puzzles, else the t approximation). Power is the
share of replications with ``p < alpha``. No logs are written: ratings are drawn directly.

Bradley-Terry here uses choix's ILSR with a small ridge (``alpha = bt_ridge``) because with many
puzzles and few participants some puzzles never win or never lose, where the ML estimate is
unbounded; the ranking of the other puzzles is barely affected (decisions.md, "Simulation").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import choix
import numpy as np
import pandas as pd
from scipy import stats

from nonolab.sim.simulate import SimParams, ordered_triples

METHODS = ("bt", "mean")
POWER_COLUMNS = [
    "n_puzzles",
    "n_participants",
    "rho_true",
    "method",
    "replications",
    "alpha",
    "power",
    "power_mc_se",
    "mean_rho_hat",
    "sd_rho_hat",
    "seed",
]


@dataclass(frozen=True)
class PowerDesign:
    """One design cell: numbers of puzzles and participants, true Spearman rho."""

    n_puzzles: int
    n_participants: int
    rho_true: float


def pearson_for_spearman(rho_s: float) -> float:
    """Return the bivariate-normal Pearson r whose population Spearman rho is ``rho_s``."""
    return 2.0 * math.sin(math.pi * rho_s / 6.0)


def cell_seed(
    seed: int, n_puzzles: int, n_participants: int, rho_true: float
) -> np.random.SeedSequence:
    """Return the seed sequence of one design cell (independent of the other cells)."""
    return np.random.SeedSequence([seed, n_puzzles, n_participants, int(round(rho_true * 1000))])


def simulate_ratings(
    design: PowerDesign, params: SimParams, rng: np.random.Generator, missing: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(z, queues, ratings)`` of one replication.

    ``z``: metric per puzzle (n_puzzles,); ``queues``: puzzle ids per participant
    (n_participants, 3); ``ratings``: final 1-5 rating per (participant, slot), NaN when missing.
    """
    n_p, n_i = design.n_puzzles, design.n_participants
    r = pearson_for_spearman(design.rho_true)
    z = rng.standard_normal(n_p)
    d = params.difficulty_sd * (r * z + math.sqrt(1 - r * r) * rng.standard_normal(n_p))
    queues = np.array(ordered_triples(n_p, n_i, rng))
    person = params.expertise_effect * rng.standard_normal(n_i) + rng.normal(
        0, params.participant_sd, n_i
    )
    noise_sd = math.sqrt(params.noise_sd**2 + params.final_noise_sd**2)
    y = params.rating_mean + d[queues] + person[:, None] + rng.normal(0, noise_sd, queues.shape)
    ratings = np.clip(np.floor(y + 0.5), 1, 5)
    ratings[rng.random(queues.shape) < missing] = np.nan
    return z, queues, ratings


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
        from nonolab.stats.correlations import spearman_permutation_p

        return rho, float(spearman_permutation_p(x, y))
    t = rho * math.sqrt((len(x) - 2) / max(1e-300, 1 - rho * rho))
    return rho, float(2 * stats.t.sf(abs(t), len(x) - 2))


def power_cell(
    design: PowerDesign,
    replications: int,
    seed: int,
    params: SimParams | None = None,
    alpha: float = 0.05,
    methods: Sequence[str] = METHODS,
    missing: float = 0.1,
    bt_ridge: float = 0.01,
) -> pd.DataFrame:
    """Return power per ranking method for one design cell (one row per method).

    Columns: see :data:`POWER_COLUMNS`; ``power`` is the share of replications with p < alpha
    (a replication whose test is undefined counts as not significant), ``power_mc_se`` its
    Monte Carlo standard error, ``mean_rho_hat``/``sd_rho_hat`` the estimated rho's mean and SD.
    """
    params = params or SimParams()
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"unknown ranking methods {bad}; known: {METHODS}")
    rng = np.random.default_rng(
        cell_seed(seed, design.n_puzzles, design.n_participants, design.rho_true)
    )
    res: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
    for _ in range(replications):
        z, queues, ratings = simulate_ratings(design, params, rng, missing)
        for m in methods:
            if m == "bt":
                score = bt_scores(queues, ratings, design.n_puzzles, bt_ridge)
            else:
                score = mean_scores(queues, ratings, design.n_puzzles)
            res[m].append(spearman_test(z, score))
    rows = []
    for m in methods:
        arr = np.array(res[m], dtype=float).reshape(-1, 2)
        sig = np.nan_to_num(arr[:, 1], nan=1.0) < alpha
        power = float(sig.mean()) if len(sig) else float("nan")
        rows.append(
            {
                "n_puzzles": design.n_puzzles,
                "n_participants": design.n_participants,
                "rho_true": design.rho_true,
                "method": m,
                "replications": replications,
                "alpha": alpha,
                "power": power,
                "power_mc_se": math.sqrt(power * (1 - power) / max(len(sig), 1)),
                "mean_rho_hat": float(np.nanmean(arr[:, 0])) if len(arr) else float("nan"),
                "sd_rho_hat": float(np.nanstd(arr[:, 0])) if len(arr) else float("nan"),
                "seed": seed,
            }
        )
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def power_table(
    n_puzzles: int,
    n_participants: int,
    rhos: Sequence[float],
    replications: int,
    seed: int,
    params: SimParams | None = None,
    alpha: float = 0.05,
    methods: Sequence[str] = METHODS,
    missing: float = 0.1,
) -> pd.DataFrame:
    """Return :func:`power_cell` rows for every ``rho`` of one (puzzles, participants) shard."""
    frames = [
        power_cell(
            PowerDesign(n_puzzles, n_participants, float(r)),
            replications,
            seed,
            params,
            alpha,
            methods,
            missing,
        )
        for r in rhos
    ]
    return pd.concat(frames, ignore_index=True)
