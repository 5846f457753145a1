"""The study data format: the JSON Schemas of a log line, the puzzle file and a coded-responses
row (workflow/schemas/) agree with the code that reads them, on the embedded example study and the
public study; the minimal study of docs/data-format.md ingests; the default preset can be
extended (another puzzle file, any number of puzzles, no coded themes)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from nonolab.core.strict import json_loads
from nonolab.sat.puzzles import PuzzleError, load_study_puzzles
from nonolab.stats.themes import load_coded_responses
from nonolab.study.ingest import ingest_study
from nonolab.study.logs import EVENT_SPECS, LogLineError, parse_line
from nonolab.study.presets import REPO, StudyError, load_preset, log_sources, resolve_preset

SCHEMAS = REPO / "workflow" / "schemas"
EXAMPLE = REPO / "data" / "example-study"
DOC = REPO / "docs" / "data-format.md"

# JSON Schema counts 1.0 as an integer; the log parser does not (a table column holds ints)
_STRICT_INT = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
)
StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=_STRICT_INT
)


def _validator(name: str, cls: Any = jsonschema.Draft202012Validator) -> Any:
    schema = yaml.safe_load((SCHEMAS / f"{name}.schema.yaml").read_text(encoding="utf-8"))
    cls.check_schema(schema)
    return cls(schema)


EVENT = _validator("event_log", StrictValidator)
PUZZLES = _validator("puzzle_file", StrictValidator)
CODED = _validator("coded_responses")


def schema_accepts(raw: bytes) -> bool:
    """Return True when the log line (bytes) is UTF-8 JSON valid under the log-line schema."""
    try:
        text = raw.decode("utf-8").strip().removeprefix("\ufeff")
        obj = json_loads(text)  # refuses NaN/Infinity and repeated keys
    except ValueError:
        return False
    return EVENT.is_valid(obj)


def parser_accepts(raw: bytes) -> bool:
    try:
        parse_line(raw, "<test>", 1)
    except LogLineError:
        return False
    return True


def _log_lines(study: Path) -> list[tuple[str, int, bytes]]:
    """Return (file, line, bytes) of every non-blank line of every log file the study's preset
    reads."""
    out = []
    for src in log_sources(study, resolve_preset(study)):
        if not src.read:
            continue
        for i, raw in enumerate(src.path.read_bytes().split(b"\n"), start=1):
            if raw.strip():
                out.append((src.rel, i, raw))
    return out


def _check_study_logs(study: Path) -> int:
    """Assert the schema accepts exactly the lines the parser accepts; return the number of
    lines the parser refuses."""
    lines = _log_lines(study)
    assert lines
    disagree = [(rel, i) for rel, i, raw in lines if schema_accepts(raw) != parser_accepts(raw)]
    assert disagree == []
    return sum(not parser_accepts(raw) for _, _, raw in lines)


def _check_study_files(study: Path) -> None:
    preset = resolve_preset(study)
    puzzle_path = study / preset.puzzle_file
    PUZZLES.validate(json.loads(puzzle_path.read_text(encoding="utf-8-sig")))
    coded = study / preset.get("themes")["coded_responses"]
    with open(coded, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            CODED.validate(row)


def test_event_types_match_the_parser():
    types = set(EVENT.schema["properties"]["type"]["enum"])
    assert types == set(EVENT_SPECS)
    by_type = {b["if"]["properties"]["type"]["const"]: b["then"] for b in EVENT.schema["allOf"]}
    for typ, spec in EVENT_SPECS.items():
        then = by_type.get(typ, {})
        assert set(then.get("required", [])) == set(spec.required), typ
        assert set(then.get("properties", {})) == set(spec.required) | set(spec.optional), typ


def test_example_study_files_match_the_schemas():
    assert _check_study_logs(EXAMPLE) == 0
    _check_study_files(EXAMPLE)


@pytest.mark.slow  # every line of the public study's logs (~6 s)
def test_public_study_files_match_the_schemas(study_dir):
    _check_study_logs(study_dir)
    _check_study_files(study_dir)


T = '"t": "2026-03-01T10:00:00+00:00"'


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        ('{"type": "session_end", ' + T + "}", True),
        ('{"type": "session_end"}', False),
        ('{"type": "session_end", "t": "2026-03-01T10:00:00"}', False),
        ('{"type": "session_end", "t": 5}', False),
        ('{"type": "teleport", ' + T + "}", False),
        ('{"type": "", ' + T + "}", False),
        ('{"type": "move", "r": 0, "c": 1, "value": -1, ' + T + "}", True),
        ('{"type": "move", "r": 0, "c": 1, "value": 1.0, ' + T + "}", False),
        ('{"type": "move", "r": -1, "c": 1, "value": 1, ' + T + "}", False),
        ('{"type": "move", "r": 0, "c": 1, "value": 2, ' + T + "}", False),
        ('{"type": "move", "r": 0, "c": true, "value": 1, ' + T + "}", False),
        ('{"type": "move", "r": 0, "c": 99999999999999999999, "value": 1, ' + T + "}", True),
        ('{"type": "hint", "r": 0, "c": 99999999999999999999, ' + T + "}", False),
        ('{"type": "survey_submit", "survey_type": "puzzle_3", "answers": {}, ' + T + "}", True),
        ('{"type": "survey_submit", "survey_type": "puzzle_0", "answers": {}, ' + T + "}", False),
        ('{"type": "survey_submit", "survey_type": "pre", ' + T + "}", False),
        ('{"type": "survey_submit", "survey_type": "post", "answers": {"x": NaN}, ' + T + "}", False),
        ('{"type": "undo", "diffs_len": null, ' + T + "}", True),
        ('{"type": "undo", "label": 3, ' + T + "}", False),
        ('{"type": "drag", "mode": "flip", "normalized_start": {"r": 0, "c": 0}, '
         '"normalized_end": {"r": 0, "c": 1}, "changed_cells": 2, ' + T + "}", True),
        ('{"type": "drag", "mode": "paint", "normalized_start": {"r": 0, "c": 0}, '
         '"normalized_end": {"r": 0, "c": 1}, "changed_cells": 2, ' + T + "}", False),
        ('{"type": "drag", "mode": "flip", "normalized_start": {"r": 0}, '
         '"normalized_end": {"r": 0, "c": 1}, "changed_cells": 2, ' + T + "}", False),
        ('{"type": "ended_without_full_completion", "solved_flags": [true, null], ' + T + "}", True),
        ('{"type": "ended_without_full_completion", "solved_flags": [1], ' + T + "}", False),
        ('{"type": "check_bank", "puzzle_id": 2, "solved": 1, "mismatches": [], ' + T + "}", False),
        ('{"type": "session_start_three", "queue": [0, "1"], ' + T + "}", True),
        ('{"type": "session_start_three", "queue": [0, "caf\\u00e9"], ' + T + "}", True),
        ('{"type": "session_start_three", "queue": [0, true], ' + T + "}", False),
        ('{"type": "session_start_three", "queue": [0, 1.0], ' + T + "}", False),
        ('{"type": "session_start_three", "queue": [0, null], ' + T + "}", False),
        ('{"type": "session_start_three", "queue": [0, ""], ' + T + "}", False),
        ('{"type": "check_bank", "puzzle_id": "b", "solved": true, "mismatches": [], ' + T + "}", True),
        ('{"type": "skip_puzzle", "puzzle_id": false, ' + T + "}", False),
        ('{"type": "move", "r": 0, "c": 1, "value": 1, "value": 0, ' + T + "}", False),
        ('{"type": "move", "type": "move", "r": 0, "c": 1, "value": 1, ' + T + "}", False),
        ('[1, 2]', False),
    ],
)  # fmt: skip
def test_schema_and_parser_agree_on_edge_lines(line, ok):
    raw = line.encode("utf-8")
    assert parser_accepts(raw) is ok
    assert schema_accepts(raw) is ok


def test_schemas_reject_bad_puzzles_and_coded_rows():
    assert not PUZZLES.is_valid([{"id": 0, "solution": [[2]]}])
    assert not PUZZLES.is_valid([{"id": 0}])
    assert PUZZLES.is_valid({"puzzles": [{"id": "a", "solution": [[True]]}]})
    row = {
        "response_id": "R0",
        "participant_id": "P1",
        "source_file": "p1.ndjson",
        "response_kind": "rating_reason",
        "final_difficulty": "3.0",
        "code_HINT": "1",
    }
    assert CODED.is_valid(row)
    assert not CODED.is_valid(row | {"code_HINT": "2"})
    assert not CODED.is_valid({k: v for k, v in row.items() if k != "code_HINT"})
    assert not CODED.is_valid({k: v for k, v in row.items() if k != "source_file"})


# --- the minimal study of docs/data-format.md ------------------------------------------------

_FILE_BLOCK = re.compile(r"^File `([^`]+)`:\n\n```[a-z]*\n(.*?)^```", re.M | re.S)


def write_doc_example(root: Path) -> dict[str, str]:
    """Write the files of the doc's minimal study under ``root``; return ``{path: text}``."""
    files = dict(_FILE_BLOCK.findall(DOC.read_text(encoding="utf-8")))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return files


