"""Coded themes of the public study: the 167-response target (METHODS 10) and the two exports."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from nonolab.stats.themes import code_tests, load_coded_responses, theme_codes, theme_test_responses

pytestmark = pytest.mark.study

DERIVED = "riyad-analysis/derived/coded_responses.csv"
OTHER = "analyze-data/out_features/text_coding/coded_responses.csv"


def test_167_responses_and_both_exports_agree_on_codes(study_dir):
    a = load_coded_responses(study_dir / DERIVED)
    b = load_coded_responses(study_dir / OTHER)
    ra, rb = theme_test_responses(a), theme_test_responses(b)
    assert len(ra) == len(rb) == 167
    codes = [c for c in a.columns if c.startswith("code_")]
    assert a[codes].equals(b[codes])
    # The exports differ in one participant's rating-reason rows (P015 = Bing-p15), uncoded.
    diff = a["final_difficulty"].fillna(-1) != b["final_difficulty"].fillna(-1)
    assert set(a.loc[diff & (a["response_kind"] == "rating_reason"), "participant_id"]) == {"P015"}
    assert (a.loc[a["participant_id"] == "P015", codes].to_numpy() == 0).all()


def test_theme_tests_against_direct_scipy(study_dir):
    coded = load_coded_responses(study_dir / DERIVED)
    resp = theme_test_responses(coded)
    t = code_tests(resp, theme_codes(coded)).set_index("code")
    assert len(t) == 13 and t["p_fdr"].notna().sum() == 12  # UI occurs in no test response
    has = resp["code_LOAD"] == 1
    x, y = resp.loc[has, "final_difficulty"], resp.loc[~has, "final_difficulty"]
    u = sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)  # U by counting pairs
    assert t.loc["LOAD", "u"] == u
    assert t.loc["LOAD", "rank_biserial"] == pytest.approx(1 - 2 * u / (len(x) * len(y)))
    assert t.loc["LOAD", "p"] == pytest.approx(stats.mannwhitneyu(x, y).pvalue)
    assert isinstance(resp, pd.DataFrame) and resp["final_difficulty"].notna().all()
