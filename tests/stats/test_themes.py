"""Tests of nonolab.stats.themes: rank-biserial by hand, code tests, BH-FDR, loader errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from nonolab.stats.themes import (
    code_tests,
    coded_subset,
    convergent_checks,
    load_coded_responses,
    mann_whitney,
    prevalence,
    rank_biserial,
    strategy_codes,
    theme_behaviour_tests,
    theme_codes,
    theme_test_responses,
    with_action_counts,
    with_incorrect_submissions,
    within_puzzle_percentile,
)


def test_rank_biserial_hand_cases():
    # present [5, 5] vs absent [1, 5]: U_present = (1 + 0.5) * 2 = 3 -> r = 1 - 6/4 = -0.5
    res = mann_whitney([5, 5], [1, 5])
    assert res["u"] == 3
    assert res["rank_biserial"] == pytest.approx(-0.5)
    # every present rating below every absent rating: U = 0 -> r = +1 (rated easier)
    res = mann_whitney([1, 2], [3, 4, 5])
    assert res["u"] == 0 and res["rank_biserial"] == pytest.approx(1.0)
    assert rank_biserial(6, 2, 3) == pytest.approx(-1.0)


def _coded():
    return pd.DataFrame(
        {
            "response_id": [f"R{i}" for i in range(8)],
            "participant_id": ["P1", "P1", "P2", "P2", "P3", "P3", "P1", "P2"],
            "source_file": ["A-p1.ndjson"] * 2
            + ["B-p2.json"] * 2
            + ["C-p3.ndjson"] * 2
            + ["A-p1.ndjson", "B-p2.json"],
            "response_kind": ["rating_reason"] * 6 + ["strategy", "comments"],
            "puzzle_id": [0.0, 1.0, 0.0, 2.0, 1.0, 2.0, np.nan, np.nan],
            "final_difficulty": [2, 4, 1, 5, np.nan, 3, np.nan, np.nan],
            "code_X": [1, 0, 1, 0, 1, 0, 0, 1],
            "code_Y": [0, 1, 0, 1, 0, 0, 0, 0],
            "code_Z": [0, 0, 0, 0, 0, 0, 0, 0],
            "code_S_A": [0, 0, 0, 0, 0, 0, 1, 0],
        }
    )


def test_selection_and_code_tests(tmp_path):
    path = tmp_path / "coded.csv"
    _coded().to_csv(path, index=False)
    coded = load_coded_responses(path)
    assert coded["participant"].tolist()[:3] == ["A-p1", "A-p1", "B-p2"]
    assert coded["puzzle_id"].tolist()[:2] == ["0", "1"]
    assert theme_codes(coded) == ["X", "Y", "Z"] and strategy_codes(coded) == ["S_A"]
    resp = theme_test_responses(coded)
    # rating reasons with a final difficulty and >= 1 theme code: R0, R1, R2, R3 (R4 has no
    # rating, R5 no code)
    assert resp["response_id"].tolist() == ["R0", "R1", "R2", "R3"]
    t = code_tests(resp, ["X", "Y", "Z"]).set_index("code")
    # X present: [2, 1], absent: [4, 5] -> U = 0, r = 1
    assert t.loc["X", "u"] == 0 and t.loc["X", "rank_biserial"] == 1
    assert t.loc["X", "mean_present"] == 1.5 and t.loc["X", "mean_absent"] == 4.5
    assert t.loc["Y", "rank_biserial"] == -1
    assert np.isnan(t.loc["Z", "p"]) and np.isnan(t.loc["Z", "p_fdr"])
    bh = multipletests(t.loc[["X", "Y"], "p"], method="fdr_bh")[1]
    assert t.loc[["X", "Y"], "p_fdr"].tolist() == pytest.approx(list(bh))
    prev = prevalence(resp, ["X", "Y", "Z"], "rating_reason")
    assert prev[["code", "n"]].values.tolist() == [["X", 2], ["Y", 2], ["Z", 0]]
    assert prev["share"].tolist() == [0.5, 0.5, 0.0]
    assert coded_subset(coded, ["strategy"], ["S_A"])["response_id"].tolist() == ["R6"]


def test_convergent_checks_join_on_published_id_and_puzzle(tmp_path):
    path = tmp_path / "coded.csv"
    _coded().to_csv(path, index=False)
    resp = theme_test_responses(load_coded_responses(path))
    attempts = pd.DataFrame(
        {
            "participant_id": ["A-p1", "A-p1", "B-p2", "B-p2"],
            "puzzle_id": ["0", "1", "0", "2"],
            "hint_count": [0, 5, 1, 7],
        }
    )
    c = convergent_checks(resp, attempts, {"X": ["hint_count"]})
    row = c.iloc[0]
    assert (row["n_present"], row["n_absent"], row["n_unmatched"]) == (2, 2, 0)
    assert row["median_present"] == 0.5 and row["median_absent"] == 6
    assert row["rank_biserial"] == 1
    with pytest.raises(ValueError, match="lacks behaviour column"):
        convergent_checks(resp, attempts, {"X": ["nope"]})


def test_loader_names_file_and_line(tmp_path):
    bad = _coded()
    bad.loc[3, "code_Y"] = 2
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"bad\.csv, line 5: column code_Y"):
        load_coded_responses(path)
    path2 = tmp_path / "nocol.csv"
    _coded().drop(columns=["source_file"]).to_csv(path2, index=False)
    with pytest.raises(ValueError, match="missing column"):
        load_coded_responses(path2)


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=12),
    st.lists(st.integers(1, 5), min_size=1, max_size=12),
)
@settings(max_examples=60, deadline=None)
def test_rank_biserial_properties(x, y):
    if len(set(x + y)) < 2:
        return  # all ratings equal: Mann-Whitney is undefined
    a, b = mann_whitney(x, y), mann_whitney(y, x)
    u = sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)  # U by counting pairs
    assert a["u"] == pytest.approx(u)
    assert a["u"] + b["u"] == pytest.approx(len(x) * len(y))
    assert a["rank_biserial"] == pytest.approx(-b["rank_biserial"])
    assert -1 <= a["rank_biserial"] <= 1


def test_duplicated_rows_do_not_change_the_tests(tmp_path):
    from nonolab.stats.themes import select_coded_responses

    clean, dup = tmp_path / "clean.csv", tmp_path / "dup.csv"
    _coded().to_csv(clean, index=False)
    doubled = _coded()
    pd.concat([doubled, doubled.iloc[[0, 2]]], ignore_index=True).to_csv(dup, index=False)
    want = code_tests(theme_test_responses(load_coded_responses(clean)), ["X", "Y"])
    used, dropped = select_coded_responses(load_coded_responses(dup))
    got = code_tests(theme_test_responses(used), ["X", "Y"])
    pd.testing.assert_frame_equal(got, want)  # n and the FDR p as without the copies
    assert dropped[["record", "response_id", "reason"]].values.tolist() == [
        [9, "R0", "duplicate of record 1 (same response_id)"],
        [10, "R2", "duplicate of record 3 (same response_id)"],
    ]


def test_responses_of_participants_not_analysed_are_left_out(tmp_path):
    from nonolab.stats.themes import select_coded_responses

    path = tmp_path / "coded.csv"
    _coded().to_csv(path, index=False)
    coded = load_coded_responses(path)
    used, dropped = select_coded_responses(coded, {"A-p1", "C-p3"})  # B-p2 excluded by ingest
    assert "B-p2" not in set(used["participant"])
    assert dropped["response_id"].tolist() == ["R2", "R3", "R7"]
    assert set(dropped["reason"]) == {"participant not analysed (not in the participants table)"}
    resp = theme_test_responses(used)
    assert resp["response_id"].tolist() == ["R0", "R1"]
    assert code_tests(resp, ["X"])["n_present"].tolist() == [1]


def test_within_puzzle_percentile_by_hand():
    v = pd.Series([10.0, 20.0, 20.0, 5.0, np.nan, 7.0])
    puz = pd.Series(["a", "a", "a", "b", "b", "b"])
    got = within_puzzle_percentile(v, puz)
    # a: ranks 1, 2.5, 2.5 of 3 -> (r - 0.5) / 3; b: 5 and 7 of 2, NaN stays NaN
    np.testing.assert_allclose(got[[0, 1, 2]], [0.5 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(got[[3, 5]], [0.25, 0.75])
    assert np.isnan(got[4])


def test_incorrect_submissions_counts_wrong_checks():
    attempts = pd.DataFrame({"participant_id": ["p", "p", "q"], "order": [1, 2, 1]})
    events = pd.DataFrame(
        {
            "participant_id": ["p", "p", "p", "q", "p"],
            "order": [1, 1, 1, 1, 2],
            "phase": ["puzzle", "puzzle", "puzzle", "puzzle", "survey"],
            "type": ["check_bank", "check_bank", "move", "check_bank", "check_bank"],
            "solved": pd.array([False, True, pd.NA, True, False], dtype="boolean"),
        }
    )
    got = with_incorrect_submissions(attempts, events)
    assert list(got["incorrect_submissions"]) == [1, 0, 0]


def test_action_count_counts_player_actions_of_the_attempt():
    attempts = pd.DataFrame({"participant_id": ["p", "p", "q"], "order": [1, 2, 1]})
    events = pd.DataFrame(
        {
            "participant_id": ["p", "p", "p", "p", "q", "p"],
            "order": [1, 1, 1, 1, 1, 2],
            "phase": ["puzzle", "puzzle", "puzzle", "survey", "session", "puzzle"],
            "role": ["interaction", "interaction", "marker", "interaction", "interaction"]
            + ["survey"],
        }
    )
    got = with_action_counts(attempts, events)
    # p/1: two actions (the marker and the survey-phase event do not count); p/2 and q/1: none
    assert list(got["action_count"]) == [2, 0, 0]


def test_the_theme_behaviour_table_has_the_action_count():
    from nonolab.stats.themes import THEME_BEHAVIOURS

    assert "action_count" in THEME_BEHAVIOURS


def _pairs_data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Generated rating reasons of 12 participants x 3 puzzles; theme X on a random subset.
    Returns (responses, attempts, per-participant differences computed by hand)."""
    rng = np.random.default_rng(seed)
    rows, att = [], []
    for i in range(12):
        for q in range(3):
            x = int(rng.random() < 0.4)
            rows.append({"participant": f"P{i}", "puzzle_id": str(q), "code_X": x})
            att.append({"participant_id": f"P{i}", "puzzle_id": str(q), "b": rng.normal() + q})
    resp, attempts = pd.DataFrame(rows), pd.DataFrame(att)
    pct = within_puzzle_percentile(attempts["b"], attempts["puzzle_id"])
    d = resp.assign(pct=pct.to_numpy())
    diffs = []
    for _, g in d.groupby("participant", sort=True):
        if g["code_X"].nunique() == 2:
            diffs.append(g.loc[g.code_X == 1, "pct"].mean() - g.loc[g.code_X == 0, "pct"].mean())
    return resp, attempts, np.array(diffs)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_theme_behaviour_tests_equal_a_hand_wilcoxon(seed):
    resp, attempts, diffs = _pairs_data(seed)
    got = theme_behaviour_tests(resp, attempts, ["X"], ["b"]).iloc[0]
    assert got["n_participants"] == len(diffs)
    assert got["mean_difference"] == pytest.approx(diffs.mean())
    diffs = np.round(diffs, 12)
    nz = diffs[diffs != 0]
    exact = len(np.unique(np.abs(nz))) == len(nz) == len(diffs)
    if exact:
        res = stats.wilcoxon(diffs, method="exact")
    else:
        res = stats.wilcoxon(diffs, method="asymptotic", correction=True)
    assert got["p"] == pytest.approx(res.pvalue) and got["w"] == res.statistic
    nz = diffs[diffs != 0]
    r = stats.rankdata(np.abs(nz))
    want = (r[nz > 0].sum() - r[nz < 0].sum()) / r.sum()
    assert got["rank_biserial"] == pytest.approx(want)
    assert got["p_fdr"] == pytest.approx(got["p"])  # a family of one