def test_doc_example_study_ingests(tmp_path):
    files = write_doc_example(tmp_path)
    assert {"preset.yaml", "puzzles.json", "coded_responses.csv"} <= set(files)
    logs = [f for f in files if f.startswith("backend/logs/")]
    assert len(logs) == 2
    for rel in logs:
        for raw in (tmp_path / rel).read_bytes().splitlines():
            assert schema_accepts(raw) and parser_accepts(raw), raw
    PUZZLES.validate(json.loads((tmp_path / "puzzles.json").read_text()))
    with open(tmp_path / "coded_responses.csv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            CODED.validate(row)
    assert len(load_coded_responses(tmp_path / "coded_responses.csv")) == 3

    preset = resolve_preset(tmp_path, str(tmp_path / "preset.yaml"))
    assert preset.name == "tiny" and preset.puzzle_file == "puzzles.json"
    result = ingest_study(tmp_path, preset)
    s = result.summary
    assert s["participants"] == 2 and s["attempts"] == 4
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]
    assert s["events_excluded"] == 0
    ledger = result.tables["ledger"]
    assert set(ledger["action"]) <= {"kept"}  # only notes (p2 has no post-survey)
    att = result.tables["attempts"].set_index(["participant_id", "order"])
    assert bool(att.loc[("p1", 2), "solved"]) and bool(att.loc[("p2", 1), "skipped"])
    ratings = result.tables["ratings"].set_index(["participant_id", "order"])
    assert ratings.loc[("p1", 2), "final_difficulty"] == 2


