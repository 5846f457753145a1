"""Pause threshold of the public study: every [target] of METHODS 5, from the raw logs."""

from __future__ import annotations

import numpy as np
import pytest
from public_study import study_ingest

from nonolab.stats.pauses import PUBLISHED_EM_TOL, fit_pause_model, threshold_used
from nonolab.study.features import interaction_gaps
from nonolab.study.presets import resolve_preset

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def gaps(study_dir):
    return interaction_gaps(study_ingest(str(study_dir)).tables["events"])


@pytest.fixture(scope="module")
def model(gaps):
    return fit_pause_model(
        gaps["gap_s"].to_numpy(), max_components=3, n_init=10, seed=42, tol=PUBLISHED_EM_TOL
    )


def test_gap_count_and_median(gaps):
    assert len(gaps) == 29156
    assert f"{np.median(gaps['gap_s']):.2f}" == "1.20"


def test_bic_improvements(model):
    assert f"{model.delta_bic_vs_1[2]:,.1f}" == "2,973.7"
    assert f"{model.delta_bic_vs_1[3]:,.1f}" == "7,387.1"


def test_components(model):
    assert [f"{m:.3f}" for m in model.means_s] == ["0.012", "0.794", "6.014"]
    assert [f"{100 * w:.1f}" for w in model.weights] == ["2.4", "62.1", "35.5"]


def test_threshold(model, study_dir):
    assert f"{model.threshold_log:.3f}" == "0.857"
    assert f"{model.threshold_s:.2f}" == "2.36"
    preset = resolve_preset(study_dir).data["published"]["pause_threshold_s"]
    assert threshold_used(model, "auto", preset) == (2.36, "preset (published value)")


def test_naive_window_definition_gives_the_methods_quick_check_count(study_dir):
    """Player actions only (no platform markers) reproduce METHODS' 29,091: the markers
    (hint_none, completed_all_three, ended_without_full_completion) are what the published
    count adds (docs/decisions.md, Pause threshold)."""
    events = study_ingest(str(study_dir)).tables["events"]
    assert len(interaction_gaps(events, roles=("interaction",))) == 29091


def test_he2026_preset_uses_the_published_em_tolerance(study_dir):
    from nonolab.stats.pauses import em_tolerance

    preset = resolve_preset(study_dir, "auto")
    assert em_tolerance("auto", preset.data["published"].get("pause_em_tol")) == PUBLISHED_EM_TOL


def test_converged_fit_crosses_well_below_the_published_threshold(gaps):
    """The published 2.36 s comes from EM stopped at scikit-learn's default tolerance; run to
    convergence, the same mixture on the same gaps crosses near 1.56 s (docs/decisions.md)."""
    m = fit_pause_model(gaps["gap_s"].to_numpy(), n_init=10, seed=42)
    assert 1.4 < m.threshold_s < 1.7
    assert m.delta_bic_vs_1[3] > 7387.1  # a better optimum of the same likelihood
