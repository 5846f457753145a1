"""A small lab's own study, run end to end twice: 10 participants, then 13 in the same results
folder (the study grows between two runs), with no failure and no stale mix.

The study is generated (``benchmarks/pipeline_bench.py``, :func:`small_lab_study`) the way a lab
writes one by hand from docs/data-format.md: five 8x8 puzzles, four served per session, logs as
``data/session logs/*.jsonl``, a preset of its own, folders whose names hold a space. Each run is
the default ``nonolab run`` (the study's own analysis and its report; slow: two whole runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(study: Path, preset: Path, results: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nonolab", "run", "--study", str(study), "--preset", str(preset)]
    cmd += ["--results", str(results), "--cores", "2", "--quiet"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=REPO)


def _participants(results: Path) -> dict[str, int]:
    """Participants each stage saw: the ingest summary, the features table, the Bradley-Terry
    comparisons' sample (every attempt's participant)."""
    summary = json.loads((results / "results/ingest/summary.json").read_text())
    attempts = pd.read_csv(results / "results/features/attempts.csv")
    return {
        "ingest": int(summary["participants"]),
        "features": int(attempts["participant_id"].nunique()),
    }


@pytest.mark.slow
@pytest.mark.timeout(3600)  # two whole runs: up to 20 minutes on a loaded 2-core machine
def test_a_small_lab_study_runs_twice_as_it_grows(tmp_path, benchmark_script):
    bench = benchmark_script("pipeline_bench")
    root = tmp_path / "lab folder"
    results = tmp_path / "lab results"
    study, preset = bench.small_lab_study(root, 10, total=13)
    first = _run(study, preset, results)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"study: {study}" in first.stderr  # --quiet: the study line goes to stderr
    assert "simulation extras in a whole run: none" in first.stderr
    assert _participants(results) == {"ingest": 10, "features": 10}
    report = results / "results/report.html"
    assert report.is_file()
    # only the study's own work: no power grid, pool or recovery
    assert not (results / "results/tables/power.csv").exists()
    assert not (results / "results/pool").exists()
    assert not (results / "results/tables/recovery.csv").exists()

    bench.small_lab_study(root, 13, total=13)  # three more participants' logs
    second = _run(study, preset, results)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert _participants(results) == {"ingest": 13, "features": 13}
    # no stale mix: every table computed from the study's data (its provenance names inputs;
    # the errata of a study with no published values has none) was rewritten after the new logs
    newest_log = max(p.stat().st_mtime for p in (study / "data" / "session logs").iterdir())

    def computed(table: Path) -> bool:
        sidecar = table.with_suffix(".provenance.json")
        return not sidecar.is_file() or bool(json.loads(sidecar.read_text()).get("inputs"))

    stale = [
        p.name
        for p in (results / "results" / "tables").glob("*.csv")
        if p.stat().st_mtime < newest_log and computed(p)
    ]
    assert not stale, f"tables older than the new logs: {stale}"
    assert report.stat().st_mtime > newest_log
