"""The input contract for identifiers and keys (docs/bad-input.md, "Input contract"):

* puzzle ids are integers or non-empty strings, exactly: every other JSON value (true, 0.0,
  null, lists, objects, "") in the puzzle file is an error, and in a log's queue or an event's
  ``puzzle_id`` a ledgered line; never the text "True"/"0.0"/"None";
* string puzzle ids work end to end (puzzle file, queue, check/skip/advance lines, attempts,
  features);
* ids are compared in Unicode normal form C (every normalisation form of one name is one id);
  look-alike participant ids are an error (same NFC form) or a ledger row (letter case only);
* a key named twice in a JSON object (log line, puzzle file) or a YAML mapping (preset, config)
  is a ledger row or an error naming the key, never "the last one wins".
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synth_study import good_session, ingest, puzzle_file_content, write_study

from nonolab.core.strict import DuplicateKeyError, json_loads, lookalikes, yaml_load
from nonolab.sat.puzzles import PuzzleError, load_study_puzzles
from nonolab.study.features import attempt_features
from nonolab.study.logs import LogLineError, parse_line
from nonolab.study.presets import StudyError, load_preset

T = '"t": "2026-03-01T10:00:00+00:00"'
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

#: every JSON value that is not a puzzle id: booleans, null, numbers with a fraction or
#: exponent (0.0, 1e3), the empty string, lists and objects
NOT_AN_ID = st.one_of(
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just(""),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
#: puzzle ids: 64-bit integers and non-empty strings
AN_ID = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
)


# --- puzzle ids: exact types --------------------------------------------------------------


@SETTINGS
@given(bad=NOT_AN_ID)
def test_puzzle_file_id_of_any_other_json_type_is_an_error(tmp_path, bad):
    content = puzzle_file_content()
    content[1]["id"] = bad
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(
        PuzzleError, match=r"entry 1: puzzle id .* is not an integer or a non-empty"
    ):
        load_study_puzzles(path)


@SETTINGS
@given(bad=NOT_AN_ID)
def test_queue_or_event_id_of_any_other_json_type_is_a_bad_line(bad):
    for line in (
        {"type": "session_start_three", "queue": [0, bad]},
        {"type": "check_bank", "puzzle_id": bad, "solved": True, "mismatches": []},
        {"type": "skip_puzzle", "puzzle_id": bad},
        {"type": "puzzle_advanced", "puzzle_id": bad},
    ):
        text = json.dumps(line)[:-1] + ", " + T + "}"
        with pytest.raises(LogLineError, match="puzzle"):
            parse_line(text, "x.ndjson", 1)


@SETTINGS
@given(good=AN_ID)
def test_puzzle_ids_are_text_in_nfc(tmp_path, good):
    content = puzzle_file_content()
    content[2]["id"] = good
    if str(good) in ("0", "1") or unicodedata.normalize("NFC", str(good)) in ("0", "1"):
        return
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    labels = [p.label for p in load_study_puzzles(path)]
    want = unicodedata.normalize("NFC", good) if isinstance(good, str) else str(good)
    assert labels == ["0", "1", want]
    line = json.dumps({"type": "skip_puzzle", "puzzle_id": good})[:-1] + ", " + T + "}"
    assert parse_line(line).fields["puzzle_id"] == want


def test_true_zero_and_null_ids_are_not_true_0_0_none(tmp_path):
    """Issue example: ``true``, ``0.0``, ``null`` used to become "True", "0.0", "None"."""
    for bad in (True, 0.0, None):
        content = puzzle_file_content()
        content[0]["id"] = bad
        root = write_study(tmp_path / f"s{bad}", {"p1": good_session()}, puzzles=content)
        with pytest.raises(PuzzleError, match="is not an integer or a non-empty string"):
            ingest(root)


# --- string puzzle ids end to end ----------------------------------------------------------

NAMES = {0: "alpha", 1: "b\u00e9ta", 2: "007"}


def _string_id_study(tmp_path, queue_form="NFC"):
    content = puzzle_file_content()
    for item in content:
        item["id"] = NAMES[item["id"]]
    queue = tuple(unicodedata.normalize(queue_form, NAMES[k]) for k in (0, 1, 2))
    other = good_session(queue=(queue[2], queue[0], queue[1]))
    other[0] = {**other[0], "schedule_idx": 7}
    return write_study(tmp_path / "s", {"p1": good_session(queue=queue), "p2": other}, content)


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_string_puzzle_ids_work_end_to_end(tmp_path, form):
    """The puzzle file and the logs name puzzles by strings (docs/data-format.md allows it);
    the queue's ids in any normalisation form match the file's."""
    res = ingest(_string_id_study(tmp_path, form))
    att = res.tables["attempts"]
    assert res.summary["participants"] == 2 and res.summary["participants_excluded"] == 0
    assert sorted(att["puzzle_id"]) == sorted(list(NAMES.values()) * 2)
    assert list(att[att.participant_id == "p1"]["puzzle_id"]) == ["alpha", "b\u00e9ta", "007"]
    led = res.tables["ledger"]
    assert not led["reason"].str.contains("not in the puzzle file|not the attempt").any()
    ev = res.tables["events"]
    checks = ev[ev["type"] == "check_bank"]
    assert set(checks["event_puzzle_id"]) <= set(NAMES.values())
    p = res.tables["participants"].set_index("participant_id")
    assert json.loads(p.loc["p1", "queue_json"]) == ["alpha", "b\u00e9ta", "007"]
    feats = attempt_features(res.tables, threshold_s=2.0)
    assert len(feats) == 6 and set(feats["puzzle_id"]) == set(NAMES.values())
    # "007" stays text: not the integer 7
    assert "007" in set(feats["puzzle_id"]) and "7" not in set(feats["puzzle_id"])


# --- Unicode forms and look-alike participant ids ------------------------------------------


@pytest.mark.parametrize("form", ["NFD", "NFKD"])
def test_lookalike_participant_ids_are_one_id_and_an_error(tmp_path, form):
    """Issue example: the same name in NFC and NFD used to be two participants, silently."""
    nfc = "Jos\u00e9-p1"
    other = unicodedata.normalize(form, nfc)
    assert other != nfc
    sess2 = good_session()
    sess2[0] = {**sess2[0], "schedule_idx": 9}
    root = write_study(tmp_path / "s", {nfc: good_session(), other: sess2})
    with pytest.raises(StudyError, match="given by two log files.*Unicode normal form C"):
        ingest(root)


def test_nfd_file_name_gives_the_nfc_participant_id(tmp_path):
    root = write_study(tmp_path / "s", {unicodedata.normalize("NFD", "Jos\u00e9"): good_session()})
    res = ingest(root)
    assert list(res.tables["participants"]["participant_id"]) == ["Jos\u00e9"]


def test_participant_ids_differing_only_in_case_are_ledgered(tmp_path):
    sess2 = good_session()
    sess2[0] = {**sess2[0], "schedule_idx": 9}
    res = ingest(write_study(tmp_path / "s", {"Anna-p1": good_session(), "anna-P1": sess2}))
    led = res.tables["ledger"]
    row = led[led["reason"].str.contains("only in letter case")]
    assert len(row) == 1 and row.iloc[0]["action"] == "kept"
    assert res.summary["participants"] == 2


@given(st.text(min_size=1, max_size=8))
def test_lookalikes_pairs_every_form_of_a_name(name):
    forms = [unicodedata.normalize(f, name) for f in ("NFC", "NFD")]
    found = lookalikes(forms)
    assert (len(found) == 1) == (forms[0] != forms[1])


# --- repeated keys ------------------------------------------------------------------------


def test_repeated_key_in_a_log_line_is_a_ledgered_line(tmp_path):
    events = good_session()
    lines: list = [json.dumps(e) for e in events]
    # the same move with its value given twice: the first says 1, the second 0
    lines[2] = lines[2].replace('"value": 1', '"value": 1, "value": 0')
    root = write_study(tmp_path / "s", {"p1": lines})
    res = ingest(root)
    led = res.tables["ledger"]
    row = led[led["reason"].str.contains("duplicate key 'value'")]
    assert list(row["source"]) == ["backend/logs/p1.ndjson:3"]
    assert row.iloc[0]["action"] == "excluded"


def test_repeated_key_in_the_puzzle_file_is_an_error(tmp_path):
    text = json.dumps(puzzle_file_content())
    text = text.replace('"id": 1,', '"id": 1, "id": 2,', 1)
    root = write_study(tmp_path / "s", {"p1": good_session()})
    (root / "nonograms_6.json").write_text(text)
    with pytest.raises(PuzzleError, match=r"nonograms_6\.json: duplicate key 'id'"):
        ingest(root)


def test_repeated_key_in_a_preset_is_an_error(tmp_path):
    path = tmp_path / "preset.yaml"
    path.write_text(
        "extends: default\nname: t\npuzzles_per_session: 3\nname: u\n", encoding="utf-8"
    )
    with pytest.raises(StudyError, match=r"preset\.yaml: line 4: duplicate key 'name'"):
        load_preset(path)


@given(
    st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=4),
    st.data(),
)
def test_any_repeated_key_is_refused_json_and_yaml(d, data):
    key = data.draw(st.sampled_from(sorted(d)))
    body = ", ".join(f"{json.dumps(k)}: {v}" for k, v in d.items())
    text = "{" + body + f", {json.dumps(key)}: 0" + "}"
    with pytest.raises(DuplicateKeyError):
        json_loads(text)
    with pytest.raises(DuplicateKeyError):
        yaml_load(text)  # JSON is YAML flow style
    assert json_loads("{" + body + "}") == d


@pytest.mark.parametrize(("first", "second"), [("caf\u00e9", "cafe\u0301"), (3, "3")])
def test_lookalike_puzzle_ids_are_one_id_and_an_error(tmp_path, first, second):
    """Two puzzle-file ids that are one id (the same NFC text, or 3 and "3")."""
    content = puzzle_file_content()
    content[0]["id"], content[1]["id"] = first, second
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(PuzzleError, match="appears twice \\(as .* and .*: the same text"):
        load_study_puzzles(path)
