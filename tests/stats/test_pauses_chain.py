"""The pause model never stops a valid study: generated gap samples (participant counts, clock
resolutions, spikes, tiny and degenerate studies) always end in a threshold with its provenance
and sentences (nonolab.stats.pauses.pause_threshold, the threshold chain); the clock
resolution is detected and modelled, mass points flagged with the threshold with and without
them; the Python API and the command-line config use the config's names and types."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import nonolab
from nonolab.stats import pauses
from nonolab.stats.pauses import (
    CHAIN_RULE,
    MASS_MIN_COUNT,
    clock_resolution,
    crossing_interval,
    dequantise,
    mass_points,
    pause_threshold,
)

FAST = {"threshold": "fitted", "n_init": 1, "converged": {"random_state_checks": 0}}
STEPS = {"mixture", "spike refit", "fewer components", "fixed"}


def study_gaps(rng: np.random.Generator, participants: int, per_participant: int) -> np.ndarray:
    """Gaps (s) of a generated study: per participant, fast drags, within-move gaps and pauses
    with participant-specific speeds (a random-intercept log-normal mixture)."""
    out = []
    for _ in range(participants):
        speed = rng.normal(0, 0.3)
        comp = rng.choice(3, size=per_participant, p=[0.05, 0.6, 0.35])
        mu = np.array([np.log(0.012), np.log(0.8), np.log(5.0)]) + speed
        out.append(np.exp(rng.normal(mu[comp], np.array([0.8, 0.55, 0.6])[comp])))
    return np.concatenate(out) if out else np.array([])


def generated_case(seed: int) -> tuple[np.ndarray, dict]:
    """One generated study's gaps and how they were made (participants, clock step, spikes)."""
    rng = np.random.default_rng(seed)
    participants = int(rng.choice([0, 1, 2, 3, 5, 13, 40]))
    per = int(rng.choice([1, 4, 10, 60]))
    g = study_gaps(rng, participants, per)
    step = rng.choice([0.0, 0.001, 0.01, 0.1, 0.5, 1.0])
    if step:
        g = np.round(g / step) * step
    spikes = []
    for _ in range(int(rng.choice([0, 0, 1, 2]))):
        v = float(np.round(rng.choice([0.3, 1.0, 2.0, 3.0, 7.5]) / (step or 1e-3)) * (step or 1e-3))
        n = int(rng.integers(5, max(6, len(g) // 4 + 6)))
        g = np.concatenate([g, np.full(n, v)])
        spikes.append((v, n))
    if rng.random() < 0.15:  # a degenerate study: one repeated value, or zeros only
        g = np.full(int(rng.integers(0, 80)), float(rng.choice([0.0, 1.0, 0.25])))
    return rng.permutation(g), {"participants": participants, "step": step, "spikes": spikes}


def check_record(rec: dict, gaps: np.ndarray) -> None:
    """What every record of a valid study holds: a finite positive threshold, the step of the
    chain that gave it, sentences without undefined numbers, JSON without NaN in its prose."""
    used = rec["threshold_used_s"]
    assert math.isfinite(used) and used > 0
    prov = rec["threshold_provenance"]
    assert prov["step"] in STEPS and prov["chain"] == CHAIN_RULE
    assert prov["steps"][-1]["ok"] and prov["steps"][-1]["step"] == prov["step"]
    assert all(not s["ok"] and s["why"] for s in prov["steps"][:-1])
    assert rec["threshold_fitted_s"] == pytest.approx(prov["steps"][-1]["threshold_s"])
    assert rec["threshold_sentences"] and rec["threshold_sentence"]
    for s in rec["threshold_sentences"]:
        assert not any(w in s.lower().split() for w in ("nan", "none", "inf")), s
    assert rec["n_gaps"] == len(gaps)
    json.dumps(rec, default=float)  # serialisable


@pytest.mark.parametrize("seed", range(24))
def test_generated_studies_always_end_in_a_threshold(seed):
    import matplotlib.pyplot as plt

    from nonolab.report.figures.pauses import plot_gap_distribution

    gaps, how = generated_case(seed)
    rec = pause_threshold(gaps, **FAST)
    check_record(rec, gaps)
    plt.close(plot_gap_distribution(gaps, rec))  # the figure of every record draws
    n_pos = int((gaps > 0).sum())
    if len(gaps) < 2 * pauses.MIN_GAPS_PER_COMPONENT:  # (a coarse clock's zeros are fitted)
        assert rec["threshold_provenance"]["step"] == "fixed", how
        assert rec["threshold_used_s"] == pauses.FIXED_THRESHOLD_S
    if how["step"] >= 0.01 and n_pos >= 100 and len(np.unique(gaps)) > 3:
        assert rec["clock_resolution"]["step_s"] >= how["step"] - 1e-12, how
        assert rec["clock_resolution"]["material"], how


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24, 124))
def test_many_generated_studies_with_the_workflow_settings(seed):
    """The same property with the workflow's settings (ten starts, converged EM, the
    random-state checks) on 100 more generated studies."""
    gaps, _ = generated_case(seed)
    rec = pause_threshold(gaps, threshold="fitted", converged={"random_state_checks": 2})
    check_record(rec, gaps)


@pytest.mark.slow
@pytest.mark.parametrize(("participants", "step"), [(2, 0.0), (3, 0.1), (10, 0.001), (13, 0.1)])
def test_simulated_studies_through_ingest_never_stop_the_pause_step(tmp_path, participants, step):
    """Studies from nonolab's simulator, ingested as the workflow does, with the log clock
    rounded to ``step`` seconds: the pause step ends in a threshold."""
    from nonolab.sim.events import simulate_study
    from nonolab.sim.model import SimParams
    from nonolab.sim.writer import write_study
    from nonolab.study.features import interaction_gaps
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    params = SimParams(n_participants=participants, n_puzzles=4, height=6, width=6, filled=18)
    write_study(simulate_study(params, seed=participants), tmp_path / "study")
    study = ingest_study(tmp_path / "study", resolve_preset(tmp_path / "study"))
    gaps = interaction_gaps(study.tables["events"])["gap_s"].to_numpy()
    if step:
        gaps = np.round(gaps / step) * step
    check_record(pause_threshold(gaps, threshold="fitted"), gaps)


def test_a_100ms_clock_is_detected_and_dequantised_without_dropping_gaps():
    rng = np.random.default_rng(5)
    true = study_gaps(rng, 13, 60)
    rounded = np.round(true, 1)
    res = clock_resolution(rounded)
    assert res["step_s"] == pytest.approx(0.1) and res["material"]
    # the public study's microsecond clock is immaterial
    assert not clock_resolution(np.round(true, 6))["material"]
    spread = dequantise(rounded, 0.1, seed=1)
    assert len(spread) == len(rounded) and (spread > 0).all()
    assert np.abs(spread - rounded).max() <= 0.1 + 1e-12
    assert len(np.unique(spread)) == len(spread)  # no ties left
    rec = pause_threshold(rounded, **FAST)
    check_record(rec, rounded)
    assert rec["threshold_provenance"]["step"] == "mixture"
    # every gap is fitted, the zeros too (spread below one step): none is dropped
    assert rec["n_gaps"] == rec["n_positive_gaps"] == len(rounded) > int((rounded > 0).sum())
    # the two slowest components, which define the threshold, are those of the true gaps
    clean = pause_threshold(true, **FAST)
    ci = clean["converged_fit"]["crossing_interval"]
    assert ci["low_s"] < rec["threshold_used_s"] < ci["high_s"]
    assert any("0.1 s grid" in s for s in rec["threshold_sentences"])


def test_a_spike_that_moves_the_threshold_is_flagged_with_and_without():
    rng = np.random.default_rng(3)
    base = study_gaps(rng, 10, 60)
    gaps = np.concatenate([base, np.full(60, 2.0)])
    (mp,) = mass_points(gaps, None)
    assert mp["value_s"] == 2.0 and mp["count"] == 60
    rec = pause_threshold(gaps, **FAST)
    check = rec["mass_point_check"]
    assert check["n_left_out"] == 60
    without = pause_threshold(base, **FAST)
    assert check["threshold_without_s"] == pytest.approx(without["threshold_fitted_s"], rel=1e-6)
    assert check["threshold_with_s"] == rec["threshold_fitted_s"]
    assert any(
        "Mass points flagged: 60 gaps of exactly 2 s" in s for s in rec["threshold_sentences"]
    )
    assert mass_points(base, None) == []


def test_mass_points_on_a_grid_are_judged_against_neighbouring_cells():
    rng = np.random.default_rng(8)
    g = np.round(study_gaps(rng, 40, 60), 2)  # a 10 ms clock: many repeated values, no spike
    assert mass_points(g, 0.01) == []
    spiked = np.concatenate([g, np.full(80, 3.0)])
    found = mass_points(spiked, 0.01)
    assert [d["value_s"] for d in found] == [3.0]
    assert found[0]["count"] >= MASS_MIN_COUNT and found[0]["expected"] > 0


def test_a_non_crossing_mixture_falls_to_fewer_components():
    """The two slowest components of the 3-mixture do not cross (a wide middle component
    dominates the slowest one everywhere): the chain says so and uses the 2-mixture."""
    model = pauses.PauseModel(
        n_gaps=100,
        n_positive=100,
        median_gap_s=1.0,
        bic={},
        delta_bic_vs_1={},
        means_log=(-4.0, 0.0, 0.5),
        sds_log=(0.5, 2.0, 0.2),
        weights=(0.1, 0.85, 0.05),
        threshold_log=float("nan"),
        threshold_s=float("nan"),
        seed=0,
        smaller_fits={
            2: {
                "means_log": [-0.5, 1.6],
                "sds_log": [0.6, 0.6],
                "weights": [0.6, 0.4],
                "threshold_s": 2.1,
            }
        },
    )
    gaps = np.exp(np.random.default_rng(1).normal(0, 1, 100))
    thr, prov = pauses.threshold_chain(gaps, model, lambda v: model)
    assert (thr, prov["step"], prov["components"]) == (2.1, "fewer components", 2)
    assert "do not cross" in prov["why"]
    model2 = pauses.PauseModel(**{**model.__dict__, "smaller_fits": {}})
    thr, prov = pauses.threshold_chain(gaps, model2, lambda v: model2, fixed_s=2.36)
    assert (thr, prov["step"]) == (2.36, "fixed")


@pytest.mark.slow
def test_crossing_interval_matches_the_spread_of_refits():
    """The delta-method interval of the crossing is about as wide as the spread of the crossing
    over independent samples of the same mixture (a parametric check)."""
    crossings = []
    for s in range(12):
        g = study_gaps(np.random.default_rng(100 + s), 20, 60)
        crossings.append(pauses.fit_converged_pause_model(g, n_init=1).threshold_s)
    g = study_gaps(np.random.default_rng(100), 20, 60)
    m = pauses.fit_converged_pause_model(g, n_init=1)
    ci = crossing_interval(
        g, {"means_log": m.means_log, "sds_log": m.sds_log, "weights": m.weights}, m.threshold_s
    )
    assert ci["low_s"] < m.threshold_s < ci["high_s"]
    sd_log = float(np.std(np.log(crossings), ddof=1))
    assert 0.4 * sd_log < ci["se_log"] < 2.5 * sd_log


def test_api_uses_the_config_names():
    gaps = study_gaps(np.random.default_rng(2), 8, 60)
    m = nonolab.fit_pause_model(gaps, components=2, n_init=1)
    assert len(m.means_log) == 2 and m.threshold_s > 0
    assert m.provenance["threshold_sentences"]
    with pytest.warns(DeprecationWarning, match="components"):
        old = nonolab.fit_pause_model(gaps, max_components=2, n_init=1)
    assert old.threshold_s == m.threshold_s
    tiny = nonolab.fit_pause_model(gaps[:5], components=3, threshold="fitted")
    assert tiny.threshold_s == pauses.FIXED_THRESHOLD_S
    assert tiny.provenance["threshold_provenance"]["step"] == "fixed"
