"""Every result names its study: ingest records the study in results/ingest/study.json, a
results folder holding another study's results is refused (runs and reports alike), and the
report's home page names the study from the results, not from the config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from snake import snakemake

from nonolab.sim.events import simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.writer import write_study
from nonolab.study.identity import check_results_study, study_fingerprint
from nonolab.study.presets import StudyError, resolve_preset

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"


def _snakemake(workdir: Path, *targets: str, opts=(), study: Path | None = None):
    config = {"study_dir": study} if study is not None else None
    return snakemake(*targets, opts=opts, directory=workdir, config=config)


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory):
    base = tmp_path_factory.mktemp("studies")
    write_study(simulate_study(SimParams(n_participants=5, n_puzzles=4), 3), base / "b")
    return EXAMPLE, base / "b"


def test_ingest_records_the_study_and_another_study_is_refused(tmp_path, two_studies):
    a, b = two_studies
    run = _snakemake(tmp_path, "results/ingest/summary.json", study=b)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads((tmp_path / "results/ingest/study.json").read_text())
    assert rec["study_dir"] == b.resolve().as_posix()
    assert (rec["participants"], rec["puzzles"]) == (5, 4)
    assert rec["fingerprint"] == study_fingerprint(b, resolve_preset(b))
    # the default config names the example study: refused, whatever is asked (run or report)
    for args in (("-n",), ("--report", str(tmp_path / "r.html"))):
        other = _snakemake(tmp_path, opts=args)
        assert other.returncode != 0
        out = other.stdout + other.stderr
        assert "belong to the study" in out and str(b.resolve()) in out
    # the same study again plans nothing new
    again = _snakemake(tmp_path, "results/ingest/summary.json", opts=["-n"], study=b)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_moved_copy_of_the_study_is_the_same_study(tmp_path, two_studies):
    _, b = two_studies
    results = tmp_path / "results" / "ingest"
    results.mkdir(parents=True)
    preset = resolve_preset(b)
    (results / "study.json").write_text(
        json.dumps({"study_dir": "/elsewhere/b", "fingerprint": study_fingerprint(b, preset)})
    )
    assert check_results_study(tmp_path / "results", b, preset)["study_dir"] == "/elsewhere/b"
    copy = tmp_path / "copy"
    shutil.copytree(b, copy)
    (next((copy / "backend" / "logs").glob("*.ndjson"))).write_text("{}\n")
    with pytest.raises(StudyError, match="belong to the study /elsewhere/b"):
        check_results_study(tmp_path / "results", copy, preset)


def test_missing_study_folder_is_an_error(tmp_path):
    run = _snakemake(tmp_path, opts=["-n"], study=tmp_path / "nowhere")
    assert run.returncode != 0 and "does not exist" in run.stdout + run.stderr


def test_report_home_page_names_the_study_of_the_results():
    text = (REPO / "workflow/report/workflow.rst").read_text()
    assert 'snakemake.config.get("results_study")' in text
    assert 'snakemake.config["study_dir"]' not in text
