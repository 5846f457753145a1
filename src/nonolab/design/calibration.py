"""Calibration of the predicted power against the full pipeline on simulated studies.

For one design (K puzzles, N participants, metric strength ``s``), :func:`calibrate` simulates
``studies`` whole studies with the simulator (:func:`nonolab.sim.events.simulate_study`: new
puzzles with their MiniSat22 metrics, the simulator's schedule, participants, attempts with
skips, ratings), and on each runs the pipeline's own analysis functions on the study's final
ratings (:func:`nonolab.sim.recovery.truth_ratings`, the rows the ingest's ratings table has;
``tests/sim/test_recovery.py`` checks that):

* ``spearman_bt``: Bradley-Terry strengths of the within-participant comparisons
  (:func:`nonolab.stats.ranking.pairwise_comparisons`, :func:`~nonolab.stats.ranking.
  fit_log_strengths`, as the ranking stage) against the metric, Spearman test
  (:func:`nonolab.stats.correlations.spearman_permutation_p` for K <= 8 as Table 1, else
  scipy's t approximation);
* ``rating_lmm``: ``final_difficulty ~ metric + (1|participant) + (1|puzzle)`` with
  Satterthwaite p (:func:`nonolab.stats.mixed_models.behaviour_models`, the models stage);
* ``moderation_lmm``: ``final_difficulty ~ metric * expertise`` (the simulator has no
  interaction, so this is the false-positive rate; :func:`nonolab.stats.mixed_models.
  moderation_models` with the participants' latent expertise as the moderator, standardised).

The predicted power comes from :mod:`nonolab.design.power` on the same designs: each study's
own schedule, metric values, realised missing-rating share and metric scores (``z`` =
standardised log1p metric, on which the simulator's latent difficulty depends), with
``replications_per_study`` replications each. The two rejection rates are compared with their
Monte-Carlo errors (:func:`agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from nonolab.design.power import Design, RatingModel, lmm_power, spearman_power
from nonolab.sim.events import simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.recovery import replication_seed, truth_ratings
from nonolab.stats.correlations import spearman_permutation_p
from nonolab.stats.mixed_models import behaviour_models, metric_covariates, moderation_models
from nonolab.stats.ranking import (
    NotStronglyConnectedError,
    fit_log_strengths,
    pairwise_comparisons,
)

CALIBRATED = ("spearman_bt", "rating_lmm", "moderation_lmm")


def rating_model(params: SimParams) -> RatingModel:
    """Return the power engine's rating model of the simulator's ``params`` (no interaction)."""
    return RatingModel(
        rating_mean=params.rating_mean,
        difficulty_sd=params.difficulty_sd,
        metric_strength=params.metric_strength,
        expertise_effect=params.expertise_effect,
        participant_sd=params.participant_sd,
        noise_sd=params.noise_sd,
        final_noise_sd=params.final_noise_sd,
        interaction=0.0,
        scale="rating",
    )


def _pipeline_tests(study: Any, metric: str, alpha: float) -> dict[str, bool]:
    """Return whether each calibrated analysis rejects on one simulated study."""
    ratings = truth_ratings(study)
    puz = pd.DataFrame(study.truth["puzzles"])
    ratings = ratings.merge(
        puz[["puzzle_hash", metric]], on="puzzle_hash", how="left", validate="many_to_one"
    )
    items = list(puz["puzzle_hash"])
    comp = pairwise_comparisons(ratings, item_col="puzzle_hash")
    x = puz[metric].to_numpy(dtype=float)
    try:
        theta = fit_log_strengths(comp, items)
    except NotStronglyConnectedError:  # the ranking stage has no estimate: not rejected
        theta = None
    if theta is None:
        p_s = float("nan")
    elif len(items) <= 8:
        p_s = spearman_permutation_p(theta, x)
    else:
        from scipy import stats

        p_s = float(stats.spearmanr(theta, x).pvalue)
    cov = metric_covariates(puz[["puzzle_hash", metric]], [metric])
    beh = behaviour_models(
        ratings.drop(columns=[metric]),
        cov,
        behaviours={"final_difficulty": "rating"},
        metrics=[metric],
    )
    expertise = {p["participant_id"]: p["expertise"] for p in study.truth["participants"]}
    e = ratings["participant_id"].map(expertise).astype(float)
    per = e.groupby(ratings["participant_id"]).first()
    ratings = ratings.assign(expertise=(e - per.mean()) / per.std(ddof=0))
    mod, _ = moderation_models(
        ratings.drop(columns=[metric]), cov, moderator="expertise", metrics=[metric]
    )
    p_mod = mod.loc[mod["term"] == f"{metric}:expertise", "p_satt"].iloc[0]
    return {
        "spearman_bt": bool(np.isfinite(p_s) and p_s < alpha),
        "rating_lmm": bool(np.nan_to_num(beh["p_satt"].iloc[0], nan=1.0) < alpha),
        "moderation_lmm": bool(np.nan_to_num(p_mod, nan=1.0) < alpha),
    }


def calibrate(
    n_puzzles: int,
    n_participants: int,
    metric_strength: float,
    studies: int,
    seed: int,
    replications_per_study: int = 10,
    alpha: float = 0.05,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Return, per calibrated analysis, the pipeline's rejection rate over ``studies``
    simulated studies and the power predicted for the same designs (module text), with their
    Monte-Carlo standard errors and the standardised difference ``z``.

    Studies use seeds :func:`nonolab.sim.recovery.replication_seed` ``(seed, i)``."""
    params = replace(
        SimParams(), n_puzzles=n_puzzles, n_participants=n_participants,
        metric_strength=metric_strength,
    )  # fmt: skip
    model = rating_model(params)
    rho = 6 / math.pi * math.asin(metric_strength / 2)  # Spearman of Pearson r = s
    obs = {a: 0 for a in CALIBRATED}
    pred = {a: 0 for a in CALIBRATED}
    n_pred = {a: 0 for a in CALIBRATED}
    for i in range(studies):
        study = simulate_study(params, replication_seed(seed, i), logs=False)
        for a, rej in _pipeline_tests(study, params.metric, alpha).items():
            obs[a] += rej
        puz = study.truth["puzzles"]
        z = np.array([p["metric_z"] for p in puz])
        vals = np.array([p[params.metric] for p in puz], dtype=float)
        att = [a for part in study.truth["participants"] for a in part["attempts"]]
        miss = float(np.mean([a["final_rating"] is None for a in att]))
        design = Design(np.asarray(study.schedule), vals, miss, pool_scores=z, pool_z=z)
        r = replications_per_study
        results = [
            spearman_power(design, rho, r, seed + i, model, alpha),
            lmm_power("rating_lmm", design, r, seed + i, model, alpha=alpha, chunk=r),
            lmm_power("moderation_lmm", design, r, seed + i, model, alpha=alpha, chunk=r),
        ]
        for res in results:
            pred[res.analysis] += res.rejections
            n_pred[res.analysis] += res.replications
        if progress is not None:
            progress(i + 1, studies)
    rows = []
    for a in CALIBRATED:
        po, pp = obs[a] / studies, pred[a] / n_pred[a]
        se_o = math.sqrt(po * (1 - po) / studies)
        # predicted power averages over the same studies' designs: its MC error has a
        # between-design part; bound it by the binomial error of studies-many draws
        se_p = math.sqrt(pp * (1 - pp) / n_pred[a])
        se = math.hypot(se_o, se_p)
        rows.append(
            {
                "analysis": a,
                "n_puzzles": n_puzzles,
                "n_participants": n_participants,
                "metric_strength": metric_strength,
                "studies": studies,
                "pipeline_rejection_rate": po,
                "pipeline_mc_se": se_o,
                "predicted_power": pp,
                "predicted_mc_se": se_p,
                "predicted_replications": n_pred[a],
                "z": (po - pp) / se if se > 0 else 0.0,
                "alpha": alpha,
                "seed": seed,
            }
        )
    return pd.DataFrame(rows)


def agreement(table: pd.DataFrame, z_max: float = 3.0) -> bool:
    """Return whether every row's pipeline rate and prediction differ by at most ``z_max``
    combined Monte-Carlo standard errors."""
    return bool((table["z"].abs() <= z_max).all())
