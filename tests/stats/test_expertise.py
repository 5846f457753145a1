"""Unit tests of nonolab.stats.expertise: composite by hand, Cronbach's alpha, PC1, correlations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nonolab.stats.expertise import (
    cronbach_alpha,
    expertise_composite,
    expertise_correlations,
    first_component,
    participant_items,
)


def test_composite_by_hand_with_a_missing_item():
    items = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, np.nan, 2.0]}, index=["p", "q", "r"])
    # a: mean 2, population sd sqrt(2/3) -> z = (-1.2247, 0, 1.2247)
    # b: mean 1 over answered, population sd 1 -> z = (-1, NaN, 1)
    za = np.array([-1, 0, 1]) / np.sqrt(2 / 3)
    m = np.array([(za[0] - 1) / 2, za[1], (za[2] + 1) / 2])
    expected = (m - m.mean()) / m.std(ddof=0)
    got = expertise_composite(items)
    assert got.to_numpy() == pytest.approx(expected)
    assert got.mean() == pytest.approx(0.0, abs=1e-12)
    assert got.std(ddof=0) == pytest.approx(1.0)


def test_participant_items_checks_constancy():
    att = pd.DataFrame({"participant_id": ["p", "p", "q"], "x": [1, 1, 2]})
    assert participant_items(att, ["x"])["x"].to_dict() == {"p": 1.0, "q": 2.0}
    att.loc[1, "x"] = 5
    with pytest.raises(ValueError, match="vary within a participant"):
        participant_items(att, ["x"])
    with pytest.raises(ValueError, match="lacks expertise item"):
        participant_items(att, ["y"])


def test_cronbach_alpha_hand_cases():
    # Two identical items: alpha = 1. Two items with total variance = sum of item variances
    # (uncorrelated): alpha = 0.
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 2, 3, 4]})
    assert cronbach_alpha(x) == pytest.approx(1.0)
    y = pd.DataFrame({"a": [1.0, -1, 1, -1], "b": [1.0, 1, -1, -1]})
    assert cronbach_alpha(y, standardise=False) == pytest.approx(0.0)
    # Unstandardised, by the textbook formula on a 3-item example.
    z = pd.DataFrame({"a": [2.0, 4, 3, 5, 1], "b": [3.0, 5, 3, 4, 2], "c": [1.0, 4, 2, 5, 2]})
    k = 3
    expected = k / (k - 1) * (1 - z.var(ddof=1).sum() / z.sum(axis=1).var(ddof=1))
    assert cronbach_alpha(z, standardise=False) == pytest.approx(expected)


def test_first_component_of_perfectly_correlated_items():
    x = pd.DataFrame({"a": [1.0, 2, 3, 4, 6], "b": [2.0, 4, 6, 8, 12], "c": [5.0, 3, 1, 0, -3]})
    # c is not perfectly collinear; a and b are: PC1 share >= 2/3.
    res = first_component(x, expertise_composite(x))
    assert 2 / 3 <= res["pc1_share"] <= 1
    assert res["n"] == 5
    same = pd.DataFrame({"a": [1.0, 2, 3], "b": [1.0, 2, 3]})
    r = first_component(same, expertise_composite(same))
    assert r["pc1_share"] == pytest.approx(1.0)
    assert r["pc1_composite_r"] == pytest.approx(1.0)


def test_correlations_use_participant_means():
    att = pd.DataFrame(
        {
            "participant_id": ["p", "p", "q", "q", "r", "r", "s"],
            "final_difficulty": [1, 3, 2, 2, 5, np.nan, 4],
        }
    )
    comp = pd.Series([0.1, 0.2, 0.3, 0.4], index=["p", "q", "r", "s"])
    t = expertise_correlations(att, comp, {"mean_final_difficulty": "final_difficulty"})
    # means: p 2, q 2, r 5, s 4 -> ranks (1.5, 1.5, 4, 3) vs (1, 2, 3, 4)
    from scipy.stats import spearmanr

    expected = spearmanr([0.1, 0.2, 0.3, 0.4], [2, 2, 5, 4])
    assert t.loc[0, "rho"] == pytest.approx(expected.statistic)
    assert t.loc[0, "p"] == pytest.approx(expected.pvalue)
    assert t.loc[0, "n"] == 4
