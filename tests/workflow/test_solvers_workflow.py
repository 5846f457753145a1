"""The sat stage end to end on the embedded example study: rule outputs equal the library's."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from snake import CONFIG, snakemake

from nonolab.measure.tables import metrics_and_timings
from nonolab.sat.formats import read_puzzles
from nonolab.sat.solvers import STUDY_SOLVERS

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_sat_rule_on_example_study(tmp_path):
    targets = ["results/sat/metrics.csv", "results/sat/uniqueness.csv"]
    cfg = tmp_path / "sat.yaml"
    cfg.write_text(
        "sat:\n  puzzles: study\n  solvers: [minisat22, cadical195]\n"
        "  encodings: [block_start]\n  uniqueness_solver: glucose42\n  conf_budget: null\n"
    )
    res = snakemake(*targets, directory=tmp_path, configfiles=[CONFIG, cfg])
    assert res.returncode == 0, res.stderr[-3000:]
    metrics = pd.read_csv(tmp_path / "results/sat/metrics.csv", dtype={"puzzle_id": str})
    puzzles = read_puzzles(REPO / "data/example-study/nonograms_6.json")
    want, _ = metrics_and_timings(puzzles, ["block_start"], ["minisat22", "cadical195"])
    assert metrics.to_csv(index=False) == want.to_csv(index=False)
    assert set(STUDY_SOLVERS) >= set(metrics["solver"])
    uniq = pd.read_csv(tmp_path / "results/sat/uniqueness.csv", dtype={"puzzle_id": str})
    assert len(uniq) == len(puzzles) and (uniq["solver"] == "glucose42").all()
    assert uniq["status"].isin(["unique", "multiple"]).all()
    assert (tmp_path / "results/sat/timings.csv").exists()
    answers = (tmp_path / "results/logs/sat/metrics.log").read_text().split("uniqueness:\n")[1]
    assert len(answers.strip().splitlines()) == len(puzzles) + 1  # header + one line a puzzle
