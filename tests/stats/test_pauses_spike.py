"""A pause mixture that collapses onto a spike of identical gaps (rounded timestamps on a small
study) is detected, and the threshold comes from the documented fallback, both recorded."""

from __future__ import annotations

import numpy as np
import pytest

from nonolab.stats.pauses import (
    DEGENERATE_SD_LOG,
    FALLBACK_RULE,
    degenerate_components,
    fit_pause_model,
    pause_threshold,
)

FIT = {"threshold": "fitted", "converged": {"random_state_checks": 0}}


def small_study_gaps(seed: int, n: int = 400) -> np.ndarray:
    """Gaps (s) of a small study: within-move gaps around 0.8 s and pauses around 6 s."""
    rng = np.random.default_rng(seed)
    fast = np.exp(rng.normal(np.log(0.8), 0.6, int(n * 0.65)))
    slow = np.exp(rng.normal(np.log(6.0), 0.55, n - int(n * 0.65)))
    return np.concatenate([fast, slow])


@pytest.mark.parametrize(("seed", "spike_s"), [(0, 1.005), (1, 2.0)])
def test_spike_of_identical_gaps_is_reported_with_the_fallback(seed, spike_s):
    base = small_study_gaps(seed)
    gaps = np.concatenate([base, np.full(60, spike_s)])
    rec = pause_threshold(gaps, **FIT)
    # the mixture put one component on the spike (between the within-move gaps and the
    # pauses): its crossing with the pauses sits at the spike
    assert abs(rec["threshold_s"] - spike_s) < 0.05 * spike_s
    (deg,) = rec["degenerate_components"]
    assert deg["spike_s"] == spike_s and deg["n_gaps"] >= 60
    assert deg["sd_log"] < DEGENERATE_SD_LOG and "repeated_value" in deg["reasons"]
    fb = rec["threshold_fallback"]
    assert fb["ok"] and fb["rule"] == FALLBACK_RULE
    assert fb["removed_values_s"] == [spike_s] and fb["n_removed"] == 60
    # the threshold used is the refit's, not the spike's, and says where it came from
    assert rec["threshold_used_s"] == fb["threshold_s"] == fb["fit"]["threshold_s"]
    assert rec["threshold_source"].startswith("fallback")
    assert not degenerate_components(base, fb["fit"])
    # the refit sees the same gaps as a study without the spike: same order of threshold
    clean = fit_pause_model(base).threshold_s
    assert 0.5 * clean < rec["threshold_used_s"] < 2 * clean


def test_no_spike_no_fallback():
    rec = pause_threshold(small_study_gaps(3), **FIT)
    assert rec["degenerate_components"] == []
    assert "threshold_fallback" not in rec
    assert rec["threshold_source"] == "fitted"
    assert rec["threshold_used_s"] == rec["threshold_s"]


def test_a_preset_threshold_stays_but_the_collapse_is_reported():
    gaps = np.concatenate([small_study_gaps(0), np.full(60, 1.005)])
    rec = pause_threshold(gaps, threshold=2.5, converged={"random_state_checks": 0})
    assert rec["threshold_used_s"] == 2.5 and rec["threshold_source"] == "config"
    assert rec["degenerate_components"] and rec["threshold_fallback"]["ok"]


def test_degenerate_components_reads_a_record_or_a_model():
    gaps = np.concatenate([small_study_gaps(1), np.full(60, 1.005)])
    model = fit_pause_model(gaps)
    rec = {"means_log": model.means_log, "sds_log": model.sds_log, "weights": model.weights}
    assert degenerate_components(gaps, model) == degenerate_components(gaps, rec)


def test_figure_names_the_spike_and_the_fallback():
    import matplotlib.pyplot as plt

    from nonolab.report.figures.pauses import component_names, plot_gap_distribution

    gaps = np.concatenate([small_study_gaps(0), np.full(60, 1.005)])
    rec = pause_threshold(gaps, **FIT)
    assert component_names(rec, drags=False) == ["fast", "spike at 1 s", "pause"]
    assert component_names(rec, drags=True)[0] == "fast"  # a drag is one event: no drag component
    fig = plot_gap_distribution(gaps, rec, drags=False)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert "spike at 1 s" in labels and any(lb.endswith("(fallback)") for lb in labels)
    assert not any("drag" in lb for lb in labels)
