"""Power engine: batched tests equal one-at-a-time fits; nominal size under the null."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from nonolab.design.power import (
    BehaviourModel,
    Design,
    RatingModel,
    _lmm_chunk,
    lmm_power,
    lmm_tests,
    maximal_power,
    spearman_power,
)
from nonolab.design.schedule import balanced_schedule
from nonolab.stats.lmm import fit_crossed, satterthwaite_df


def _design(k: int, n: int, seed: int = 0, missing: float = 0.1) -> Design:
    rng = np.random.default_rng(seed)
    metric = np.round(np.exp(rng.normal(2, 1, k)))
    while len(set(metric)) < k:
        metric = np.round(np.exp(rng.normal(2, 1, k)))
    return Design(balanced_schedule(k, 3, n, seed).sessions, metric, missing)


@pytest.mark.parametrize("analysis", ["rating_lmm", "moderation_lmm", "behaviour_lmm"])
def test_batched_tests_equal_one_fit_at_a_time(analysis: str) -> None:
    """Each replication (its own expertise and missing ratings) tested in the batch as one
    fit of its own rows gives (fit_crossed + satterthwaite_df)."""
    d = _design(10, 24, 1)
    rng = np.random.default_rng(3)
    Y, X, codes, col, rel, keep = _lmm_chunk(
        analysis, d, RatingModel(scale="gaussian"), BehaviourModel(), 6, rng
    )
    r = lmm_tests(Y, X, codes, col, start=rel, keep=keep)
    assert not r.failed.any()
    names = ["Intercept", "x", "e", "x:e"][: X.shape[-1]]
    Xb = np.broadcast_to(X, (len(Y), *X.shape[-2:]))
    kp = np.ones(Y.shape, dtype=bool) if keep is None else keep
    if analysis != "behaviour_lmm":  # replications differ in their rows and expertise
        assert not (kp == kp[0]).all()
        if analysis == "moderation_lmm":
            assert not np.allclose(Xb[0, :, 2], Xb[1, :, 2])
    for b in range(len(Y)):
        rows = kp[b]
        data = pd.DataFrame(Xb[b][rows][:, 1:], columns=names[1:]).assign(
            y=Y[b][rows],
            participant_id=codes[0][rows].astype(str),
            puzzle_hash=codes[1][rows].astype(str),
        )
        rhs = " + ".join(names[1:]).replace("x + e + x:e", "x * e")
        fit = fit_crossed(data, f"y ~ {rhs}")
        term = names[col]
        assert r.estimate[b] == pytest.approx(fit.params[term], rel=1e-6, abs=1e-8)
        df = satterthwaite_df(fit, term)
        if np.isfinite(df):
            from scipy import stats

            t = fit.params[term] / fit.bse[term]
            assert r.p[b] == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-5, abs=1e-8)
        else:
            assert np.isnan(r.p[b]) and r.boundary[b]


def _within(power: float, target: float, n: int, z: float = 3.3) -> bool:
    return abs(power - target) <= z * math.sqrt(target * (1 - target) / n)


def test_spearman_size_under_the_null() -> None:
    r = spearman_power(_design(12, 60), 0.0, 3000, 11)
    assert r.failed < 0.05 * r.replications
    assert _within(r.power, 0.05, r.replications)


@pytest.mark.parametrize("scale", ["gaussian", "rating"])
def test_moderation_size_under_the_null(scale: str) -> None:
    r = lmm_power(
        "moderation_lmm", _design(12, 60), 800, 5, RatingModel(interaction=0.0, scale=scale)
    )
    assert _within(r.power, 0.05, r.replications)


def test_power_grows_with_participants_and_effect() -> None:
    small = spearman_power(_design(16, 20), 0.6, 1500, 2).power
    large = spearman_power(_design(16, 80), 0.6, 1500, 2).power
    weak = spearman_power(_design(16, 80), 0.3, 1500, 2).power
    assert small < large and weak < large


def test_pool_scale_rewards_spread() -> None:
    """Latent difficulty on the pool's scale: puzzles spread over the pool give more power
    than puzzles bunched in its middle (same ranks among themselves)."""
    d = _design(12, 48)
    spread = np.linspace(-2, 2, 12)
    bunched = np.linspace(-0.3, 0.3, 12)
    order = np.argsort(np.argsort(d.metric))
    wide = Design(d.queues, d.metric, d.missing, spread[order], spread[order])
    narrow = Design(d.queues, d.metric, d.missing, bunched[order], bunched[order])
    assert (
        spearman_power(wide, 0.6, 1500, 4).power > spearman_power(narrow, 0.6, 1500, 4).power + 0.1
    )


def test_maximal_runs_and_reports() -> None:
    r = maximal_power(_design(8, 30), 6, 1, RatingModel(interaction=0.0))
    assert r.replications == 6 and 0 <= r.rejections + r.failed <= 6
    lo, hi = r.interval()
    assert 0 <= lo <= r.power <= hi <= 1


@pytest.mark.parametrize("k", [6, 12, 24])
def test_expected_sample_rho_is_the_spearman_over_the_chosen_puzzles(k: int) -> None:
    """The estimand over the chosen puzzles, against scipy's spearmanr of latent difficulty
    drawn here by the model's formula; puzzles at the extremes of the pool give a larger
    expected sample rho than the pool's, puzzles spread like the pool about the pool's."""
    from scipy import stats as st_

    from nonolab.design.power import expected_sample_rho
    from nonolab.stats.power import pearson_for_spearman

    rng = np.random.default_rng(k)
    metric = np.sort(rng.integers(0, 50, k)).astype(float)
    ends = np.where(np.arange(k) < k // 2, -1.8, 1.8)
    d = Design(balanced_schedule(k, 3, k, 0).sessions, metric, 0.1, ends, ends)
    mean, sd = expected_sample_rho(d, 0.6, draws=4000, seed=1)
    r = pearson_for_spearman(0.6)
    ref = [
        st_.spearmanr(r * ends + math.sqrt(1 - r * r) * rng.standard_normal(k), metric)[0]
        for _ in range(800)
    ]
    assert abs(mean - np.nanmean(ref)) < 4 * sd * math.sqrt(1 / 4000 + 1 / 800)
    assert mean > 0.6
    spread = Design(d.queues, np.arange(k, dtype=float), 0.1)  # normal scores of the ranks
    m2, _ = expected_sample_rho(spread, 0.6, draws=4000, seed=1)
    assert m2 < mean and abs(m2 - 0.6) < 0.1


def test_maximal_replications_are_independent_and_fitted_as_fit_general() -> None:
    """Each maximal-structure replication has its own expertise and missing ratings (its own
    rows), and the power's warm-started fit of a replication gives the estimate and
    Satterthwaite p of fit_general on that replication's data."""
    from nonolab.design.power import _maximal_draw
    from nonolab.stats.lmm_general import RandomTerm, fit_general

    d = _design(8, 24, 2, 0.15)
    model = RatingModel(interaction=0.2)
    rng = np.random.default_rng(0)
    draws = [_maximal_draw(d, model, rng) for _ in range(3)]
    assert len({len(y) for y, *_ in draws}) > 1 or not np.allclose(draws[0][1], draws[1][1])
    assert not np.allclose(draws[0][1][:5, 2], draws[1][1][:5, 2])  # expertise redrawn
    # the power's own fits of its first two replications, against fit_general
    seed = 3
    r = maximal_power(d, 2, seed, model)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 24, 8, 9]))
    est = []
    for _ in range(2):
        y, X, pc, qc = _maximal_draw(d, model, rng)
        data = pd.DataFrame(
            {"y": y, "metric": X[:, 1], "expertise": X[:, 2],
             "participant_id": pc.astype(str), "puzzle_hash": qc.astype(str)}
        )  # fmt: skip
        f = fit_general(
            data,
            "y ~ metric * expertise",
            (RandomTerm("participant_id", ("1", "metric")), RandomTerm("puzzle_hash")),
        )
        est.append(f.params["metric:expertise"])
    assert r.extra["mean_estimate"] == pytest.approx(np.mean(est), abs=1e-5)
