"""Coded responses cross-checked against the logs (docs/bad-input.md, "Input contract").

Issue example: ``final_difficulty`` values 99, -1 and 0 were used as they are and never checked
against the rating in the log (a theme's p moved 0.0008 -> 0.016), and structural defects of
the coded file passed ``validate`` as "problems: none". Every case here is the minimal study of
docs/data-format.md with one edit of its coded-responses file.
"""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_data_format import write_doc_example

from nonolab.cli.commands.validate import validate_study
from nonolab.stats.themes import load_coded_responses, select_coded_responses
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import StudyError, load_preset

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
CODED = "coded_responses.csv"


def _rows(root):
    with open(root / CODED, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _write(root, rows, fields=None):
    fields = fields or list(rows[0])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for r in rows:
        w.writerow([r.get(f, "") for f in fields])
    (root / CODED).write_text(buf.getvalue(), encoding="utf-8")


def _ingest(root):
    return ingest_study(root, load_preset(root / "preset.yaml"))


def _coded_rows(res):
    led = res.tables["ledger"]
    return led[led["source"].str.startswith(CODED)]


def test_doc_example_coded_file_agrees_with_its_logs(tmp_path):
    write_doc_example(tmp_path)
    assert _coded_rows(_ingest(tmp_path)).empty


@SETTINGS
@given(
    value=st.one_of(
        st.integers(-1000, 1000).filter(lambda v: v not in (-1, 1, 2, 3, 4, 5)).map(str),
        st.sampled_from(["99", "0", "-1.5", "3.5", "1e3", "four", "nan", "inf"]),
    )
)
def test_final_difficulty_that_is_not_a_rating_is_excluded(tmp_path_factory, value):
    """Every value outside -1, 1-5 (99, 0, 3.5, text): a ledger row naming the CSV line, and
    the theme tests leave the row out (the same function decides both)."""
    root = tmp_path_factory.mktemp("c")
    write_doc_example(root)
    rows = _rows(root)
    rows[0]["final_difficulty"] = value
    _write(root, rows)
    res = _ingest(root)
    led = _coded_rows(res)
    assert list(led["source"]) == [f"{CODED}:2"]
    assert led.iloc[0]["action"] == "excluded" and "is not" in led.iloc[0]["reason"]
    coded = load_coded_responses(root / CODED)
    used, dropped = select_coded_responses(coded, {"p1", "p2"})
    assert list(dropped["response_id"]) == ["R0"] and "R0" not in set(used["response_id"])
    problems = validate_study(root, str(root / "preset.yaml"))["problems"]
    assert [p["line"] for p in problems if p["file"] == CODED] == [2]


@pytest.mark.parametrize("value", ["-1", "5", "1.0", ""])
def test_final_difficulty_other_than_the_log_is_a_problem(tmp_path, value):
    """A rating 1-5 or -1 that is not the log's (here 1): kept (used as coded), ledgered, and a
    problem for validate unless the preset says why (themes.coded_ratings_differ)."""
    write_doc_example(tmp_path)
    rows = _rows(tmp_path)
    rows[0]["final_difficulty"] = value
    _write(tmp_path, rows)
    led = _coded_rows(_ingest(tmp_path))
    if value == "1.0":  # the same rating written as a float
        assert led.empty
        return
    assert list(led["action"]) == ["kept"] and "differs from the log" in led.iloc[0]["reason"]
    rep = validate_study(tmp_path, str(tmp_path / "preset.yaml"))
    assert [p["line"] for p in rep["problems"] if p["file"] == CODED] == [2]
    preset = (tmp_path / "preset.yaml").read_text()
    (tmp_path / "preset.yaml").write_text(
        preset + "  coded_ratings_differ: the coders read another export\n"
    )
    rep = validate_study(tmp_path, str(tmp_path / "preset.yaml"))
    assert not [p for p in rep["problems"] if p["file"] == CODED]
    assert rep["known"][-1]["known"] == "coded ratings (preset)"


def test_rating_reason_of_a_puzzle_not_served_is_a_problem(tmp_path):
    write_doc_example(tmp_path)
    rows = _rows(tmp_path)
    rows[1]["puzzle_id"] = "7"
    _write(tmp_path, rows)
    led = _coded_rows(_ingest(tmp_path))
    assert list(led["source"]) == [f"{CODED}:3"]
    assert "not a puzzle of p1's analysed attempts ['0', '1']" in led.iloc[0]["reason"]


def test_unknown_column_is_ledgered(tmp_path):
    write_doc_example(tmp_path)
    rows = _rows(tmp_path)
    for r in rows:
        r["final_difficutly"] = "3"  # misspelt: never read
    _write(tmp_path, rows)
    led = _coded_rows(_ingest(tmp_path))
    assert list(led["id"]) == ["final_difficutly"] and "unknown column" in led.iloc[0]["reason"]
    problems = validate_study(tmp_path, str(tmp_path / "preset.yaml"))["problems"]
    assert [p["line"] for p in problems if p["file"] == CODED] == [1]


@pytest.mark.parametrize("column", ["response_id", "response_kind", "final_difficulty"])
def test_missing_required_column_stops_the_ingest(tmp_path, column):
    """Before: the ingest passed and the themes job failed later."""
    write_doc_example(tmp_path)
    rows = _rows(tmp_path)
    _write(tmp_path, rows, [f for f in rows[0] if f != column])
    with pytest.raises(StudyError, match=f"coded_responses.csv: coded-themes file has no {column}"):
        _ingest(tmp_path)


def test_column_named_twice_stops_the_ingest(tmp_path):
    write_doc_example(tmp_path)
    text = (tmp_path / CODED).read_text().splitlines()
    text[0] += ",code_CLUE"
    (tmp_path / CODED).write_text("\n".join(x + (",0" if i else "") for i, x in enumerate(text)))
    with pytest.raises(StudyError, match=r"names column\(s\) \['code_CLUE'\] twice"):
        _ingest(tmp_path)


def test_response_of_an_unknown_participant_is_excluded(tmp_path):
    write_doc_example(tmp_path)
    rows = _rows(tmp_path)
    rows[0]["source_file"] = "p9.ndjson"
    _write(tmp_path, rows)
    led = _coded_rows(_ingest(tmp_path))
    assert (
        list(led["action"]) == ["excluded"]
        and "not an analysed participant" in led.iloc[0]["reason"]
    )
