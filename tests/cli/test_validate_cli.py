"""``nonolab validate``: the ingest's findings without writing tables, known exclusions apart
from problems, and an exit status saying whether the study is usable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nonolab.cli import main
from nonolab.sim.model import FAULTS
from nonolab.sim.writer import GROUND_TRUTH, LOG_DIR

pytest.importorskip("pandas")


def _report(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(["validate", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.study
def test_public_study_has_only_known_exclusions(study_dir, capsys):
    """The public study: the seven log files its preset excludes, the coded responses of one
    of them, ten -1 ratings of skipped puzzles and the 14 coded rating reasons whose rating
    differs from the log's (the preset says why: themes.coded_ratings_differ); nothing else."""
    code, rep = _report(capsys, [str(study_dir)])
    assert code == 0
    assert rep["usable"] and rep["problems"] == []
    assert rep["preset"] == "he2026"
    kinds = [r["known"] for r in rep["known"]]
    assert kinds.count("preset") == 7
    assert kinds.count("follows preset") == 6
    assert kinds.count("skipped puzzle") == 10
    assert kinds.count("coded ratings (preset)") == 14
    assert len(kinds) == 7 + 6 + 10 + 14
    s = rep["summary"]
    assert (s["participants"], s["attempts"], s["log_files"]) == (67, 201, 74)
    assert s["lines_read"] == s["lines_used"] + s["lines_excluded"] + s["lines_ignored"]
    assert not list(study_dir.glob("**/ledger.csv"))  # nothing written
    assert main(["validate", str(study_dir)]) == 0
    out = capsys.readouterr().out
    assert "problems: none" in out and "usable: yes" in out
    assert "31761 lines read = 29850 used + 1911 excluded" in out


def test_simulated_faults_are_each_reported(tmp_path, capsys):
    out = tmp_path / "faulty"
    assert main(["simulate", "--participants", "8", "--puzzles", "3", "--size", "6x6",
                 "--seed", "2", "--faults", "all", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    faults = json.loads((out / GROUND_TRUTH).read_text())["faults"]
    assert sorted(f["fault"] for f in faults) == sorted(FAULTS)
    code, rep = _report(capsys, [str(out)])
    assert code == 1 and not rep["usable"]
    found = {(p["file"], p["line"]) for p in rep["problems"]}
    for f in faults:
        assert (f"{LOG_DIR}/{f['participant_id']}.ndjson", f["line"]) in found, f
    assert len(rep["problems"]) == len(faults)  # and nothing else is a problem
    assert main(["validate", str(out)]) == 1
    text = capsys.readouterr().out
    assert f"problems: {len(faults)}" in text and "usable: no" in text


def test_clean_simulated_study_is_usable(tmp_path, capsys):
    out = tmp_path / "clean"
    assert main(["simulate", "--participants", "6", "--puzzles", "3", "--size", "6x6",
                 "--seed", "3", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    code, rep = _report(capsys, [str(out)])
    assert code == 0 and rep["problems"] == []


def test_unreadable_study_is_a_fatal_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nowhere")]) == 2
    assert f"study folder {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    out = tmp_path / "study"
    assert main(["simulate", "--participants", "2", "--puzzles", "3", "--size", "5x5",
                 "--seed", "1", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    puzzles = out / "nonograms_6.json"
    if not puzzles.exists():
        puzzles = next(out.glob("nonograms_*.json"))
    puzzles.write_text("{ not json")
    assert main(["validate", str(out)]) == 2
    err = capsys.readouterr().err
    assert puzzles.name in err and "Traceback" not in err


def test_known_reason_rules():
    from nonolab.cli.commands.validate import known_reason

    excluded = {"backend/old/p1.ndjson": "p1"}

    def row(level, source, id_, reason, action="excluded"):
        return {"level": level, "source": source, "id": id_, "reason": reason, "action": action}

    assert known_reason(row("file", "backend/old/p1.ndjson", "p1", "pilot"), excluded) == "preset"
    coded = row("line", "coded.csv:4", "p1", "coded response of 'p1', not an analysed participant")
    assert known_reason(coded, excluded) == "follows preset"
    # a participant read under that same id is not excused by the excluded file
    assert known_reason(coded, excluded, frozenset({"p1"})) is None
    skipped = "initial rating -1 is not an integer 1-5: set to missing"
    assert known_reason(row("attempt", "b/p2.ndjson:9", "p2/1", skipped, "kept"), {}) == (
        "skipped puzzle"
    )
    assert known_reason(row("attempt", "b/p2.ndjson:9", "p2/1", skipped.replace("-1", "7"),
                            "kept"), {}) is None  # fmt: skip
    assert known_reason(row("line", "b/p2.ndjson:3", "p2", "not a JSON object"), excluded) is None


def test_validate_says_which_preset_it_assumed_and_why(tmp_path, capsys):
    """Without --preset, validate names the preset it assumed and why; a preset file in the
    study folder (which auto does not read) is named with the command that would use it."""
    import shutil

    from nonolab.cli import main

    study = tmp_path / "lab study"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "example-study", study)
    main(["validate", str(study)])
    out = capsys.readouterr().out
    assert "preset default: assumed (no --preset): no shipped preset's fingerprint" in out
    (study / "preset.yaml").write_text("extends: default\nname: lab\n", encoding="utf-8")
    main(["validate", str(study)])
    out = capsys.readouterr().out
    assert f"--preset {study / 'preset.yaml'}" in out
    main(["validate", str(study), "--preset", str(study / "preset.yaml")])
    out = capsys.readouterr().out
    assert "preset lab: named: the preset file" in out
