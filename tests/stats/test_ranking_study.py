"""Expertise, Bradley-Terry and Table 1 on the public study: every [target] of METHODS 6-8
(published alignment), from the raw logs and the SAT layer."""

from __future__ import annotations

import pandas as pd
import pytest
from public_study import study_ingest

from nonolab.sat.puzzles import load_study_puzzles
from nonolab.sat.solvers import solver_record
from nonolab.stats.correlations import (
    aligned_metrics,
    erratum_table,
    published_alignment,
    raw_mean_rating,
    table1,
)
from nonolab.stats.expertise import expertise_composite, expertise_correlations, participant_items
from nonolab.stats.ranking import lr_test, pairwise_comparisons, strengths_table
from nonolab.study.features import attempt_features
from nonolab.study.presets import resolve_preset

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def attempts(study_dir):
    preset = resolve_preset(study_dir).data
    return attempt_features(
        study_ingest(str(study_dir)).tables,
        preset["published"]["pause_threshold_s"],
        keep_initial_rating_sentinel=preset["features"]["keep_initial_rating_sentinel"],
    )


@pytest.fixture(scope="module")
def comparisons(attempts):
    return pairwise_comparisons(attempts, rating_col="final_difficulty")


ITEMS = ["0", "1", "2", "3", "4", "5"]


def test_expertise_composite_equals_published_column(attempts, study_dir):
    pub = pd.read_csv(study_dir / "analyze-data/out_features/behavioral_features.csv")
    pub = pub.groupby("participant_id")["expertise_composite"].first()
    comp = expertise_composite(participant_items(attempts))
    assert len(comp) == 67
    assert (comp.reindex(pub.index) - pub).abs().max() < 1e-12


def test_expertise_vs_mean_final_difficulty(attempts):
    comp = expertise_composite(participant_items(attempts))
    t = expertise_correlations(attempts, comp).set_index("outcome")
    row = t.loc["mean_final_difficulty"]
    assert (f"{row['rho']:.3f}", f"{row['p']:.3f}", row["n"]) == ("-0.094", "0.451", 67)


def test_bradley_terry_lr_test(comparisons):
    t = lr_test(comparisons, ITEMS)
    assert (f"{t['chi2']:.2f}", t["df"], f"{t['p']:.1e}") == ("38.17", 5, "3.5e-07")


@pytest.fixture(scope="module")
def metrics(study_dir):
    puzzles = load_study_puzzles(study_dir / "nonograms_6.json")
    return pd.DataFrame([solver_record(p, "block_start", "minisat22") for p in puzzles])


def test_table1_published_alignment(attempts, comparisons, metrics, study_dir):
    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    pool = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv")
    mapping = published_alignment(pool, served, metrics)
    by_id = served.set_index("puzzle_id")["puzzle_hash"]
    # METHODS 2: ids 0, 1 keep their own statistics; 2 <- 5, 3 <- 2, 4 <- 3, 5 <- 4.
    assert [mapping[k] for k in ITEMS] == [by_id[k] for k in ["0", "1", "5", "2", "3", "4"]]
    aligned = {
        "published": aligned_metrics(metrics, served, mapping),
        "corrected": aligned_metrics(metrics, served),
    }
    pub = aligned["published"].set_index("puzzle_id")
    assert pub.loc["2", ["decisions", "propagations", "conflicts"]].tolist() == [13, 453, 4]
    strengths = strengths_table(comparisons, ITEMS)
    t1 = table1(strengths, raw_mean_rating(attempts), aligned)
    e = erratum_table(t1, "minisat22", "block_start").set_index("metric")

    def fmt(col):
        return [f"{e.loc[m, col]:.3f}" for m in ("decisions", "propagations", "conflicts")]

    assert fmt("published_bt_rho") == ["-0.257", "-0.257", "0.000"]
    assert fmt("published_bt_p") == ["0.623", "0.623", "1.000"]
    assert fmt("published_raw_rho") == ["-0.371", "-0.371", "-0.239"]
    assert fmt("published_raw_p") == ["0.468", "0.468", "0.648"]
    # The corrected join changes the sign of every BT correlation (descriptive, six puzzles).
    assert (e["corrected_bt_rho"] > 0).all()
    assert e["published_perm_p"].between(0, 1).all()
