"""Tests of nonolab.stats.correlations: exact permutation p, the published row-position join,
Table 1 and the erratum layout."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from nonolab.stats.correlations import (
    aligned_metrics,
    erratum_table,
    published_alignment,
    raw_mean_rating,
    spearman_permutation_p,
    table1,
)


def test_permutation_p_hand_cases():
    # Perfect monotone association: only the identity and the reversal reach |rho| = 1.
    assert spearman_permutation_p([1, 2, 3], [10, 20, 30]) == pytest.approx(2 / 6)
    assert spearman_permutation_p([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(2 / 24)
    assert np.isnan(spearman_permutation_p([1, 2, 3], [5, 5, 5]))
    with pytest.raises(ValueError):
        spearman_permutation_p([1, 2], [1, 2, 3])


@given(st.lists(st.integers(0, 4), min_size=4, max_size=6), st.data())
@settings(max_examples=20, deadline=None)
def test_exact_permutation_p_equals_brute_force(y, data):
    x = data.draw(st.permutations(list(range(len(y)))))
    if len(set(y)) < 2:
        return

    def rho(a, b):
        return np.corrcoef(stats.rankdata(a), stats.rankdata(b))[0, 1]

    obs = abs(rho(x, y))
    hits = sum(
        abs(rho(x, [y[i] for i in perm])) >= obs - 1e-12
        for perm in itertools.permutations(range(len(y)))
    )
    n_perm = len(list(itertools.permutations(range(len(y)))))
    assert spearman_permutation_p(x, y) == pytest.approx(hits / n_perm)


def test_monte_carlo_permutation_p_is_seeded_and_close_to_exact():
    x = [3, 1, 4, 1.5, 5, 9, 2]
    y = [2, 7, 1, 8, 2.5, 8.5, 3]
    exact = spearman_permutation_p(x, y, exact_max_n=8)
    mc = spearman_permutation_p(x, y, exact_max_n=6, n_perm=20000, seed=5)
    assert mc == spearman_permutation_p(x, y, exact_max_n=6, n_perm=20000, seed=5)
    assert mc == pytest.approx(exact, abs=0.015)


def _toy():
    served = pd.DataFrame({"puzzle_id": ["0", "1", "2"], "puzzle_hash": ["h0", "h1", "h2"]})
    sizes = pd.DataFrame(
        {"puzzle_hash": ["h0", "h1", "h2"], "variables": [10, 11, 11], "clauses": [20, 21, 22]}
    )
    metrics = pd.DataFrame(
        {
            "puzzle_hash": ["h0", "h1", "h2"] * 2,
            "puzzle_id": ["0", "1", "2"] * 2,
            "solver": ["s"] * 3 + ["t"] * 3,
            "encoding": ["e"] * 6,
            "variables": [10, 11, 11] * 2,
            "clauses": [20, 21, 22] * 2,
            "decisions": [1, 2, 3, 5, 5, 5],
            "propagations": [10, 30, 20, 1, 2, 3],
            "conflicts": [0, 1, 2, 3, 2, 1],
        }
    )
    return served, sizes, metrics


def test_published_alignment_identifies_rows_by_size():
    served, sizes, _ = _toy()
    pool = pd.DataFrame({"nvars_input": [10, 11, 11], "nclauses_input": [20, 22, 21]})
    assert published_alignment(pool, served, sizes) == {"0": "h0", "1": "h2", "2": "h1"}
    ambiguous = sizes.assign(clauses=[20, 21, 21])
    with pytest.raises(ValueError, match="matches 2 served puzzles"):
        published_alignment(pool.assign(nclauses_input=[20, 21, 21]), served, ambiguous)
    with pytest.raises(ValueError, match="row-position join is undefined"):
        published_alignment(pool.iloc[:2], served, sizes)


def test_table1_and_erratum_on_a_toy_study():
    served, sizes, metrics = _toy()
    pool = pd.DataFrame({"nvars_input": [10, 11, 11], "nclauses_input": [20, 22, 21]})
    mapping = published_alignment(pool, served, sizes)
    aligned = {
        "published": aligned_metrics(metrics, served, mapping),
        "corrected": aligned_metrics(metrics, served),
    }
    pub = aligned["published"].query("solver == 's'").set_index("puzzle_id")
    assert pub["propagations"].to_dict() == {"0": 10, "1": 20, "2": 30}
    assert pub["source_hash"].to_dict() == {"0": "h0", "1": "h2", "2": "h1"}
    strengths = pd.DataFrame({"puzzle_id": ["0", "1", "2"], "strength": [0.5, 1.0, 2.0]})
    attempts = pd.DataFrame(
        {"puzzle_id": [0, 0, 1, 2, 2], "final_difficulty": [1, 2, 3, 5, np.nan]}
    )
    raw = raw_mean_rating(attempts)
    assert raw.to_dict() == {"0": 1.5, "1": 3.0, "2": 5.0}
    t = table1(strengths, raw, aligned)
    assert len(t) == 2 * 2 * 3
    row = t.query("alignment == 'published' and solver == 's' and metric == 'propagations'")
    assert row["bt_rho"].item() == pytest.approx(1.0)
    assert row["bt_p"].item() == pytest.approx(2 / 6)
    assert row["p_method"].item().startswith("exact permutation")
    row = t.query("alignment == 'corrected' and solver == 's' and metric == 'propagations'")
    assert row["bt_rho"].item() == pytest.approx(stats.spearmanr([0.5, 1, 2], [10, 30, 20])[0])
    # A constant metric gives NaN rather than a warning or a spurious number.
    assert t.query("solver == 't' and metric == 'decisions'")["bt_rho"].isna().all()
    e = erratum_table(t, "s", "e")
    assert e["metric"].tolist() == ["decisions", "propagations", "conflicts"]
    half = (len(e.columns) - 1) // 2  # metric, then each statistic per alignment
    assert len(e.columns) == 1 + 2 * half
    assert e.columns[1 : 1 + half].str.startswith("published_").all()
    assert e.columns[1 + half :].str.startswith("corrected_").all()
    assert "corrected_raw_perm_p" in e.columns  # Table 1's own test for the raw rho
    # BH over the three metrics of one alignment x solver x encoding
    fam = t.query("alignment == 'corrected' and solver == 's'")
    p = np.sort(fam["bt_p"].to_numpy())
    want = np.minimum.accumulate((p * 3 / np.arange(1, 4))[::-1])[::-1].clip(max=1)
    assert np.sort(fam["bt_p_fdr"].to_numpy()) == pytest.approx(want)
    with pytest.raises(ValueError, match="no rows"):
        erratum_table(t, "zz", "e")


def test_table1_caption_explains_blank_cells():
    """A metric constant over the puzzles (no conflicts anywhere) gives blank cells, and the
    caption says which and why; without blank cells it says nothing of them."""
    from nonolab.stats.correlations import table1_captions

    base = {"solver": "minisat22", "encoding": "block_start", "alignment": "corrected", "n": 5}
    t1 = pd.DataFrame(
        [
            base | {"metric": "decisions", "bt_rho": 0.3, "raw_rho": 0.2},
            base | {"metric": "conflicts", "bt_rho": np.nan, "raw_rho": np.nan},
        ]
    )
    caption, erratum = table1_captions(t1, "minisat22", "block_start")
    assert "Blank cells" in caption and "conflicts (minisat22, block_start)" in caption
    assert "decisions (" not in caption and "Blank cells" in erratum
    clean, _ = table1_captions(t1.iloc[:1], "minisat22", "block_start")
    assert "Blank cells" not in clean