# --- the default preset, generalised ---------------------------------------------------------


def _tiny_study(root: Path, puzzle_file: str, n_puzzles: int, coded: bool) -> None:
    """Write the doc's study under ``root`` with ``n_puzzles`` puzzles in ``puzzle_file`` and the
    coded responses where the default preset looks for them (or none)."""
    write_doc_example(root)
    (root / "preset.yaml").unlink()
    base = json.loads((root / "puzzles.json").read_text())
    (root / "puzzles.json").unlink()
    extra = [{"id": 10 + i, "solution": [[1] * (i + 1)]} for i in range(n_puzzles - 2)]
    (root / puzzle_file).write_text(json.dumps(base + extra))
    moved = root / "riyad-analysis" / "derived" / "coded_responses.csv"
    if coded:
        moved.parent.mkdir(parents=True)
        (root / "coded_responses.csv").rename(moved)
    else:
        (root / "coded_responses.csv").unlink()


def _user_preset(root: Path, text: str) -> Path:
    path = root / "my-preset.yaml"
    path.write_text(text)
    return path


def test_user_preset_extends_default(tmp_path):
    study = tmp_path / "study"
    _tiny_study(study, "puzzles-5.json", 5, coded=False)
    path = _user_preset(
        tmp_path,
        "extends: default\nname: mine\npuzzle_file: puzzles-5.json\npuzzles_per_session: 2\n",
    )
    preset = load_preset(path)
    default = load_preset(REPO / "config" / "studies" / "default.yaml")
    assert preset.data["log_globs"] == default.data["log_globs"]
    assert preset.data["themes"] == default.data["themes"]
    assert "extends" not in preset.data
    result = ingest_study(study, preset)
    assert result.summary["participants"] == 2
    assert len(result.tables["puzzles"]) == 5
    # the coded-responses file the default preset names is absent: optional, no ledger row
    assert not result.tables["ledger"]["source"].str.contains("coded").any()


def test_user_preset_with_coded_themes_and_without(tmp_path):
    study = tmp_path / "study"
    _tiny_study(study, "nonograms_6.json", 2, coded=True)
    with_themes = _user_preset(tmp_path, "extends: default\npuzzles_per_session: 2\n")
    res = ingest_study(study, load_preset(with_themes))
    assert res.summary["participants"] == 2
    without = _user_preset(tmp_path, "extends: default\npuzzles_per_session: 2\nthemes: null\n")
    preset = load_preset(without)
    assert "themes" not in preset.data
    res2 = ingest_study(study, preset)
    assert res2.tables["ledger"].equals(res.tables["ledger"])


def test_user_preset_errors(tmp_path):
    bad = _user_preset(tmp_path, "extends: default\npuzle_file: x.json\n")
    with pytest.raises(StudyError, match="puzle_file"):
        load_preset(bad)
    missing = _user_preset(tmp_path, "extends: no-such-preset\n")
    with pytest.raises(StudyError, match="does not exist"):
        load_preset(missing)
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(StudyError, match="cycle"):
        load_preset(tmp_path / "a.yaml")


def test_puzzle_loader_agrees_with_schema_on_bad_cells(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"id": 0, "solution": [[1, 2]]}]))
    assert not PUZZLES.is_valid(json.loads(path.read_text()))
    with pytest.raises(PuzzleError):
        load_study_puzzles(path)


def _dry_run(tmp_path: Path, study: Path, preset: Path) -> str:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        str(REPO / "config" / "config.yaml"),
        "--directory",
        str(tmp_path / "work"),
        "--cores",
        "1",
        "-n",
        "--config",
        f"study_dir={study}",
        f"preset={preset}",
        "--",
        "all",
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(REPO / "src")}
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.parametrize("coded", [True, False])
def test_workflow_themes_are_optional(tmp_path, coded):
    study = tmp_path / "study"
    write_doc_example(study)
    if not coded:
        (study / "coded_responses.csv").unlink()
    out = _dry_run(tmp_path, study, study / "preset.yaml")
    assert ("themes " in out) is coded
    assert ("fig_theme_prevalence" in out) is coded
    assert "ingest " in out
