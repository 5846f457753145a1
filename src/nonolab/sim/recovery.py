"""Parameter recovery: run the pipeline's library functions on simulated studies.

* :func:`recover_study`: one written study through the pipeline's steps (ingest, pause
  mixture, Bradley-Terry, crossed mixed model with Satterthwaite df), next to the truth;
* :func:`slope_replications` / :func:`slope_summary`: many studies, the metric slope fitted on
  the true ratings (no logs), for interval coverage and the false-positive rate;
* :func:`recovery_benchmark`: the record of ``results/recovery/recovery.json`` and
  :func:`recovery_criteria_table` its report table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

from nonolab.sim.events import SimStudy, simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.writer import GROUND_TRUTH, write_study
from nonolab.stats import mixed_models
from nonolab.stats.lmm import reml_fit_arrays
from nonolab.stats.pauses import (
    PUBLISHED_EM_TOL,
    em_tolerance,
    largest_mixture_crossing_s,
)
from nonolab.stats.ranking import fit_log_strengths, pairwise_comparisons
from nonolab.study.features import attempt_features, interaction_gaps
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset

SLOPE_COLUMNS = [
    "replication",
    "seed",
    "n_participants",
    "n_puzzles",
    "metric_strength",
    "n_ratings",
    "slope_true",
    "slope_est",
    "slope_se",
    "slope_df",
    "slope_ci_low",
    "slope_ci_high",
    "slope_covered",
    "slope_p",
    "bt_spearman",
    "mean_rating_spearman",
]


def ranking_recovery(
    ratings: pd.DataFrame, truth_puzzles: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """Return Spearman's rho of the Bradley-Terry strengths and of the mean final ratings with
    the true latent difficulty (NaN for BT when its ML estimate is unbounded).

    ``ratings``: ``participant_id``, ``puzzle_hash``, ``final_difficulty`` rows; BT by
    :func:`nonolab.stats.ranking.pairwise_comparisons` and :func:`nonolab.stats.ranking.fit_log_strengths`.
    """
    truth = pd.DataFrame(list(truth_puzzles)).set_index("puzzle_hash")
    items = sorted(truth.index)
    diff = truth.loc[items, "difficulty"].to_numpy()
    means = ratings.groupby("puzzle_hash")["final_difficulty"].mean().reindex(items).to_numpy()
    try:
        comps = pairwise_comparisons(ratings, "final_difficulty", "puzzle_hash")
        bt = float(stats.spearmanr(fit_log_strengths(comps, items), diff).statistic)
    except ValueError:
        bt = float("nan")
    return {
        "bt_spearman": bt,
        "mean_rating_spearman": float(stats.spearmanr(means, diff).statistic),
    }


def _t_interval(est: float, se: float, df: float, truth: float) -> dict[str, Any]:
    """Return the 95% t interval (normal when ``df`` is undefined), coverage and two-sided p."""
    dist = stats.t(df) if np.isfinite(df) and df > 0 else stats.norm()
    crit = float(dist.ppf(0.975))
    lo, hi = est - crit * se, est + crit * se
    return {
        "slope_true": truth,
        "slope_est": est,
        "slope_se": se,
        "slope_df": df,
        "slope_ci_low": lo,
        "slope_ci_high": hi,
        "slope_covered": bool(lo <= truth <= hi),
        "slope_p": float(2 * dist.sf(abs(est / se))),
    }


def recover_study(study_dir: str | Path, truth: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return what the pipeline recovers from a simulated study, next to the truth.

    Runs the library functions of the pipeline's rules with their default settings, in order:
    ``ingest`` (:func:`nonolab.study.ingest.ingest_study`, ``default`` preset); ``pauses``
    (:func:`nonolab.study.features.interaction_gaps`; the threshold
    :func:`nonolab.stats.pauses.fit_pause_model` gives with
    :func:`~nonolab.stats.pauses.em_tolerance` ``auto``, computed by :func:`~nonolab.stats.pauses.largest_mixture_crossing_s`;
    the ``default`` preset fixes no threshold, so :func:`~nonolab.stats.pauses.threshold_used`
    ``auto`` is this fitted one: ``threshold_est_s``, seconds; plus
    ``threshold_published_em_s`` with the published fit's scikit-learn defaults, ``tol`` 1e-3
    and 100 iterations); ``features`` (:func:`nonolab.study.features.attempt_features` at the
    threshold used); ``ranking`` (:func:`ranking_recovery` on the attempts' final ratings:
    ``bt_spearman``, ``mean_rating_spearman``); and the crossed mixed model
    ``final_difficulty ~ metric_z + (1 | participant) + (1 | puzzle)``
    (:func:`nonolab.stats.mixed_models.fit_crossed`, REML) with a 95% t interval on
    Satterthwaite df (:func:`nonolab.stats.mixed_models.satterthwaite_df`). ``metric_z`` is
    the true standardised ``log1p`` metric of each puzzle, joined by ``puzzle_hash``.
    """
    study_dir = Path(study_dir)
    if truth is None:
        truth = json.loads((study_dir / GROUND_TRUTH).read_text(encoding="utf-8"))
    preset = resolve_preset(study_dir, "default")
    published = preset.get("published", {})
    tables = ingest_study(study_dir, preset).tables
    gaps = interaction_gaps(tables["events"])["gap_s"].to_numpy()
    if published.get("pause_threshold_s") is not None:
        raise ValueError("recovery needs the fitted threshold: the preset fixes a published one")
    thr_est = largest_mixture_crossing_s(
        gaps, tol=em_tolerance("auto", published.get("pause_em_tol"))
    )
    attempts = attempt_features(tables, thr_est)
    ratings = attempts[["participant_id", "puzzle_hash", "final_difficulty"]]
    ratings = ratings.dropna(subset=["final_difficulty"])
    true_z = pd.DataFrame(truth["puzzles"])[["puzzle_hash", "metric_z"]]
    data = ratings.merge(true_z, on="puzzle_hash", how="left", validate="many_to_one")
    fit = mixed_models.fit_crossed(data, "final_difficulty ~ metric_z")
    df = float(mixed_models.satterthwaite_df(fit, "metric_z"))
    thr_true = float(truth["pause_threshold_s"])
    thr_pub = largest_mixture_crossing_s(gaps, tol=PUBLISHED_EM_TOL, max_iter=100)
    return {
        "n_gaps": int(len(gaps)),
        "threshold_true_s": thr_true,
        "threshold_est_s": thr_est,
        "threshold_rel_error": float(thr_est / thr_true - 1),
        "threshold_published_em_s": float(thr_pub),
        "threshold_published_em_rel_error": float(thr_pub / thr_true - 1),
        **ranking_recovery(ratings, truth["puzzles"]),
        "n_ratings": int(fit.n),
        **_t_interval(
            float(fit.params["metric_z"]),
            float(fit.bse["metric_z"]),
            df,
            float(truth["slope_final_rating"]),
        ),
    }


