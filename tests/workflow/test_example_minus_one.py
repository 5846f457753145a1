"""The example study minus one participant runs the whole DAG. Without `Sim-p4` one of the
Bradley-Terry bootstrap's resamples has a win graph that is not strongly connected; the ranking
rule used to crash there (and everything after it was lost)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"


@pytest.mark.slow
def test_whole_dag_without_one_participant(tmp_path):
    study = tmp_path / "study"
    shutil.copytree(EXAMPLE, study)
    (study / "backend" / "logs" / "Sim-p4.ndjson").unlink()
    run = subprocess.run(
        [sys.executable, "-m", "nonolab", "run", "--study", str(study)]
        + ["--results", str(tmp_path / "run"), "--cores", "2"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    results = tmp_path / "run" / "results"
    summary = pd.read_json(results / "ingest" / "study.json", typ="series")
    assert summary["participants"] == 29
    bt = pd.read_csv(results / "tables" / "bt_strengths.csv")
    assert len(bt) == 6 and (bt["status"] == "ok").all()
    assert (bt["n_boot_not_connected"] > 0).all()
    for table in ("table1_spearman", "behaviour_models", "moderation", "errata"):
        assert (results / "tables" / f"{table}.csv").exists()
