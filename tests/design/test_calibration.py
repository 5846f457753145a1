"""Calibration: the predicted power agrees with the full pipeline's rejection rate.

Whole studies are simulated (nonolab.sim) and analysed with the pipeline's own functions
(Bradley-Terry ranking + Spearman; the crossed mixed model with Satterthwaite df; the
moderation model); the power engine predicts the rejection rate of the same designs. They must
agree within Monte-Carlo error (|z| <= 3 for every analysis). Small settings here (CI); full
settings in benchmarks/design_bench.py.
"""

from __future__ import annotations

import pytest

from nonolab.design.calibration import CALIBRATED, agreement, calibrate


@pytest.mark.slow
@pytest.mark.parametrize(("k", "n", "studies"), [(8, 30, 70), (12, 24, 50)])
def test_predicted_power_matches_the_pipeline(k: int, n: int, studies: int) -> None:
    table = calibrate(k, n, 0.6, studies, seed=20261205 + k, replications_per_study=10)
    assert list(table["analysis"]) == list(CALIBRATED)
    assert agreement(table, 3.0), table.to_string()
    # the check has power to see a real difference: the primary test is not at its size
    row = table.set_index("analysis").loc["spearman_bt"]
    assert row["predicted_power"] > 0.1