def truth_ratings(study: SimStudy) -> pd.DataFrame:
    """Return the final ratings of a simulated study from its truth (no logs, no ingest).

    Columns ``participant_id``, ``puzzle_hash``, ``final_difficulty``, ``metric_z``; the same
    rows as the ingest ``ratings`` table of the written study (``tests/sim/test_recovery.py``).
    """
    puz = {p["puzzle_id"]: p for p in study.truth["puzzles"]}
    rows = [
        {
            "participant_id": part["participant_id"],
            "puzzle_hash": puz[a["puzzle_id"]]["puzzle_hash"],
            "final_difficulty": float(a["final_rating"]),
            "metric_z": puz[a["puzzle_id"]]["metric_z"],
        }
        for part in study.truth["participants"]
        for a in part["attempts"]
        if a["final_rating"] is not None
    ]
    return pd.DataFrame(rows)


def slope_fit(ratings: pd.DataFrame, n_puzzles: int) -> tuple[float, float, float, int]:
    """Return ``(estimate, se, df, n)`` of the metric slope by direct profiled REML.

    Model ``final_difficulty ~ metric_z + (1 | participant_id) + (1 | puzzle_hash)`` fitted with
    :func:`nonolab.stats.lmm.reml_fit_arrays` (the engine of :func:`~nonolab.stats.lmm.
    fit_crossed`, without its formula step); ``df = n_puzzles - 2``, the between-puzzle df of a
    puzzle-level covariate (Satterthwaite's df is close to it here; see tests).
    """
    y = ratings["final_difficulty"].to_numpy(dtype=float)
    X = np.column_stack([np.ones(len(y)), ratings["metric_z"].to_numpy(dtype=float)])
    codes = [pd.factorize(ratings[c], sort=True)[0] for c in ("participant_id", "puzzle_hash")]
    beta, cov, _, _ = reml_fit_arrays(y, X, codes)
    return float(beta[1]), float(math.sqrt(cov[1, 1])), float(n_puzzles - 2), int(len(y))


