"""The one pause counter (nonolab.study.features.pause_counts) and the pause-threshold
sensitivity table (nonolab.stats.sensitivity): hand-checkable cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nonolab.stats.sensitivity import _summary as summary
from nonolab.stats.sensitivity import (
    attempt_pause_counts,
    check_pause_counts,
    sensitivity_thresholds,
)
from nonolab.study.features import pause_counts

GAPS = pd.DataFrame(
    {
        "participant_id": ["a", "a", "a", "a", "b", "b"],
        "order": [1, 1, 1, 2, 1, 1],
        "gap_s": [0.0, 2.36, 2.35, 10.0, 1.0, 3.0],
    }
)
KEYS = pd.DataFrame({"participant_id": ["a", "a", "b", "c"], "order": [1, 2, 1, 1]})


def test_pause_counts_hand_case():
    pc = pause_counts(GAPS, 2.36)
    assert pc.to_dict() == {("a", 1): 1, ("a", 2): 1, ("b", 1): 1}
    assert pause_counts(GAPS, 100.0).to_dict() == {("a", 1): 0, ("a", 2): 0, ("b", 1): 0}
    np.testing.assert_array_equal(attempt_pause_counts(GAPS, KEYS, 2.36), [1, 1, 1, 0])
    np.testing.assert_array_equal(attempt_pause_counts(GAPS, KEYS, 0.0), [3, 1, 2, 0])
    np.testing.assert_array_equal(attempt_pause_counts(GAPS, KEYS, 100.0), [0, 0, 0, 0])


def test_check_pause_counts():
    att = KEYS.assign(pause_count=[1, 1, 1, 0])
    check_pause_counts(att, GAPS, 2.36)
    with pytest.raises(ValueError, match="differ from"):
        check_pause_counts(att.assign(pause_count=[1, 1, 2, 0]), GAPS, 2.36)


def test_sensitivity_thresholds_add_used_and_fitted():
    rec = {"threshold_used_s": 2.36, "threshold_s": 2.3562}
    assert sensitivity_thresholds([3.0, 1.0, 2.36], rec) == [1.0, 2.3562, 2.36, 3.0]
    assert sensitivity_thresholds([1.0], {"threshold_used_s": 2.0}) == [1.0, 2.0]
    assert sensitivity_thresholds([1.0], {"threshold_s": float("nan")}) == [1.0]


def test_summary_correlations_by_hand():
    gaps = pd.DataFrame(
        {
            "participant_id": ["a", "a", "a", "b", "b"],
            "order": [1, 1, 1, 1, 1],
            "gap_s": [0.5, 2.36, 3.0, 1.0, 10.0],
        }
    )
    a = pd.DataFrame(
        {
            "participant_id": ["a", "b", "c"],
            "order": [1, 1, 1],
            "puzzle_id": ["0", "1", "2"],
            "final_difficulty": [4, 2, 3],
        }
    )
    a["pause_count"] = attempt_pause_counts(gaps, a, 1.0)
    assert a["pause_count"].tolist() == [2, 2, 0]
    expertise = pd.Series({"a": 1.0, "b": 0.0, "c": -1.0})
    strengths = pd.DataFrame({"puzzle_id": ["0", "1", "2"], "strength": [3.0, 1.0, 2.0]})
    row = summary(a, gaps, 1.0, "final_difficulty", expertise, strengths)
    assert row["mean_pauses"] == pytest.approx(4 / 3) and row["total_pauses"] == 4
    assert row["share_gaps_pause"] == pytest.approx(4 / 5)
    assert row["rho_rating"] == pytest.approx(stats.spearmanr([2, 2, 0], [4, 2, 3]).statistic)
    assert row["rho_expertise"] == pytest.approx(stats.spearmanr([2, 2, 0], [1, 0, -1]).statistic)
    assert row["rho_bt"] == pytest.approx(stats.spearmanr([2, 2, 0], [3, 1, 2]).statistic)
    none = summary(a, gaps, 1.0, "final_difficulty", None, None)
    assert np.isnan(none["rho_expertise"]) and np.isnan(none["rho_bt"])
