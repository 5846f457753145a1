"""The whole DAG (`all`: every table, figure and the errata) runs on simulated studies of other
designs than the paper's: more puzzles with two per session, sessions of 2 to 4 puzzles, larger grids with missing ratings
and no coded themes, no post-survey (no final ratings), and a larger study. With the example
study minus one participant (tests/workflow/test_example_minus_one.py) these are the five
designs whose whole DAG runs in CI; every library stage runs on 40 more designs and on the
example study minus each participant (tests/workflow/test_generalisation.py)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from snake import snakemake

from nonolab.cli import main

#: name -> `nonolab simulate` arguments (and whether the coded themes are removed)
DESIGNS = {
    "eight_puzzles_two_per_session": (
        ["--participants", "40", "--puzzles", "8", "--per-session", "2", "--seed", "11"],
        False,
    ),
    "large_grids_missing_ratings_no_themes": (
        ["--participants", "25", "--puzzles", "5", "--size", "12x12"]
        + ["--missing-ratings", "0.3", "--seed", "12"],
        True,
    ),
    "no_post_survey": (
        ["--participants", "20", "--puzzles", "4", "--size", "7x7", "--surveys", "no_post"]
        + ["--seed", "13"],
        False,
    ),
    # sessions that ran out of time: 2, 3 or 4 puzzles each (preset {min: 2, max: 4}); BT,
    # the models and Table 1 use whatever each participant rated
    "two_to_four_per_session": (
        ["--participants", "30", "--puzzles", "6", "--size", "8x8", "--per-session", "2-4"]
        + ["--seed", "15"],
        False,
    ),
    "ten_puzzles_sixty_participants": (
        ["--participants", "60", "--puzzles", "10", "--size", "8x8", "--seed", "14"],
        False,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DESIGNS))
def test_whole_dag_on_another_design(name, tmp_path):
    args, drop_themes = DESIGNS[name]
    study = tmp_path / "study"
    assert main(["simulate", str(study), *args]) == 0
    if drop_themes:
        shutil.rmtree(study / "riyad-analysis")
    config = {"study_dir": study}
    if (study / "preset.yaml").exists():
        config["preset"] = study / "preset.yaml"
    res = snakemake("all", directory=tmp_path / "run", config=config, cores=2, timeout=1800)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    results = tmp_path / "run" / "results"
    record = pd.read_json(results / "ingest" / "study.json", typ="series")
    assert record["participants"] > 0
    for table in ("table1_spearman", "bt_strengths", "behaviour_models", "moderation", "errata"):
        assert (results / "tables" / f"{table}.csv").is_file(), table
    assert (results / "figures" / "pause_gaps.png").is_file()
    assert (results / "tables" / "theme_prevalence.csv").is_file() == (not drop_themes)
    if name == "two_to_four_per_session":
        attempts = pd.read_csv(results / "ingest" / "attempts.csv")
        sizes = attempts.groupby("participant_id")["session_size"].first()
        assert set(sizes) == {2, 3, 4} and record["participants"] == 30
        assert (attempts.groupby("participant_id").size() == sizes).all()
        ledger = pd.read_csv(results / "ingest" / "ledger.csv")
        assert not ledger["reason"].str.contains("session serves").any()
        features = pd.read_csv(results / "features" / "attempts.csv")
        assert len(features) == len(attempts) == sizes.sum()