def replication_seed(seed: int, replication: int) -> int:
    """Return the simulator seed of one replication (from ``SeedSequence([seed, i])``)."""
    return int(np.random.SeedSequence([seed, replication]).generate_state(1)[0])


def slope_replications(
    replications: int, seed: int, params: SimParams | None = None, start: int = 0
) -> pd.DataFrame:
    """Return one :data:`SLOPE_COLUMNS` row per simulated study (replications ``start..``).

    Each replication draws a whole study (:func:`simulate_study`, seed
    :func:`replication_seed`: new puzzles, participants and ratings; without logs, which give
    the same truth) and fits the slope with :func:`slope_fit` on :func:`truth_ratings`; the
    truth is ``slope_final_rating``.
    """
    params = params or SimParams()
    rows = []
    for i in range(start, start + replications):
        s = replication_seed(seed, i)
        study = simulate_study(params, s, logs=False)
        ratings = truth_ratings(study)
        est, se, df, n = slope_fit(ratings, params.n_puzzles)
        rows.append(
            {
                "replication": i,
                "seed": s,
                "n_participants": params.n_participants,
                "n_puzzles": params.n_puzzles,
                "metric_strength": params.metric_strength,
                "n_ratings": n,
                **_t_interval(est, se, df, float(study.truth["slope_final_rating"])),
                **ranking_recovery(ratings, study.truth["puzzles"]),
            }
        )
    return pd.DataFrame(rows, columns=SLOPE_COLUMNS)


def slope_summary(table: pd.DataFrame, alpha: float = 0.05) -> dict[str, Any]:
    """Return coverage of the 95% intervals and the share with ``p < alpha`` (shares in [0, 1]).

    With ``metric_strength`` 0 the rejection share is the false-positive rate; ``*_mc_se`` are
    binomial Monte Carlo standard errors.
    """
    n = len(table)
    cov = float(table["slope_covered"].mean()) if n else float("nan")
    rej = float((table["slope_p"] < alpha).mean()) if n else float("nan")
    return {
        "replications": int(n),
        "slope_true": float(table["slope_true"].iloc[0]) if n else float("nan"),
        "slope_est_mean": float(table["slope_est"].mean()) if n else float("nan"),
        "coverage": cov,
        "coverage_mc_se": math.sqrt(cov * (1 - cov) / max(n, 1)),
        "rejection_rate": rej,
        "rejection_rate_mc_se": math.sqrt(rej * (1 - rej) / max(n, 1)),
        "alpha": alpha,
        "bt_spearman_median": float(table["bt_spearman"].median()) if n else float("nan"),
        "bt_spearman_ge_0_9": float((table["bt_spearman"] >= 0.9).mean()) if n else float("nan"),
        "mean_rating_spearman_ge_0_9": (
            float((table["mean_rating_spearman"] >= 0.9).mean()) if n else float("nan")
        ),
    }


#: replications per task when :func:`recovery_benchmark` runs in several processes
TASK_REPLICATIONS = 2


def _slope_task(task: tuple[int, int, SimParams, int]) -> pd.DataFrame:
    """Return :func:`slope_replications` of ``(replications, seed, params, start)``."""
    count, seed, params, start = task
    return slope_replications(count, seed, params, start)


