"""New data: adding one participant's log to a study reruns only what depends on the logs.

A small simulated study is analysed by Snakemake (ingest, SAT metrics, a tiny power analysis);
then the log of one more participant (the same simulation with one more participant, so the
earlier logs are unchanged) is added, and the dry-run plan must contain the ingest job but not
the power analysis, which does not depend on the study. SAT metrics are replanned when
`sat.puzzles: ingest` (they read the ingest's puzzles table, which the ingest rerun rewrites) and
not when `sat.puzzles: study` (they read the puzzle file itself, which did not change).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from snake import snakemake

from nonolab.sim.events import simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.writer import LOG_DIR, write_study

REPO = Path(__file__).resolve().parents[2]
TARGETS = ["results/ingest/summary.json", "results/sat/metrics.csv", "results/tables/power.csv"]


def _snakemake(workdir: Path, study: Path, *opts: str, sat_puzzles: str) -> str:
    over = {
        "study_dir": str(study),
        "simulate": {
            "power": {
                "n_puzzles": [6],
                "n_participants": [10],
                "rho": [0.6],
                "methods": ["mean"],
                "replications": 2,
                "alpha": 0.05,
            }
        },
    }
    sat = dict(yaml.safe_load((REPO / "config" / "config.yaml").read_text())["sat"])
    over["sat"] = {**sat, "puzzles": sat_puzzles}
    configs = [REPO / "config" / "config.yaml", workdir / "overrides.yaml"]
    (workdir / "overrides.yaml").write_text(yaml.safe_dump(over))
    res = snakemake(*TARGETS, opts=opts, directory=workdir, configfiles=configs, cwd=workdir)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


def _planned(text: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", text, flags=re.M))


@pytest.mark.slow
@pytest.mark.parametrize("sat_puzzles", ["ingest", "study"])
def test_new_log_reruns_only_what_depends_on_it(tmp_path, sat_puzzles):
    study, work = tmp_path / "study", tmp_path / "work"
    work.mkdir()
    write_study(simulate_study(SimParams(n_participants=8, n_puzzles=6), 11), study)
    bigger = tmp_path / "bigger"
    write_study(simulate_study(SimParams(n_participants=9, n_puzzles=6), 11), bigger)
    for f in sorted((study / LOG_DIR).glob("*.ndjson")):  # earlier participants unchanged
        assert f.read_bytes() == (bigger / LOG_DIR / f.name).read_bytes()

    _snakemake(work, study, sat_puzzles=sat_puzzles)
    assert _planned(_snakemake(work, study, "-n", sat_puzzles=sat_puzzles)) == set()

    shutil.copy(bigger / LOG_DIR / "Sim-p9.ndjson", study / LOG_DIR / "Sim-p9.ndjson")
    plan = _planned(_snakemake(work, study, "-n", sat_puzzles=sat_puzzles))
    assert "ingest" in plan
    # the power grid's cells do not depend on the data; the study's own design cell
    # (power_study: its puzzles x participants) does, and the merge that gathers it
    assert "power_cell" not in plan
    assert "power_study" in plan
    # with sat.puzzles: ingest the SAT rule reads results/ingest/puzzles.parquet, which the
    # ingest rerun rewrites, so Snakemake replans it; reading the puzzle file it does not
    assert ("sat_metrics" in plan) == (sat_puzzles == "ingest")
