"""Pool statistics (nonolab.stats.pool_stats) and the added Table 1 columns on hand-checkable
data: correlations, VIF, percentiles, the two alignments of served ids to pool rows, served
sequences, Benjamini-Hochberg and the behaviour Spearman."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nonolab.measure.tables import read_pool_statistics
from nonolab.stats import pool_stats as ps
from nonolab.stats.correlations import behaviour_spearman, bh_fdr

# x and z: r = 4 / sqrt(5 * 5) = 0.8 (deviations -1.5, -.5, .5, 1.5 and -1.5, .5, -.5, 1.5);
# w = (1, -1, -1, 1) has mean 0 and is orthogonal to both deviation vectors.
TOY = pd.DataFrame({"decisions": [1, 2, 3, 4], "propagations": [1, 3, 2, 4]})
TOY["conflicts"] = [1, -1, -1, 1]


def test_metric_correlations_by_hand():
    t = ps.metric_correlations({"toy": TOY}).set_index(["metric_a", "metric_b"])
    dp = t.loc[("decisions", "propagations")]
    assert dp["pearson_r"] == pytest.approx(0.8) and np.isnan(dp["r_squared_vs_conflicts"])
    # Spearman on ranks equal to the values: same 0.8
    assert dp["spearman_rho"] == pytest.approx(0.8) and dp["n"] == 4
    dc = t.loc[("decisions", "conflicts")]
    assert dc["pearson_r"] == pytest.approx(0.0, abs=1e-12)
    assert dc["r_squared_vs_conflicts"] == pytest.approx(0.0, abs=1e-12)


def test_metric_correlations_of_a_constant_metric_are_nan():
    t = ps.metric_correlations({"toy": TOY.assign(conflicts=0)})
    assert t.loc[t["metric_b"] == "conflicts", "pearson_r"].isna().all()


def test_metric_vif_by_hand():
    # VIF = 1 / (1 - R^2): 1 / (1 - 0.8^2) for the correlated pair, 1 for the orthogonal one.
    v = ps.metric_vif({"toy": TOY}).set_index("metric")["vif"]
    assert v["decisions"] == pytest.approx(1 / 0.36)
    assert v["propagations"] == pytest.approx(1 / 0.36)
    assert v["conflicts"] == pytest.approx(1.0)


def test_pool_percentile_counts_strictly_below():
    assert ps.pool_percentile([1, 2, 3, 4, 5], 3) == 40.0
    assert ps.pool_percentile([0, 0, 1, 2], 0) == 0.0
    assert ps.pool_percentile([0, 0, 1, 2], 5) == 100.0


def _toy_selection():
    # Served ids 0-2 are pool puzzles 7, 9, 8; the published table lists them as 7, 8, 9.
    served = pd.DataFrame({"puzzle_id": ["0", "1", "2"], "puzzle_hash": ["h7", "h9", "h8"]})
    sizes = pd.DataFrame(
        {"puzzle_hash": ["h7", "h8", "h9"], "variables": [10, 20, 30], "clauses": [1, 2, 3]}
    )
    selected = pd.DataFrame(
        {"pool_puzzle_id": ["7", "8", "9"], "variables": [10, 20, 30], "clauses": [1, 2, 3]}
    )
    return served, sizes, selected


def test_selection_pool_ids_published_is_row_position_corrected_is_identity():
    served, sizes, selected = _toy_selection()
    ids = ps.selection_pool_ids(selected, served, sizes).set_index(["alignment", "experiment_id"])
    assert ids.loc["published", "pool_puzzle_id"].tolist() == ["7", "8", "9"]
    assert ids.loc["published", "source_hash"].tolist() == ["h7", "h8", "h9"]
    assert ids.loc["corrected", "pool_puzzle_id"].tolist() == ["7", "9", "8"]
    assert (ids.loc["corrected", "source_hash"] == ids.loc["corrected", "puzzle_hash"]).all()


def test_selection_representativeness_uses_the_source_statistics():
    served, sizes, selected = _toy_selection()
    ids = ps.selection_pool_ids(selected, served, sizes)
    metrics = sizes.assign(decisions=[5, 50, 500])
    pool = pd.DataFrame({"decisions": [1, 10, 100, 1000]})
    t = ps.selection_representativeness(ids, metrics, pool, ["decisions"])
    t = t.set_index(["alignment", "experiment_id"])
    assert t.loc[("published", "1"), "decisions_value"] == 50
    assert t.loc[("corrected", "1"), "decisions_value"] == 500
    assert t.loc[("corrected", "1"), "decisions_percentile"] == 75.0
    no_pool = ps.selection_representativeness(ids, metrics, None, ["decisions"])
    assert no_pool["decisions_percentile"].isna().all()


def test_ordered_selections_counts():
    att = pd.DataFrame(
        {
            "participant_id": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "order": [3, 1, 2] * 3,
            "puzzle_id": ["2", "0", "1", "2", "0", "1", "0", "2", "1"],
        }
    )
    # a and b: (0, 1, 2); c: (2, 0, 1): two orders of one set.
    got = ps.ordered_selections(att, 3, 3, schedule=[[0, 1, 2], [1, 2, 0]])
    assert got["distinct_ordered"] == 2 and got["distinct_unordered"] == 1
    assert got["possible_ordered"] == 6 and got["possible_unordered"] == 1
    assert got["participants"] == 3 and got["complete_sessions"] == 3
    assert got["schedule_size"] == 2 and got["all_in_schedule"] is False
    got = ps.ordered_selections(att, 3, 3, schedule_idx=[0, 0, None, 4])
    assert got["distinct_schedule_idx"] == 2 and got["max_schedule_idx"] == 4


def test_bh_fdr_by_hand():
    # sorted 0.01, 0.03, 0.04 (m = 3): 0.03, 0.045, 0.04 -> running minimum from the top
    got = bh_fdr([0.01, 0.04, np.nan, 0.03])
    assert got[0] == pytest.approx(0.03) and np.isnan(got[2])
    assert got[1] == pytest.approx(0.04) and got[3] == pytest.approx(0.04)


def test_behaviour_spearman_by_hand():
    strengths = pd.DataFrame({"puzzle_id": ["0", "1", "2"], "strength": [0.5, 1.0, 2.0]})
    raw = pd.Series([3.0, 2.0, 1.0], index=["0", "1", "2"])
    att = pd.DataFrame(
        {"puzzle_id": ["0", "0", "1", "2"], "hint_count": [1, 3, 4, 9], "error_count": 1}
    )
    t = behaviour_spearman(strengths, raw, att, ["hint_count"]).set_index("predictor")
    # means 2, 4, 9 rise with strength and fall with the raw mean
    assert t.loc["hint_count", "bt_rho"] == pytest.approx(1.0)
    assert t.loc["hint_count", "raw_rho"] == pytest.approx(-1.0)
    assert t.loc["hint_count", "n"] == 3


def test_read_pool_statistics_renames_and_keeps_row_order(tmp_path):
    p = tmp_path / "pool.csv"
    p.write_text(
        ",restarts,conflicts,decisions,propagations,puzzle_id,nvars_input,nclauses_input\n"
        "0,1,4,13,453,1789,305,1208\n1,1,0,4,313,2,312,1265\n"
    )
    t = read_pool_statistics(p)
    assert t["pool_puzzle_id"].tolist() == ["1789", "2"]
    assert t.loc[0, ["variables", "clauses", "conflicts"]].tolist() == [305, 1208, 4]
    p.write_text("puzzle_id,decisions\n1,2\n")
    with pytest.raises(ValueError, match="lacks columns"):
        read_pool_statistics(p)


def test_pool_tables_without_pool_or_published_selection():
    served, sizes, _ = _toy_selection()
    metrics = sizes.assign(solver="s", encoding="e", decisions=[1, 2, 4])
    metrics = metrics.assign(propagations=[10, 30, 20], conflicts=[0, 1, 1])
    other = metrics.assign(solver="t")
    t = ps.pool_tables(served, pd.concat([metrics, other]), solver="s", encoding="e")
    assert set(t["correlation"]["sample"]) == {"selected"}
    assert (t["correlation"]["n"] == 3).all() and len(t["vif"]) == 3
    rep = t["representativeness"]
    assert rep.empty and "conflicts_percentile" in rep.columns