def _alongside(
    first: Callable[[], Any], tasks: list[tuple[int, int, SimParams, int]], jobs: int
) -> tuple[Any, list[pd.DataFrame]]:
    """Return ``(first(), [_slope_task(t) for t in tasks])``.

    With ``jobs`` > 1, ``jobs - 1`` forked worker processes (:class:`nonolab.core.workers.
    Workers`) take tasks while this process runs ``first`` (which may start processes of its
    own: the ingest's) and then takes tasks too. Every task has its own seeds, so the results
    do not depend on ``jobs``.
    """
    if jobs <= 1 or not tasks:
        return first(), [_slope_task(t) for t in tasks]
    from nonolab.core.workers import Workers

    done: dict[int, pd.DataFrame] = {}
    todo = list(enumerate(tasks))[::-1]  # popped from the end: in order
    with Workers(min(jobs - 1, len(tasks)), _slope_task, start_method="fork") as pool:

        def feed() -> None:
            while (res := pool.next_result(timeout=0)) is not None:
                done[int(res[0])] = res[1]
            while pool.idle and todo:
                pool.submit(*todo.pop())

        feed()
        value = first()
        while todo:
            feed()
            if todo:
                i, task = todo.pop()
                done[i] = _slope_task(task)
        while (res := pool.next_result()) is not None:
            done[int(res[0])] = res[1]
    return value, [done[i] for i in range(len(tasks))]


