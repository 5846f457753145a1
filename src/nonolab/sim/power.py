"""Power of the study design to detect a puzzle-level correlation between a metric and difficulty.

Design (like the study): every participant rates ``per_session`` distinct puzzles (3 in the
public study; balanced ordered sets, :func:`nonolab.sim.model.ordered_sets_batch`); some final
ratings are missing (skipped puzzles). For a true puzzle-level Spearman correlation ``rho_s`` between a solver metric and
latent perceived difficulty, one replication draws

* the metric ``z_j ~ N(0, 1)`` and latent difficulty ``D_j = sd * (r z_j + sqrt(1 - r^2) e_j)``
  with Pearson ``r = 2 sin(pi rho_s / 6)`` (:func:`nonolab.stats.power.pearson_for_spearman`),
  the bivariate-normal correlation whose population Spearman correlation is ``rho_s``;
* ratings with the simulator's rating model (:class:`nonolab.sim.model.SimParams`): latent
  ``mean + D_j + b_E E_i + v_i + noise``, rounded and clipped to 1-5;

then ranks the puzzles by Bradley-Terry strengths or by mean rating
(:func:`nonolab.stats.power.bt_scores_batch`, :func:`~nonolab.stats.power.mean_scores_batch`)
and tests Spearman's rho between that ranking and the metric
(:func:`nonolab.stats.power.spearman_tests`: two-sided, exact permutation p for at most 8
puzzles, else the t approximation). Power is the share of replications with ``p < alpha``. No
logs are written: ratings are drawn directly, all replications of a cell as arrays at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nonolab.sim.model import SimParams, ordered_sets_batch
from nonolab.stats.power import (
    METHODS,
    bt_scores_batch,
    mean_scores_batch,
    pearson_for_spearman,
    spearman_tests,
)

POWER_COLUMNS = [
    "n_puzzles",
    "n_participants",
    "per_session",
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
    """One design cell: numbers of puzzles and participants, true Spearman rho, and the puzzles
    each participant rates."""

    n_puzzles: int
    n_participants: int
    rho_true: float
    per_session: int = 3


#: how :func:`cell_seed` derives a cell's seed (for provenance records)
CELL_SEED_RULE = "SeedSequence([seed, n_puzzles, n_participants, round(1000 * rho)])"


def cell_seed(
    seed: int, n_puzzles: int, n_participants: int, rho_true: float
) -> np.random.SeedSequence:
    """Return the seed sequence of one design cell (independent of the other cells)."""
    return np.random.SeedSequence([seed, n_puzzles, n_participants, int(round(rho_true * 1000))])


def simulate_replications(
    design: PowerDesign,
    params: SimParams,
    rng: np.random.Generator,
    replications: int,
    missing: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(z, queues, ratings)`` of ``replications`` independent replications at once.

    ``z``: metric per puzzle (R, n_puzzles); ``queues``: puzzle ids per participant
    (R, n_participants, per_session, :func:`nonolab.sim.model.ordered_sets_batch`); ``ratings``: final
    1-5 rating per (replication, participant, slot), NaN when missing. Draw order: ``z``, the
    puzzle residuals, the schedules, expertise, participant bias, rating noise, missingness,
    each for all replications at once.
    """
    n_r, n_p, n_i = replications, design.n_puzzles, design.n_participants
    r = pearson_for_spearman(design.rho_true)
    z = rng.standard_normal((n_r, n_p))
    d = params.difficulty_sd * (r * z + math.sqrt(1 - r * r) * rng.standard_normal((n_r, n_p)))
    queues = ordered_sets_batch(n_p, n_i, n_r, rng, design.per_session)
    person = params.expertise_effect * rng.standard_normal((n_r, n_i)) + rng.normal(
        0, params.participant_sd, (n_r, n_i)
    )
    noise_sd = math.sqrt(params.noise_sd**2 + params.final_noise_sd**2)
    d_q = np.take_along_axis(d, queues.reshape(n_r, -1), axis=1).reshape(queues.shape)
    y = params.rating_mean + d_q + person[..., None] + rng.normal(0, noise_sd, queues.shape)
    ratings = np.clip(np.floor(y + 0.5), 1, 5)
    ratings[rng.random(queues.shape) < missing] = np.nan
    return z, queues, ratings


def simulate_ratings(
    design: PowerDesign, params: SimParams, rng: np.random.Generator, missing: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(z, queues, ratings)`` of one replication (:func:`simulate_replications` with
    one replication, leading axis dropped): shapes (n_puzzles,), (n_participants, per_session)
    and (n_participants, per_session)."""
    z, queues, ratings = simulate_replications(design, params, rng, 1, missing)
    return z[0], queues[0], ratings[0]


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

    All replications are drawn at once (:func:`simulate_replications`, seed
    :func:`cell_seed`), scored per method and tested (:func:`nonolab.stats.power.spearman_tests`).
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
    z, queues, ratings = simulate_replications(design, params, rng, replications, missing)
    rows = []
    for m in methods:
        if m == "bt":
            score = bt_scores_batch(queues, ratings, design.n_puzzles, bt_ridge)
        else:
            score = mean_scores_batch(queues, ratings, design.n_puzzles)
        rho, p = spearman_tests(z, score)
        sig = np.nan_to_num(p, nan=1.0) < alpha
        power = float(sig.mean()) if len(sig) else float("nan")
        rows.append(
            {
                "n_puzzles": design.n_puzzles,
                "n_participants": design.n_participants,
                "per_session": design.per_session,
                "rho_true": design.rho_true,
                "method": m,
                "replications": replications,
                "alpha": alpha,
                "power": power,
                "power_mc_se": math.sqrt(power * (1 - power) / max(len(sig), 1)),
                "mean_rho_hat": float(np.nanmean(rho)) if len(rho) else float("nan"),
                "sd_rho_hat": float(np.nanstd(rho)) if len(rho) else float("nan"),
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
    per_session: int = 3,
) -> pd.DataFrame:
    """Return :func:`power_cell` rows for every ``rho`` of one (puzzles, participants) shard,
    each participant rating ``per_session`` puzzles."""
    frames = [
        power_cell(
            PowerDesign(n_puzzles, n_participants, float(r), int(per_session)),
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


def power_table_from_settings(settings: dict, n_puzzles: int, n_participants: int) -> pd.DataFrame:
    """Return :func:`power_table` of one (puzzles, participants) cell with the workflow's
    ``simulate.power`` settings (``rho``, ``replications``, ``seed``, ``alpha``, ``methods``,
    ``missing``, ``per_session``; the last two default to 0.1 and 3)."""
    return power_table(
        int(n_puzzles),
        int(n_participants),
        settings["rho"],
        int(settings["replications"]),
        int(settings["seed"]),
        alpha=float(settings["alpha"]),
        methods=settings["methods"],
        missing=float(settings.get("missing", 0.1)),
        per_session=int(settings.get("per_session") or 3),
    )
