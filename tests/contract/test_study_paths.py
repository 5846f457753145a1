"""Nothing outside the study folder is read; the workflow finds logs as the ingest does; paths
with spaces and shell metacharacters work in ``make reproduce`` and ``nonolab run``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from snake import snakemake
from synth_study import good_session, ingest, write_log, write_study

from nonolab.study.ingest import ingest_study
from nonolab.study.presets import StudyError, load_preset, log_sources, resolve_preset

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
BASE = (
    "name: x\npuzzle_file: nonograms_6.json\nlog_globs: [backend/logs/*.ndjson]\n"
    "puzzles_per_session: 3\nparticipants:\n  default_participant_id: stem\n"
)


def _preset(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "preset.yaml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "key, value",
    [
        ("puzzle_file", "/abs/path.json"),
        ("puzzle_file", "../../x.json"),
        ("puzzle_file", "sub/../../x.json"),
        ("puzzle_file", "~/x.json"),
        ("assignment_schedule", "/etc/passwd"),
        ("log_globs", "../../outside_logs/*.ndjson"),
        ("log_globs", "/abs/logs/*.ndjson"),
        ("themes", "../coded.csv"),
        ("published", "/x/features.csv"),
    ],
)
def test_preset_path_outside_the_study_is_refused_naming_key_and_value(tmp_path, key, value):
    text = BASE
    if key == "puzzle_file":
        text = text.replace("nonograms_6.json", value)
    elif key == "log_globs":
        text = text.replace("[backend/logs/*.ndjson]", f"[backend/logs/*.ndjson, '{value}']")
    elif key == "themes":
        text += f"themes:\n  coded_responses: '{value}'\n"
    elif key == "published":
        text += f"published:\n  behavioral_features: '{value}'\n"
    else:
        text += f"{key}: '{value}'\n"
    with pytest.raises(StudyError, match=key) as err:
        load_preset(_preset(tmp_path, text))
    assert repr(value) in str(err.value)
    assert "relative to the study folder" in str(err.value)


def test_outside_log_glob_does_not_read_another_folder(tmp_path):
    """The issue's example: `../../outside_logs/*.ndjson` read another folder's participants."""
    root = write_study(tmp_path / "a" / "b" / "study", {"Good-p1": good_session()})
    write_log(tmp_path / "a" / "outside_logs" / "Other-p9.ndjson", good_session())
    preset = load_preset(_preset(tmp_path, BASE))
    # a glob added after loading (a preset object built another way) is refused too
    preset.data["log_globs"] = ["backend/logs/*.ndjson", "../../outside_logs/*.ndjson"]
    with pytest.raises(StudyError, match=r"log_globs\[1\].*'\.\./\.\./outside_logs"):
        log_sources(root, preset)


def test_linked_puzzle_file_outside_the_study(tmp_path):
    root = write_study(tmp_path / "study", {"Good-p1": good_session()})
    outside = tmp_path / "elsewhere.json"
    shutil.move(root / "nonograms_6.json", outside)
    (root / "nonograms_6.json").symlink_to(outside)
    with pytest.raises(StudyError, match=r"puzzle_file: 'nonograms_6\.json' is a symbolic link"):
        ingest_study(root, load_preset(_preset(tmp_path, BASE)))
    allowed = load_preset(_preset(tmp_path, BASE + "follow_links_outside_study: true\n"))
    assert len(ingest_study(root, allowed).tables["participants"]) == 1


def test_linked_log_file_outside_the_study_is_ledgered_not_read(tmp_path):
    root = write_study(tmp_path / "study", {"Good-p1": good_session()})
    write_log(tmp_path / "other" / "Spy-p2.ndjson", good_session())
    (root / "backend" / "logs" / "Spy-p2.ndjson").symlink_to(tmp_path / "other" / "Spy-p2.ndjson")
    res = ingest(root)
    assert res.tables["participants"]["participant_id"].tolist() == ["Good-p1"]
    led = res.tables["ledger"]
    row = led[led["source"] == "backend/logs/Spy-p2.ndjson"]
    assert row["action"].tolist() == ["excluded"]
    assert "outside the study folder" in row["reason"].iloc[0]


def test_linked_study_folder_itself_is_fine(tmp_path):
    root = write_study(tmp_path / "real", {"Good-p1": good_session()})
    (tmp_path / "link").symlink_to(root)
    assert len(ingest(tmp_path / "link").tables["participants"]) == 1


def test_coded_responses_link_outside_the_study_is_refused(tmp_path):
    root = write_study(tmp_path / "study", {"Good-p1": good_session()})
    (root / "coded.csv").symlink_to(EXAMPLE / "riyad-analysis/derived/coded_responses.csv")
    text = BASE + "themes:\n  coded_responses: coded.csv\n"
    with pytest.raises(StudyError, match=r"themes\.coded_responses: 'coded\.csv'"):
        ingest_study(root, load_preset(_preset(tmp_path, text)))


# --- the workflow and the ingest agree on the logs ---------------------------------------------


def _small_example(dst: Path, keep: int = 4) -> Path:
    shutil.copytree(EXAMPLE, dst)
    for f in sorted((dst / "backend" / "logs").iterdir())[keep:]:
        f.unlink()
    return dst


@pytest.mark.slow
def test_dry_run_plans_the_ingest_after_a_new_log_or_a_coded_responses_edit(tmp_path):
    study = _small_example(tmp_path / "study")
    work = tmp_path / "work"
    target = "results/ingest/summary.json"
    run = snakemake(target, directory=work, config={"study_dir": study})
    assert run.returncode == 0, run.stderr[-3000:]
    again = snakemake(target, opts=["-n"], directory=work, config={"study_dir": study})
    assert "Nothing to be done" in again.stdout + again.stderr
    # a log the ingest reads (upper-case extension: globs match case-insensitively)
    logs = study / "backend" / "logs"
    shutil.copy(sorted(EXAMPLE.joinpath("backend", "logs").iterdir())[10], logs / "New-p99.NDJSON")
    read = [s.rel for s in log_sources(study, resolve_preset(study)) if s.read]
    assert "backend/logs/New-p99.NDJSON" in read
    plan = snakemake(target, opts=["-n"], directory=work, config={"study_dir": study})
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "rule ingest" in plan.stdout + plan.stderr
    run = snakemake(target, directory=work, config={"study_dir": study})
    assert run.returncode == 0, run.stderr[-3000:]
    # editing the coded-responses file reruns the ingest (its ledger checks the coded rows)
    coded = study / "riyad-analysis" / "derived" / "coded_responses.csv"
    coded.write_text(coded.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    plan = snakemake(target, opts=["-n"], directory=work, config={"study_dir": study})
    assert "rule ingest" in plan.stdout + plan.stderr


# --- paths with spaces and shell metacharacters ------------------------------------------------

ODD = 'it\'s a $HOME; & (copy) "q"'


@pytest.mark.slow
def test_nonolab_run_with_odd_paths(tmp_path):
    study = _small_example(tmp_path / ODD / "study dir")
    out = tmp_path / f"results {ODD}"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "nonolab", "run", "--study", str(study), "--directory", str(out)]
    r = subprocess.run(
        [*cmd, "--cores", "1", "results/ingest/summary.json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (out / "results" / "ingest" / "summary.json").is_file()
    assert list(cwd.iterdir()) == []  # no stray .snakemake folder


@pytest.mark.slow
def test_make_reproduce_with_odd_paths(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    study = _small_example(tmp_path / ODD / "study")
    out = tmp_path / f"res {ODD}"
    venv = Path(sys.executable).parents[1]
    before = {p.name for p in REPO.iterdir()}
    r = subprocess.run(
        [
            "make",
            "-C",
            str(REPO),
            "-o",
            "install",
            "-o",
            f"{venv}/.installed",
            f"VENV={venv}",
            "reproduce",
            f"STUDY={study}",
            f"RESULTS={out}",
            "SNAKE_ARGS=results/ingest/summary.json",
            "CORES=1",
        ],
        env=os.environ | {"PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
    )
    text = r.stdout + r.stderr
    assert (out / "results" / "ingest" / "summary.json").is_file(), text[-3000:]
    assert "Traceback" not in text
    # the report step runs on the same folder; with only the ingest done it stops there
    assert r.returncode == 0 or "marked for report but does not exist" in text, text[-3000:]
    assert {p.name for p in REPO.iterdir()} == before  # no stray .snakemake or results/