def recovery_benchmark(
    seed: int,
    workdir: str | Path,
    replications: int = 50,
    n_participants: int = 200,
    n_puzzles: int = 12,
    pipeline_studies: int = 3,
    pipeline_puzzles: int = 6,
    log: Any = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Return the parameter-recovery record (``results/bench/recovery.json``).

    * ``pipeline``: ``pipeline_studies`` simulated studies (``n_participants``,
      ``pipeline_puzzles``) written as logs and analysed by :func:`recover_study` (ingest, pause
      threshold, Bradley-Terry, crossed mixed model with Satterthwaite df);
    * ``slope``: :func:`slope_replications` at the default metric strength (coverage of the true
      slope by the 95% intervals; target >= 0.9);
    * ``null``: the same with metric strength 0 (false-positive rate; target near 0.05).

    ``criteria`` holds the targets and whether they were met. ``log``: optional callable for
    progress messages. ``jobs``: processes to use (the replications run in ``jobs - 1`` worker
    processes beside the pipeline studies); the record does not depend on it, nor on the
    number of BLAS or OpenMP threads (limited to one while it runs).
    """
    say = log or (lambda *_: None)
    base = SimParams(n_participants=n_participants, n_puzzles=n_puzzles)
    tasks = [
        (min(TASK_REPLICATIONS, replications - start), s, params, start)
        for s, params in ((seed, base), (seed + 1, replace(base, metric_strength=0.0)))
        for start in range(0, replications, TASK_REPLICATIONS)
    ]

    def pipeline() -> pd.DataFrame:
        rows = []
        for i in range(pipeline_studies):
            s = replication_seed(seed, 10_000 + i)
            params = SimParams(n_participants=n_participants, n_puzzles=pipeline_puzzles)
            study = simulate_study(params, s)
            out = Path(workdir) / f"pipeline_{i}"
            write_study(study, out)
            rec = {"study": i, "seed": s, **recover_study(out, study.truth)}
            say(f"pipeline study {i}: {rec}")
            rows.append(rec)
        return pd.DataFrame(rows)

    # one BLAS / OpenMP thread: the mixture fits' last digits depend on the thread count
    with threadpool_limits(limits=1):
        pipe, parts = _alongside(pipeline, tasks, jobs)
    half = len(tasks) // 2
    empty = pd.DataFrame(columns=SLOPE_COLUMNS)
    slope = pd.concat(parts[:half], ignore_index=True) if half else empty
    null = pd.concat(parts[half:], ignore_index=True) if half else empty
    say(f"slope replications: {slope_summary(slope)}")
    say(f"null replications: {slope_summary(null)}")
    s_sum, n_sum = slope_summary(slope), slope_summary(null)
    fpr_hi = 0.05 + 2 * math.sqrt(0.05 * 0.95 / max(replications, 1))
    thr_within = (pipe["threshold_rel_error"].abs() <= 0.10).mean() if len(pipe) else float("nan")
    pub_within = (
        (pipe["threshold_published_em_rel_error"].abs() <= 0.10).mean()
        if len(pipe)
        else float("nan")
    )
    criteria = {
        "threshold_within_10pct_share": float(thr_within),
        "threshold_within_10pct_share_published_em_settings": float(pub_within),
        "threshold_met": bool(thr_within == 1.0),
        "bt_spearman_ge_0_9_share_pipeline": float((pipe["bt_spearman"] >= 0.9).mean()),
        "bt_spearman_ge_0_9_share_replications": s_sum["bt_spearman_ge_0_9"],
        "bt_spearman_median_replications": s_sum["bt_spearman_median"],
        "bt_spearman_met": bool(
            (pipe["bt_spearman"] >= 0.9).all() and s_sum["bt_spearman_ge_0_9"] >= 0.9
        ),
        "slope_coverage": s_sum["coverage"],
        "slope_coverage_met": bool(s_sum["coverage"] >= 0.9),
        "false_positive_rate": n_sum["rejection_rate"],
        "false_positive_rate_upper_ok": fpr_hi,
        "false_positive_rate_met": bool(n_sum["rejection_rate"] <= fpr_hi),
    }
    return {
        "seed": seed,
        "design": {
            "n_participants": n_participants,
            "n_puzzles_slope": n_puzzles,
            "n_puzzles_pipeline": pipeline_puzzles,
            "replications": replications,
            "pipeline_studies": pipeline_studies,
            "metric_strength": base.metric_strength,
        },
        "pipeline": pipe.to_dict(orient="records"),
        "slope": {"summary": s_sum, "replications": slope.to_dict(orient="records")},
        "null": {"summary": n_sum, "replications": null.to_dict(orient="records")},
        "criteria": criteria,
    }


def recovery_criteria_table(record: dict[str, Any]) -> pd.DataFrame:
    """Return the recovery targets of :func:`recovery_benchmark`'s ``record`` as a table.

    One row per target: ``target`` (what is recovered), ``criterion`` (the pass rule),
    ``value`` (measured: a share, a rate or a median Spearman rho, unitless), ``met`` (bool),
    and the design and master ``seed`` that produced it (per-replication seeds are in the JSON
    record).
    """
    c = record["criteria"]
    d = record["design"]
    design = (
        f"{d['pipeline_studies']} pipeline studies x {d['n_participants']} participants x "
        f"{d['n_puzzles_pipeline']} puzzles; {d['replications']} replications x "
        f"{d['n_puzzles_slope']} puzzles"
    )
    rows = [
        (
            "pause threshold",
            "share of studies within 10% of the true crossing",
            c["threshold_within_10pct_share"],
            c["threshold_met"],
        ),
        (
            "pause threshold, published EM settings",
            "share within 10% (tol 1e-3, for contrast)",
            c["threshold_within_10pct_share_published_em_settings"],
            None,
        ),
        (
            "difficulty ranking (BT)",
            "share of replications with Spearman >= 0.9",
            c["bt_spearman_ge_0_9_share_replications"],
            c["bt_spearman_met"],
        ),
        (
            "difficulty ranking (BT)",
            "median Spearman over replications",
            c["bt_spearman_median_replications"],
            None,
        ),
        (
            "metric slope",
            "95% CI coverage of the true slope (target >= 0.9)",
            c["slope_coverage"],
            c["slope_coverage_met"],
        ),
        (
            "zero effect",
            "false-positive rate at alpha 0.05 (upper bound "
            f"{c['false_positive_rate_upper_ok']:.3f})",
            c["false_positive_rate"],
            c["false_positive_rate_met"],
        ),
    ]
    out = pd.DataFrame(rows, columns=["target", "criterion", "value", "met"])
    out["met"] = out["met"].map({True: "yes", False: "no", None: ""})
    out["design"] = design
    out["seed"] = int(record["seed"])
    return out