def test_theme_behaviour_tests_need_pairs_and_columns():
    resp, attempts, _ = _pairs_data(5)
    resp["code_X"] = 1  # nobody has a response without the theme: no pairs, no test
    got = theme_behaviour_tests(resp, attempts, ["X"], ["b"]).iloc[0]
    assert got["n_participants"] == 0 and np.isnan(got["p"])
    with pytest.raises(ValueError, match="lacks behaviour"):
        theme_behaviour_tests(resp, attempts, ["X"], ["nope"])
    empty = theme_behaviour_tests(resp, attempts, [], ["b"])
    assert empty.empty and {"code", "p", "p_fdr", "rank_biserial"} <= set(empty.columns)


_R_WILCOX = r"""
d <- read.csv("d.csv")$d
r <- wilcox.test(d, mu = 0)
write.csv(data.frame(v = unname(r$statistic), p = r$p.value), "out.csv", row.names = FALSE)
"""


@pytest.mark.r
@pytest.mark.parametrize("seed", [1, 2, 6, 7, 9])
def test_theme_behaviour_wilcoxon_agrees_with_r(seed, tmp_path):
    """R's wilcox.test with its defaults (exact below 50 pairs without ties, else normal with
    tie and continuity correction) on the within-participant differences: the same p; R's V
    is W+, scipy's statistic min(W+, W-)."""
    import os

    from nonolab.stats import rcheck

    if not rcheck.r_available(["stats"]):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("Rscript not available; under CI=true this is a failure, not a skip")
        pytest.skip("Rscript not available")
    resp, attempts, diffs = _pairs_data(seed)
    got = theme_behaviour_tests(resp, attempts, ["X"], ["b"]).iloc[0]
    pd.DataFrame({"d": np.round(diffs, 12)}).to_csv(tmp_path / "d.csv", index=False)
    rcheck.run_r(_R_WILCOX, tmp_path)
    ref = pd.read_csv(tmp_path / "out.csv").iloc[0]
    assert got["p"] == pytest.approx(ref["p"], rel=1e-9)
    n = int((np.round(diffs, 12) != 0).sum())  # R drops zero differences
    assert min(ref["v"], n * (n + 1) / 2 - ref["v"]) == got["w"]
