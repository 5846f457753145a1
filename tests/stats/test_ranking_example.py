"""Recovery on the embedded simulated study (data/example-study, ground_truth.json): the
Bradley-Terry ranking, the pause mixture and the theme effects point where the simulator's truth
does. Runs on committed repository data only (no shared data needed)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from scipy import stats

from nonolab.stats.pauses import fit_pause_model
from nonolab.stats.ranking import pairwise_comparisons, strengths_table
from nonolab.stats.themes import code_tests, load_coded_responses, theme_test_responses
from nonolab.study.features import attempt_features, interaction_gaps
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example-study"


@lru_cache(maxsize=1)
def _ingest():
    return ingest_study(EXAMPLE, resolve_preset(EXAMPLE))


@pytest.fixture(scope="module")
def truth():
    return json.loads((EXAMPLE / "ground_truth.json").read_text())


def test_bt_ranking_recovers_latent_difficulty(truth):
    att = attempt_features(_ingest().tables, truth["pause_threshold_s"])
    items = sorted(att["puzzle_id"].astype(str).unique(), key=int)
    hashes = dict(zip(att["puzzle_id"].astype(str), att["puzzle_hash"], strict=False))
    s = strengths_table(pairwise_comparisons(att), items, hashes=hashes).set_index("puzzle_hash")
    true = {p["puzzle_hash"]: p["difficulty"] for p in truth["puzzles"]}
    rho = stats.spearmanr([s.loc[h, "strength"] for h in true], list(true.values())).statistic
    assert rho >= 0.8


def test_pause_mixture_lands_near_the_simulated_components(truth):
    gaps = interaction_gaps(_ingest().tables["events"])
    m = fit_pause_model(gaps["gap_s"].to_numpy(), n_init=3, seed=42)
    med = truth["params"]["gaps"]["medians_s"]
    assert m.means_s[1] == pytest.approx(med[1], rel=0.15)
    assert m.means_s[2] == pytest.approx(med[2], rel=0.25)
    assert med[1] < m.threshold_s < med[2]
    assert m.threshold_s == pytest.approx(truth["pause_threshold_s"], rel=0.2)


def test_strong_theme_effects_have_the_simulated_sign(truth):
    coded = load_coded_responses(EXAMPLE / "riyad-analysis/derived/coded_responses.csv")
    t = code_tests(theme_test_responses(coded), list(truth["theme_effects"])).set_index("code")
    for code, effect in truth["theme_effects"].items():
        if abs(effect) >= 0.6:  # a harder-making theme (effect > 0) has rank-biserial r < 0
            assert t.loc[code, "rank_biserial"] * effect < 0, code
