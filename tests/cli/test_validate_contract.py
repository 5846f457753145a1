"""`nonolab validate` warns on a puzzle with more than one solution and on a log glob that is
absolute or matches nothing; an empty puzzle file says "no puzzles" (issue examples: a puzzle
file with two solutions passed validate without a warning; an empty puzzle file excluded every
participant; an absolute log glob matched nothing silently)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from synth_study import good_session, puzzle_file_content, write_study

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "study"))
from test_data_format import write_doc_example  # noqa: E402

from nonolab.cli import main
from nonolab.cli.commands.validate import validate_study
from nonolab.sat.puzzles import Puzzle
from nonolab.study.presets import StudyError

#: a 2x2 grid whose clues ([1], [1] / [1], [1]) the anti-diagonal satisfies too
AMBIGUOUS = [[1, 0], [0, 1]]


def test_puzzle_with_two_solutions_is_a_warning(tmp_path, capsys):
    content = puzzle_file_content()
    content.append(
        {"id": 3, "solution": AMBIGUOUS, "clues": Puzzle.from_grid(AMBIGUOUS).clues_dict()}
    )
    root = write_study(tmp_path / "s", {"p1": good_session()}, puzzles=content)
    rep = validate_study(root)
    # the fixture's puzzle 0 is ambiguous too (its mirror image has the same clues)
    assert [(w["id"], w["file"]) for w in rep["warnings"]] == [
        ("0", "nonograms_6.json"),
        ("3", "nonograms_6.json"),
    ]
    assert "more than one solution (another: .#/#.)" in rep["warnings"][1]["reason"]
    main(["validate", str(root)])
    out = capsys.readouterr().out
    assert "warnings: 2" in out and "3: has more than one solution" in out


def test_unique_puzzles_give_no_warning(tmp_path):
    write_doc_example(tmp_path)
    assert validate_study(tmp_path, str(tmp_path / "preset.yaml"))["warnings"] == []


@pytest.mark.parametrize("content", [[], {"puzzles": []}])
def test_empty_puzzle_file_says_no_puzzles(tmp_path, capsys, content):
    root = write_study(tmp_path / "s", {"p1": good_session()}, puzzles=content)
    with pytest.raises(StudyError, match="holds no puzzles"):
        validate_study(root)
    assert main(["validate", str(root)]) == 2
    err = capsys.readouterr().err
    assert "holds no puzzles" in err and "excluded" not in err


@pytest.mark.parametrize(
    ("glob", "says"),
    [
        ("/abs/logs/*.ndjson", "is absolute; globs are relative to the study folder"),
        ("backend/log/*.ndjson", "matches no file under the study folder"),
    ],
)
def test_absolute_or_empty_log_glob_is_a_warning(tmp_path, glob, says):
    root = write_study(tmp_path / "s", {"p1": good_session()})
    (root / "preset.yaml").write_text(
        "extends: default\nname: t\nlog_globs:\n  - backend/logs/*.ndjson\n  - "
        + json.dumps(glob)
        + "\n"
    )
    rep = validate_study(root, str(root / "preset.yaml"))
    warned = [w for w in rep["warnings"] if w["level"] == "preset"]
    assert [w["id"] for w in warned] == [glob] and says in warned[0]["reason"]
