"""The report's recovery table states each target, its measured value, pass flag and seed."""

from nonolab.sim.recovery import recovery_criteria_table


def _record(bt_met: bool) -> dict:
    return {
        "seed": 7,
        "design": {
            "pipeline_studies": 1,
            "n_participants": 200,
            "n_puzzles_pipeline": 6,
            "replications": 20,
            "n_puzzles_slope": 12,
        },
        "criteria": {
            "threshold_within_10pct_share": 1.0,
            "threshold_met": True,
            "threshold_within_10pct_share_published_em_settings": 0.0,
            "bt_spearman_ge_0_9_share_replications": 0.75,
            "bt_spearman_met": bt_met,
            "bt_spearman_median_replications": 0.93,
            "slope_coverage": 0.95,
            "slope_coverage_met": True,
            "false_positive_rate": 0.05,
            "false_positive_rate_upper_ok": 0.147,
            "false_positive_rate_met": True,
        },
    }


def test_rows_values_and_flags():
    t = recovery_criteria_table(_record(bt_met=False))
    assert list(t["target"]).count("difficulty ranking (BT)") == 2
    row = t[t["criterion"].str.startswith("95% CI coverage")].iloc[0]
    assert row["value"] == 0.95 and row["met"] == "yes"
    bt = t[t["criterion"].str.startswith("share of replications")].iloc[0]
    assert bt["met"] == "no"
    assert set(t["seed"]) == {7}
    assert "20 replications x 12 puzzles" in t["design"].iloc[0]
    assert "0.147" in t[t["target"] == "zero effect"]["criterion"].iloc[0]
