"""Results are one consistent run or say they are not.

A small simulated study is ingested and a stage output written from the ingest (with its
provenance sidecar, as every rule writes one). Then, one at a time, the ordinary things of the
issue happen: a participant's log is added to the study (the results no longer match its files),
the ingest is rerun on the new files while a later stage is not (a stale mix: the stage comes
from an earlier run), a run fails (the last report is marked out of date), and a complete run
clears the mark. Each time the page's banner, the CLI and :func:`check_results` name what changed;
a consistent folder shows no banner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from report_study import ingest_results

from nonolab.cli import main
from nonolab.core.tables import write_table
from nonolab.report.consistency import (
    RUN_STATUS,
    check_results,
    mark_run_complete,
    mark_run_failed,
)
from nonolab.report.html import build_report, render_report

BANNER = 'id="out-of-date"'


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("consistency") / "study"
    args = ["simulate", str(out), "--participants", "3", "--puzzles", "4", "--size", "5x5"]
    assert main([*args, "--per-session", "2-3", "--seed", "7"]) == 0
    return out


def stage(work: Path) -> Path:
    """Write a stage output computed from the ingest's attempts (sidecar naming its input, as
    the workflow's rules record them: paths relative to the working directory)."""
    attempts = pd.read_parquet(work / "results" / "ingest" / "attempts.parquet")
    out = work / "results" / "tables" / "per_participant.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    table = attempts.groupby("participant_id").size().rename("n").reset_index()
    import os

    cwd = os.getcwd()
    os.chdir(work)  # inputs recorded relative to the working directory, as under Snakemake
    try:
        write_table(
            table,
            Path("results/tables/per_participant.csv"),
            inputs=["results/ingest/attempts.parquet"],
        )
    finally:
        os.chdir(cwd)
    return out


def setup(tmp_path: Path, base: Path) -> tuple[Path, Path, Path]:
    study = tmp_path / "my study"
    shutil.copytree(base, study)
    work = tmp_path / "work"
    preset = study / "preset.yaml"
    ingest_results(study, preset, work / "results")
    stage(work)
    return study, preset, work


def logs(study: Path) -> list[Path]:
    return sorted((study / "backend" / "logs").glob("*.ndjson"))


def test_one_run_of_the_current_files_is_consistent(tmp_path, base, capsys):
    _, _, work = setup(tmp_path, base)
    found = check_results(work / "results")
    assert found.ok, found.problems
    assert found.checked >= 1 and found.ingest_run and found.fingerprint
    assert BANNER not in render_report(work)
    assert main(["report", "--results", str(work)]) == 0
    out = capsys.readouterr()
    assert "consistent" in out.out and "out of date" not in out.err


def test_changed_study_files_are_named(tmp_path, base, capsys):
    study, _, work = setup(tmp_path, base)
    first, *rest = logs(study)
    extra = study / "backend" / "logs" / "Sim-p99.ndjson"
    extra.write_bytes(first.read_bytes().replace(b"Sim-p1", b"Sim-p99"))
    rest[0].write_bytes(rest[0].read_bytes() + b"\n")
    found = check_results(work / "results")
    text = " ".join(found.problems)
    assert "files changed since these results were computed" in text
    assert "Sim-p99.ndjson" in text and rest[0].name in text, text
    page = render_report(work)
    assert BANNER in page and "Sim-p99.ndjson" in page
    assert main(["report", "--results", str(work)]) == 0
    err = capsys.readouterr().err
    assert "out of date" in err and "Sim-p99.ndjson" in err


def test_a_stage_from_an_earlier_run_is_named(tmp_path, base):
    """The issue's stale mix: the ingest reran on more participants, a later stage did not."""
    study, preset, work = setup(tmp_path, base)
    logs(study)[-1].unlink()  # fewer participants now
    ingest_results(study, preset, work / "results")  # the new run's ingest ...
    found = check_results(work / "results")  # ... and the old stage output
    assert not found.ok
    assert found.stale == ["tables/per_participant.csv"], found.stale
    text = " ".join(found.problems)
    assert "an earlier ingest/attempts.parquet" in text and "per_participant.csv" in text
    stage(work)  # the stage reruns: consistent again
    assert check_results(work / "results").ok


def test_a_failed_run_marks_the_last_report_out_of_date(tmp_path, base):
    _, _, work = setup(tmp_path, base)
    page = build_report(work)
    assert BANNER not in page.read_text(encoding="utf-8")
    mark_run_failed(work / "results", "job pauses failed")
    marked = page.read_text(encoding="utf-8")
    assert BANNER in marked and "job pauses failed" in marked
    assert marked.index(BANNER) < marked.index("<header>")  # at the top of the page
    assert BANNER in render_report(work)  # a report rebuilt after the failure says it too
    mark_run_failed(work / "results", "job table1 failed")  # one banner, the latest reason
    marked = page.read_text(encoding="utf-8")
    assert marked.count(BANNER) == 1 and "job table1 failed" in marked
    mark_run_complete(work / "results")
    assert not (work / "results" / RUN_STATUS).exists()
    assert BANNER not in render_report(work)


def test_an_incomplete_ingest_is_named(tmp_path, base):
    _, _, work = setup(tmp_path, base)
    (work / "results" / "ingest" / "ratings.parquet").unlink()
    found = check_results(work / "results")
    assert any("ratings.parquet is missing" in p for p in found.problems), found.problems


@pytest.mark.slow
def test_nonolab_run_that_fails_marks_the_last_report(tmp_path, base):
    """The real path: `nonolab run` (ingest and pauses), a report, then a run whose pauses job
    fails (its input lost its columns): the run says so, the folder records it and the last page
    carries the banner; `nonolab report` then says so too."""
    import subprocess
    import sys

    study = tmp_path / "my study"
    shutil.copytree(base, study)
    work = tmp_path / "work"
    target = "results/pauses/threshold.json"

    def run(*extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "nonolab", "run", "--study", str(study), "--preset"]
        cmd += [str(study / "preset.yaml"), "--results", str(work), "--cores", "1", target]
        return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=1200)

    first = run()
    assert first.returncode == 0, first.stderr[-3000:]
    page = build_report(work)
    assert BANNER not in page.read_text(encoding="utf-8")
    events = work / "results" / "ingest" / "events.parquet"
    # only the event types left: the workflow still starts, the pauses job cannot compute gaps
    pd.read_parquet(events, columns=["type"]).to_parquet(events)
    failed = run("--", "--forcerun", "pauses")
    assert failed.returncode != 0
    assert "marked out of date" in failed.stderr, failed.stderr[-3000:]
    assert (work / "results" / RUN_STATUS).is_file()
    marked = page.read_text(encoding="utf-8")
    assert BANNER in marked and "pauses" in marked.split(BANNER, 1)[1][:2000]
    assert main(["report", "--results", str(work)]) == 0
    assert BANNER in page.read_text(encoding="utf-8")
