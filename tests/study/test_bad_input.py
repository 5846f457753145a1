"""Bad-input catalogue (docs/bad-input.md): each class gives a clear error naming the file/line,
or a ledger row with a reason, and nothing else is lost. Studies are synthetic, in tmp dirs."""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from synth_study import (
    GRIDS,
    PRE,
    ev,
    good_session,
    ingest,
    puzzle_file_content,
    write_log,
    write_study,
)

from nonolab.sat.puzzles import PuzzleError
from nonolab.study.features import attempt_features
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import REPO, StudyError, load_preset, resolve_preset
from nonolab.study.schemas import validate_table

N_GOOD = len(good_session())


def other_good_session():
    """good_session() with another schedule index: another session, not a copy of Bad-p1's."""
    events = good_session()
    events[0] = {**events[0], "schedule_idx": 5}
    return events


def study_with(tmp_path, bad_events, name="Bad-p1", good=True, **kw):
    sessions = {name: bad_events}
    if good:
        sessions["Good-p2"] = other_good_session()
    return write_study(tmp_path / "study", sessions, **kw)


def ledger_for(res, pid="Bad-p1"):
    """Ledger rows of ``pid``, less the -1 initial rating that good_session logs on purpose."""
    led = res.tables["ledger"]
    led = led[led["id"].str.startswith(pid)]
    return led[~led["reason"].str.contains("value for a skipped puzzle", regex=False)]


def assert_good_intact(res):
    """The well-formed participant is fully used and the event accounting adds up."""
    att = res.tables["attempts"]
    assert (att.participant_id == "Good-p2").sum() == 3
    ev = res.tables["events"]
    assert ev[ev.participant_id == "Good-p2"]["line_no"].nunique() == N_GOOD
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]


def with_line(events, index, line):
    out = list(events)
    out.insert(index, line)
    return out


# --- study-level errors ---------------------------------------------------------------------


def test_empty_study_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "nonograms_6.json").write_text(json.dumps(puzzle_file_content()))
    with pytest.raises(StudyError, match="no log files under .*empty"):
        ingest(tmp_path / "empty")


def test_missing_study_folder(tmp_path):
    with pytest.raises(StudyError, match="does not exist"):
        ingest(tmp_path / "nowhere")


def test_missing_puzzle_file(tmp_path):
    root = study_with(tmp_path, good_session())
    (root / "nonograms_6.json").unlink()
    with pytest.raises(StudyError, match=r"puzzle file .*nonograms_6\.json does not exist"):
        ingest(root)


def test_clues_contradict_solution(tmp_path):
    content = puzzle_file_content()
    content[1]["clues"]["rows"][0] = [2]  # solution row 0 reads [1, 1]
    root = study_with(tmp_path, good_session(), puzzles=content)
    with pytest.raises(PuzzleError, match=r"nonograms_6\.json: puzzle id 1: .*row 0 clue \[2\]"):
        ingest(root)


def test_over_long_clue(tmp_path):
    content = puzzle_file_content()
    content[0]["clues"]["rows"][0] = [2, 2]
    del content[0]["solution"]
    root = study_with(tmp_path, good_session(), puzzles=content)
    with pytest.raises(PuzzleError, match=r"puzzle id 0: .*row 0 clue \[2, 2\] needs 5 cells"):
        ingest(root)


def test_unsatisfiable_clues(tmp_path):
    content = puzzle_file_content()
    content[2]["clues"]["rows"][0] = [3]
    del content[2]["solution"]
    root = study_with(tmp_path, good_session(), puzzles=content)
    with pytest.raises(PuzzleError, match="puzzle id 2: .*no grid satisfies both"):
        ingest(root)


def test_puzzle_without_solution_is_refused(tmp_path):
    content = puzzle_file_content()
    del content[0]["solution"]
    root = study_with(tmp_path, good_session(), puzzles=content)
    with pytest.raises(StudyError, match="puzzle id 0: no solution"):
        ingest(root)


def test_duplicated_participant_file(tmp_path):
    root = write_study(
        tmp_path / "s", {"Ann-p1.ndjson": good_session(), "Ann-p1.json": good_session()}
    )
    with pytest.raises(StudyError, match=r"'Ann-p1'.*Ann-p1\.json and .*Ann-p1\.ndjson"):
        ingest(root)


def test_misspelt_preset_key(tmp_path):
    text = (REPO / "config" / "studies" / "default.yaml").read_text()
    bad = tmp_path / "p.yaml"
    bad.write_text(text.replace("puzzles_per_session", "puzzles_per_sesion"))
    with pytest.raises(StudyError, match=r"p\.yaml: invalid preset.*puzzles_per_sesion"):
        load_preset(bad)


def test_misspelt_config_key():
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    jsonschema.validate(cfg, schema)
    cfg["features"] = {"keep_initial_rating_sentinal": True}
    with pytest.raises(jsonschema.ValidationError, match="keep_initial_rating_sentinal"):
        jsonschema.validate(cfg, schema)


def test_preset_mapping_names_a_missing_file(tmp_path):
    root = study_with(tmp_path, good_session())
    p = tmp_path / "p.yaml"
    p.write_text(
        "name: x\npuzzle_file: nonograms_6.json\nlog_globs: [backend/logs/*.ndjson]\n"
        "puzzles_per_session: 3\nparticipants:\n  default_participant_id: stem\n  files:\n"
        "    - {file: backend/logs/Gone.ndjson, participant_id: Gone-p1}\n"
    )
    with pytest.raises(StudyError, match="Gone.ndjson"):
        ingest_study(root, load_preset(p))


# --- line-level problems: ledgered, the rest of the file kept --------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"type": "move", "r": 0, "c": 0, "value": 1, "t": "2026-01-05T12:00:12\xff"}', "UTF-8"),
        ("this is not json", "not a JSON object"),
        ("[1, 2, 3]", "not a JSON object"),
        ('{"type": "move", "r": 0, "c": 0, "value": 1}', "has no time 't'"),
        ('{"type": "move", "r": 0, "c": 0, "value": 1, "t": "yesterday"}', "not an ISO-8601"),
        (
            '{"type": "move", "r": 0, "c": 0, "value": 1, "t": "2026-01-05T12:00:12"}',
            "no time zone",
        ),
        ('{"type": "move", "r": 0, "c": 0, "value": 7, "t": "2026-01-05T12:00:12+00:00"}', "value"),
        (
            '{"type": "move", "r": 0, "c": 0, "value": NaN, "t": "2026-01-05T12:00:12+00:00"}',
            "JSON",
        ),
        ('{"r": 0, "t": "2026-01-05T12:00:12+00:00"}', "'type'"),
    ],
    ids=[
        "non-utf8",
        "non-json",
        "non-object",
        "missing-t",
        "bad-t",
        "naive-t",
        "bad-value",
        "nan",
        "no-type",
    ],
)
def test_bad_line_is_ledgered(tmp_path, line, reason):
    events = with_line(good_session(), 3, line)
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert len(led) == 1
    row = led.iloc[0]
    assert row["level"] == "line" and row["source"] == "backend/logs/Bad-p1.ndjson:4"
    assert reason in row["reason"] and row["action"] == "excluded"
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    assert res.summary["events_excluded"] == 1
    assert res.summary["events_by_type"]["(unparsable)"] == 1
    assert_good_intact(res)


def test_truncated_last_line(tmp_path):
    root = study_with(tmp_path, good_session())
    path = root / "backend" / "logs" / "Bad-p1.ndjson"
    write_log(path, good_session() + ['{"type": "move", "r": 1, "c'], newline_at_end=False)
    res = ingest(root)
    led = ledger_for(res)
    assert led["reason"].str.startswith("truncated last line").tolist() == [True]
    assert led["source"].tolist() == [f"backend/logs/Bad-p1.ndjson:{N_GOOD + 1}"]
    assert_good_intact(res)


def test_unknown_event_type(tmp_path):
    events = with_line(good_session(), 4, ev("teleport", 12.5, r=0, c=0))
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["reason"].tolist() == ["unknown event type 'teleport'"]
    assert res.summary["events_by_type"]["(unknown)"] == 1
    assert sum(res.summary["events_by_type"].values()) == res.summary["events_read"]
    assert_good_intact(res)


def test_timestamps_going_backwards(tmp_path):
    events = good_session()
    late = events.pop(3)  # move at 13 s, written after the move at 17 s
    events.insert(4, late)
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["action"].tolist() == ["kept"]
    assert "earlier than the previous line" in led["reason"].iloc[0]
    # events are used in time order: features equal those of the ordered log
    ref = ingest(study_with(tmp_path / "ref", good_session()))
    a = res.tables["events"].query("participant_id == 'Bad-p1'")
    b = ref.tables["events"].query("participant_id == 'Bad-p1'")
    assert a["t"].tolist() == b["t"].tolist()
    assert a["t"].is_monotonic_increasing


def test_duplicate_event(tmp_path):
    events = good_session()
    events.insert(3, events[2])
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["reason"].tolist() == ["duplicate of line 3"]
    assert led["source"].tolist() == ["backend/logs/Bad-p1.ndjson:4"]
    assert_good_intact(res)


def test_move_outside_the_grid(tmp_path):
    events = with_line(good_session(), 3, ev("move", 12.5, r=3, c=0, value=1))
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["reason"].tolist() == ["move cell (3,0) outside the 3x3 grid"]
    assert_good_intact(res)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"changed_cells": 5}, "changed_cells=5 but its rectangle has 2 cells"),
        ({"normalized_end": {"r": 3, "c": 1}}, "outside the 3x3 grid"),
        ({"start": {"r": 0, "c": 0}}, "start/end do not span"),
        ({"mode": "paint"}, "drag mode must be one of"),
        ({"normalized_start": {"r": 1}}, "expected a cell"),
    ],
)
def test_drag_with_inconsistent_cells(tmp_path, change, reason):
    events = good_session()
    events[5] = {**events[5], **change}
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert len(led) == 1 and reason in led["reason"].iloc[0]
    assert led["source"].iloc[0] == "backend/logs/Bad-p1.ndjson:6"
    assert_good_intact(res)


def test_byte_order_mark_and_crlf_are_tolerated(tmp_path):
    root = study_with(tmp_path, good_session())
    path = root / "backend" / "logs" / "Bad-p1.ndjson"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    res = ingest(root)
    assert len(ledger_for(res)) == 0
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    assert_good_intact(res)


def test_blank_lines_are_not_events(tmp_path):
    events = with_line(good_session(), 3, "   ")
    res = ingest(study_with(tmp_path, events))
    assert len(ledger_for(res)) == 0
    assert res.summary["events_read"] == 2 * N_GOOD


# --- participant- and attempt-level problems -------------------------------------------------


def test_participant_with_no_pre_survey(tmp_path):
    events = [e for e in good_session() if e.get("survey_type") != "pre"]
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led[["level", "reason"]].values.tolist() == [["participant", "no pre-survey"]]
    assert "Bad-p1" not in set(res.tables["participants"]["participant_id"])
    assert res.summary["events_excluded"] == len(events)
    assert_good_intact(res)


def test_incomplete_surveys(tmp_path):
    events = [e for e in good_session() if e.get("survey_type") not in ("puzzle_3", "post")]
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["reason"].tolist() == ["incomplete surveys: missing ['puzzle_3']"]
    assert_good_intact(res)


def test_no_post_survey(tmp_path):
    events = [e for e in good_session() if e.get("survey_type") != "post"]
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led[["level", "reason", "action"]].values.tolist() == [
        ["participant", "no post-survey: final ratings missing", "kept"]
    ]
    rat = res.tables["ratings"]
    assert rat[rat.participant_id == "Bad-p1"]["final_difficulty"].isna().all()
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    assert_good_intact(res)


def test_session_without_completion_event(tmp_path):
    """The solved flags are missing, the attempts are kept and the features table is valid."""
    ends = ("completed_all_three", "ended_without_full_completion")
    events = [e for e in good_session() if e["type"] not in ends]
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led[["level", "reason", "action"]].values.tolist() == [
        [
            "participant",
            "no completion event: the platform's solved and skipped flags are missing",
            "kept",
        ]
    ]
    att = res.tables["attempts"]
    assert att[att.participant_id == "Bad-p1"]["solved"].isna().all()
    feats = attempt_features(res.tables, 2.0)
    validate_table(feats, "features")
    mine = feats[feats.participant_id == "Bad-p1"]
    assert mine["solved"].isna().all() and mine["time_to_solve_s"].notna().all()
    assert feats[feats.participant_id == "Good-p2"]["solved"].notna().all()
    assert_good_intact(res)


def test_empty_log_file(tmp_path):
    res = ingest(study_with(tmp_path, []))
    assert ledger_for(res)["reason"].tolist() == [
        "no session_start_three event with a puzzle queue"
    ]
    assert_good_intact(res)


@pytest.mark.parametrize("bad", [0, 6, 3.5, "four"])
def test_rating_outside_1_to_5(tmp_path, bad):
    events = good_session()
    post = events[-1]
    events[-1] = {**post, "answers": {**post["answers"], "puzzle_1_rate_again": bad}}
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["level"].tolist() == ["attempt"] and led["id"].tolist() == ["Bad-p1/1"]
    assert "final rating" in led["reason"].iloc[0] and "not an integer 1-5" in led["reason"].iloc[0]
    assert led["source"].iloc[0] == f"backend/logs/Bad-p1.ndjson:{len(events)}"
    rat = res.tables["ratings"].set_index(["participant_id", "order"])
    assert (
        rat.loc[("Bad-p1", 1), "final_difficulty"] is None
        or str(rat.loc[("Bad-p1", 1), "final_difficulty"]) == "<NA>"
    )
    assert_good_intact(res)


def test_skill_outside_1_to_10(tmp_path):
    events = good_session()
    events[1] = {**events[1], "answers": {**PRE, "skill_nonogram": 11}}
    res = ingest(study_with(tmp_path, events))
    assert "skill_nonogram=11 is not an integer 1-10" in ledger_for(res)["reason"].iloc[0]
    part = res.tables["participants"].set_index("participant_id")
    assert str(part.loc["Bad-p1", "skill_nonogram"]) == "<NA>"


def test_puzzle_id_not_in_puzzle_file(tmp_path):
    events = good_session(queue=(0, 1, 9))
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["source"].tolist() == ["backend/logs/Bad-p1.ndjson:1"]
    assert "puzzle id(s) ['9'] of the session queue" in led["reason"].iloc[0]
    assert "are not in the puzzle file nonograms_6.json (it holds 0, 1, 2)" in led["reason"].iloc[0]
    assert_good_intact(res)


@settings(max_examples=25, deadline=None)
@given(queue=st.lists(st.sampled_from(["0", "1", "2", "7", "12", "p9"]), min_size=1, max_size=6))
def test_a_log_of_another_study_names_the_puzzles_the_file_lacks(tmp_path_factory, queue):
    """Generated: a session queue of any length naming puzzles the puzzle file may lack (a log
    from another study). The ledger row names every unknown id, whatever the queue's length;
    a wrong count alone is said only when every puzzle is known."""
    tmp = tmp_path_factory.mktemp("other")
    events = good_session()
    events[0] = {**events[0], "queue": [int(q) if q.isdigit() else q for q in queue]}
    res = ingest(study_with(tmp, events))
    reason = ledger_for(res)["reason"].iloc[0]
    unknown = [q for q in queue if q not in ("0", "1", "2")]
    if unknown:
        assert f"puzzle id(s) {unknown} of the session queue" in reason
        assert "not in the puzzle file" in reason
        if len(queue) != 3:
            assert f"also serves {len(queue)} puzzles" in reason
    elif len(queue) != 3:
        assert reason.startswith(f"session serves {len(queue)} puzzles, the preset expects")
    assert_good_intact(res)


def test_check_naming_unknown_puzzle(tmp_path):
    events = good_session()
    events[8] = {**events[8], "puzzle_id": 42}
    res = ingest(study_with(tmp_path, events))
    reasons = ledger_for(res)["reason"].tolist()
    assert any("puzzle id 42, not in the puzzle file" in r for r in reasons)
    assert any("names puzzle 42 but the attempt is puzzle 0" in r for r in reasons)
    assert_good_intact(res)


@pytest.mark.parametrize("queue", [(0, 1), (0, 1, 2, 0)])
def test_session_with_other_than_configured_puzzles(tmp_path, queue):
    events = good_session()
    events[0] = {**events[0], "queue": list(queue)}
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led["reason"].tolist() == [f"session serves {len(queue)} puzzles, the preset expects 3"]
    assert_good_intact(res)


def test_second_survey_submission(tmp_path):
    events = good_session()
    events.insert(12, {**events[11], "answers": {"difficulty": 5}})
    res = ingest(study_with(tmp_path, events))
    assert ledger_for(res)["reason"].tolist() == ["second puzzle_1 survey; the first is used"]
    rat = res.tables["ratings"].set_index(["participant_id", "order"])
    assert rat.loc[("Bad-p1", 1), "initial_difficulty"] == 2


def test_move_outside_any_puzzle_window(tmp_path):
    events = with_line(good_session(), 1, ev("move", 5, r=0, c=0, value=1))
    res = ingest(study_with(tmp_path, events))
    assert ledger_for(res)["reason"].tolist() == ["move outside a puzzle window (pre)"]
    assert_good_intact(res)


def test_coded_themes_naming_unknown_participants_or_codes(tmp_path):
    root = study_with(tmp_path, good_session())
    derived = root / "riyad-analysis" / "derived"
    derived.mkdir(parents=True)
    (derived / "coded_responses.csv").write_text(
        "response_id,participant_id,source_file,response_kind,final_difficulty,text,code_FOOT,"
        "code_ZZZ,codes_str\n"
        "R1,P1,Good-p2.ndjson,strategy,,easy start,1,0,FOOT\n"
        "R2,P2,Ghost-p7.ndjson,strategy,,hard,0,0,\n"
        "R3,P1,Good-p2.ndjson,strategy,,odd,2,0,FOOT|NOPE\n"
    )
    (derived / "codebook.md").write_text("| Code | Theme |\n|---|---|\n| `FOOT` | Footholds |\n")
    preset = tmp_path / "p.yaml"
    line = "  coded_responses: riyad-analysis/derived/coded_responses.csv\n"
    text = (REPO / "config" / "studies" / "default.yaml").read_text()
    assert line in text
    preset.write_text(text.replace(line, line + "  codebook: riyad-analysis/derived/codebook.md\n"))
    res = ingest_study(root, load_preset(preset))
    led = res.tables["ledger"]
    th = led[led.source.str.startswith("riyad-analysis")]
    # the fixture codes no rating reason: each participant's logged reasons are uncoded rows;
    # it codes strategies, and Bad-p1's logged strategy answer has no row
    uncoded = th[th.reason.str.contains("that no coded row codes")]
    assert sorted(uncoded["id"]) == ["Bad-p1", "Bad-p1", "Good-p2"]
    assert uncoded.reason.str.contains("strategy answer of Bad-p1").sum() == 1
    th = th.drop(uncoded.index)
    got = sorted(zip(th.source, th.reason, strict=True))
    src = "riyad-analysis/derived/coded_responses.csv"
    assert got == sorted(
        [
            (f"{src}:1", "column code_ZZZ: code 'ZZZ' is not in the codebook; column ignored"),
            (f"{src}:3", "coded response of 'Ghost-p7', not an analysed participant"),
            (f"{src}:4", "code_FOOT = '2' is not 0/1"),
            (f"{src}:4", "codes_str names unknown code 'NOPE'"),
        ]
    )
    assert_good_intact(res)


def test_default_preset_reads_json_logs_too(tmp_path):
    root = write_study(tmp_path / "s", {"Ann-p1.json": good_session()})
    res = ingest(root)
    assert res.tables["participants"]["source_file"].tolist() == ["backend/logs/Ann-p1.json"]
    assert resolve_preset(root).name == "default"
    assert set(GRIDS) == {0, 1, 2}


# --- copies, presets, queues, puzzle-file values ---------------------------------------------


def assert_identity(res):
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]


@pytest.mark.parametrize("copy", ["Bad-p1 (1).ndjson", "Copy-of-Bad-p1.ndjson", "Bad-p1.json"])
def test_copied_log_is_one_participant(tmp_path, copy):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    # a re-saved copy (CRLF line ends) is the same session
    (logs / copy).write_bytes((logs / "Bad-p1.ndjson").read_bytes().replace(b"\n", b"\r\n"))
    if copy == "Bad-p1.json":  # same participant id: the preset must say which one is used
        with pytest.raises(StudyError, match="Bad-p1"):
            ingest(root)
        return
    res = ingest(root)
    assert sorted(res.tables["participants"]["participant_id"]) == ["Bad-p1", "Good-p2"]
    assert len(res.tables["attempts"]) == 6
    led = res.tables["ledger"]
    row = led[led["source"] == f"backend/logs/{copy}"]
    assert row[["level", "action"]].values.tolist() == [["file", "excluded"]]
    assert row["reason"].iloc[0].startswith("duplicate of backend/logs/Bad-p1.ndjson")
    assert res.summary["files_excluded"] == 1
    assert res.summary["events_read"] == 3 * N_GOOD
    assert_good_intact(res)


def test_copied_log_keeps_the_preset_mapped_file(tmp_path):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    (logs / "A-copy-with-a-long-name.ndjson").write_bytes((logs / "Bad-p1.ndjson").read_bytes())
    p = tmp_path / "p.yaml"
    p.write_text(
        "name: x\npuzzle_file: nonograms_6.json\nlog_globs: [backend/logs/*.ndjson]\n"
        "puzzles_per_session: 3\nparticipants:\n  default_participant_id: stem\n  files:\n"
        "    - {file: backend/logs/A-copy-with-a-long-name.ndjson, participant_id: Ann-p1}\n"
    )
    res = ingest_study(root, load_preset(p))
    assert sorted(res.tables["participants"]["participant_id"]) == ["Ann-p1", "Good-p2"]
    led = res.tables["ledger"]
    assert led[led["source"] == "backend/logs/Bad-p1.ndjson"]["reason"].str.startswith(
        "duplicate of backend/logs/A-copy-with-a-long-name.ndjson"
    ).tolist() == [True]
    assert_identity(res)


def test_crlf_puzzle_file_keeps_its_preset(tmp_path):
    root = study_with(tmp_path, good_session())
    puzzles = root / "nonograms_6.json"
    puzzles.write_text(json.dumps(puzzle_file_content(), indent=2))
    preset = tmp_path / "p.yaml"
    text = (REPO / "config" / "studies" / "default.yaml").read_text()
    preset.write_text(text.replace("name: default", "name: mine"))
    from nonolab.study.presets import fingerprint_matches, puzzle_file_hashes

    mine = load_preset(preset)
    mine.data["fingerprint"] = {"puzzle_hashes": puzzle_file_hashes(puzzles)}
    assert fingerprint_matches(mine, puzzles)
    puzzles.write_bytes(b"\xef\xbb\xbf" + puzzles.read_bytes().replace(b"\n", b"\r\n"))
    assert fingerprint_matches(mine, puzzles)  # same puzzles, other bytes
    other = puzzle_file_content()
    other[0], other[1] = {**other[1], "id": 0}, {**other[0], "id": 1}  # ids swapped
    puzzles.write_text(json.dumps(other))
    assert not fingerprint_matches(mine, puzzles)


@pytest.mark.parametrize("queue", [(0, 0, 1), (2, 1, 2)])
def test_queue_naming_a_puzzle_twice(tmp_path, queue):
    events = good_session(queue=queue)
    res = ingest(study_with(tmp_path, events))
    led = ledger_for(res)
    assert led[["level", "source", "action"]].values.tolist() == [
        ["participant", "backend/logs/Bad-p1.ndjson:1", "excluded"]
    ]
    assert "more than once" in led["reason"].iloc[0]
    assert "Bad-p1" not in set(res.tables["participants"]["participant_id"])
    assert_good_intact(res)


@pytest.mark.parametrize("cell", [2, -1, 0.5, "1", None, float("nan")])
def test_solution_cell_other_than_0_or_1(tmp_path, cell):
    content = copy.deepcopy(puzzle_file_content())  # the grids are shared with GRIDS
    content[1]["solution"][2][1] = cell
    root = study_with(tmp_path, good_session())
    text = json.dumps(content)  # NaN is written as the constant NaN: not JSON
    (root / "nonograms_6.json").write_text(text)
    with pytest.raises(PuzzleError, match=r"nonograms_6\.json: (puzzle id 1|not a JSON)") as e:
        ingest(root)
    if cell == cell:
        assert "cell (2,1)" in str(e.value) and "not 0 or 1" in str(e.value)


def test_solution_without_clues_other_than_0_or_1(tmp_path):
    content = copy.deepcopy(puzzle_file_content())
    del content[2]["clues"]
    content[2]["solution"][0][1] = 7
    root = study_with(tmp_path, good_session(), puzzles=content)
    with pytest.raises(PuzzleError, match=r"nonograms_6\.json: puzzle id 2: .*cell \(0,1\) is 7"):
        ingest(root)


@pytest.mark.parametrize(
    ("clue", "match"),
    [("1e400", "block length inf"), ("NaN", "not a JSON puzzle file"), ("-1e400", "-inf")],
)
def test_clue_out_of_range(tmp_path, clue, match):
    root = study_with(tmp_path, good_session())
    text = json.dumps(puzzle_file_content()).replace('"rows": [[2]', f'"rows": [[{clue}]', 1)
    assert clue in text
    (root / "nonograms_6.json").write_text(text)
    with pytest.raises(PuzzleError, match=rf"nonograms_6\.json: .*{re.escape(match)}"):
        ingest(root)


def test_deeply_nested_puzzle_file(tmp_path):
    root = study_with(tmp_path, good_session())
    (root / "nonograms_6.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(PuzzleError, match=r"nonograms_6\.json: not a JSON puzzle file"):
        ingest(root)


# --- files that are not plain logs matched by the globs --------------------------------------


def _file_rows(res, rel):
    led = res.tables["ledger"]
    return led[(led["level"] == "file") & (led["source"] == rel)]


def test_upper_case_extension_is_read(tmp_path):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    (logs / "Bad-p1.ndjson").rename(logs / "Bad-p1.NDJSON")
    res = ingest(root)
    assert "Bad-p1" in set(res.tables["participants"]["participant_id"])
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    assert_good_intact(res)


@pytest.mark.parametrize("rel", ["Bad-p1.jsonl", "sub/Bad-p1.ndjson", "old/deeper/Bad-p1.json"])
def test_log_the_globs_do_not_match_is_ledgered_not_read(tmp_path, rel):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    (logs / rel).parent.mkdir(parents=True, exist_ok=True)
    (logs / "Bad-p1.ndjson").rename(logs / rel)
    res = ingest(root)
    row = _file_rows(res, f"backend/logs/{rel}")
    assert row["action"].tolist() == ["excluded"]
    assert row["reason"].iloc[0].startswith("not read: a log-like file that no log glob")
    assert res.summary["events_read"] == N_GOOD
    assert_good_intact(res)


def test_dangling_symlink_is_ledgered_not_read(tmp_path):
    root = study_with(tmp_path, good_session())
    (root / "backend" / "logs" / "Gone-p3.ndjson").symlink_to(tmp_path / "nowhere.ndjson")
    res = ingest(root)
    row = _file_rows(res, "backend/logs/Gone-p3.ndjson")
    assert row["reason"].str.startswith("not read: dangling symbolic link").tolist() == [True]
    assert res.summary["files_excluded"] == 1
    assert_good_intact(res)


def test_unreadable_log_is_ledgered_not_read(tmp_path, monkeypatch):
    import nonolab.study.ingest as ing

    root = study_with(tmp_path, good_session())
    real = ing.read_log_file

    def read(path, source):
        if source.endswith("Bad-p1.ndjson"):  # chmod 000 does not stop root: fake the error
            raise PermissionError(13, "Permission denied", path)
        return real(path, source)

    monkeypatch.setattr(ing, "read_log_file", read)
    res = ingest(root)
    row = _file_rows(res, "backend/logs/Bad-p1.ndjson")
    assert row["reason"].tolist() == ["not read: PermissionError: Permission denied"]
    assert "Bad-p1" not in set(res.tables["participants"]["participant_id"])
    assert res.summary["files_excluded"] == 1
    assert_good_intact(res)


def test_folder_named_like_a_log_is_ledgered_not_read(tmp_path):
    root = study_with(tmp_path, good_session())
    (root / "backend" / "logs" / "Dir-p3.ndjson").mkdir()
    res = ingest(root)
    assert _file_rows(res, "backend/logs/Dir-p3.ndjson")["reason"].tolist() == [
        "not read: not a regular file"
    ]
    assert_good_intact(res)


# --- command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("out", ["existing_file", "existing_file/sub"])
def test_ingest_into_an_existing_file(tmp_path, capsys, out):
    from nonolab.cli import main

    root = study_with(tmp_path, good_session())
    (tmp_path / "existing_file").write_text("keep me")
    assert main(["ingest", str(root), str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nonolab: error: ") and "existing_file" in err
    assert "Traceback" not in err
    assert (tmp_path / "existing_file").read_text() == "keep me"


# --- values a table cannot hold ----------------------------------------------------------------


def ingest_and_write(root, out):
    """Ingest and write every table (where a value a column cannot hold would fail)."""
    from nonolab.study.ingest import write_ingest

    res = ingest(root)
    write_ingest(res, out)
    assert_identity(res)
    return res


@pytest.mark.parametrize("big", [2**63, -(2**63) - 1, 2**64 + 1], ids=["2^63", "-2^63-1", "2^64+1"])
def test_integer_outside_64_bits_in_an_index_field(tmp_path, big):
    events = good_session()
    events[14] = {**events[14], "diffs_len": big}  # the undo of attempt 2
    res = ingest_and_write(study_with(tmp_path, events), tmp_path / "out")
    led = ledger_for(res)
    assert led[["level", "source", "action"]].values.tolist() == [
        ["line", "backend/logs/Bad-p1.ndjson:15", "excluded"]
    ]
    assert "outside the 64-bit range" in led["reason"].iloc[0]
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    assert_good_intact(res)


def test_schedule_index_outside_64_bits(tmp_path):
    events = good_session()
    events[0] = {**events[0], "schedule_idx": 2**63}
    res = ingest_and_write(study_with(tmp_path, events), tmp_path / "out")
    led = ledger_for(res)
    assert led["source"].tolist()[0] == "backend/logs/Bad-p1.ndjson:1"
    assert "outside the 64-bit range" in led["reason"].iloc[0]
    assert_good_intact(res)


@pytest.mark.parametrize(
    "bad", [1e20, -1e300, 2**63, 10**400], ids=["1e20", "-1e300", "2^63", "10^400"]
)
def test_rating_too_large_for_a_table(tmp_path, bad):
    events = good_session()
    events[11] = {**events[11], "answers": {**events[11]["answers"], "difficulty": bad}}
    res = ingest_and_write(study_with(tmp_path, events), tmp_path / "out")
    led = ledger_for(res)
    assert led[["level", "source", "id", "action"]].values.tolist() == [
        ["attempt", "backend/logs/Bad-p1.ndjson:12", "Bad-p1/1", "kept"]
    ]
    assert "initial rating" in led["reason"].iloc[0]
    rat = res.tables["ratings"].set_index(["participant_id", "order"]).loc[("Bad-p1", 1)]
    assert pd.isna(rat["initial_difficulty"]) and pd.isna(rat["initial_difficulty_raw"])
    assert_good_intact(res)


def test_skill_too_large_for_a_float(tmp_path):
    events = good_session()
    events[1] = {**events[1], "answers": {**PRE, "skill_puzzles": 10**400}}
    res = ingest_and_write(study_with(tmp_path, events), tmp_path / "out")
    led = ledger_for(res)
    assert led[["level", "action"]].values.tolist() == [["participant", "kept"]]
    assert "skill_puzzles" in led["reason"].iloc[0]
    assert_good_intact(res)


@pytest.mark.parametrize(
    ("index", "change", "where"),
    [
        (-1, {"comments": "fine \ud800"}, "answers.comments"),
        (-1, {"strategy\udfff": "edges"}, "key answers.strategy"),
        (14, None, "label"),
    ],
)
def test_lone_surrogate_in_a_string(tmp_path, index, change, where):
    events = good_session()
    if change is None:
        events[index] = {**events[index], "label": "cell\ud83d"}  # half an emoji
    else:
        events[index] = {**events[index], "answers": {**events[index]["answers"], **change}}
    res = ingest_and_write(study_with(tmp_path, events), tmp_path / "out")
    led = ledger_for(res)
    assert led[["level", "source", "action"]].values.tolist() == [
        ["line", f"backend/logs/Bad-p1.ndjson:{index % len(events) + 1}", "kept"]
    ]
    assert where in led["reason"].iloc[0] and "U+FFFD" in led["reason"].iloc[0]
    assert (res.tables["attempts"].participant_id == "Bad-p1").sum() == 3
    texts = res.tables["survey_texts"]
    assert not texts["text"].str.contains("[\ud800-\udfff]").any()
    assert_good_intact(res)


def test_duplicated_coded_responses_are_ledgered(tmp_path):
    root = study_with(tmp_path, good_session())
    derived = root / "riyad-analysis" / "derived"
    derived.mkdir(parents=True)
    (derived / "coded_responses.csv").write_text(
        "response_id,participant_id,source_file,response_kind,final_difficulty,text,code_FOOT,"
        "codes_str\n"
        "R1,P1,Good-p2.ndjson,strategy,,easy start,1,FOOT\n"
        'R2,P1,Good-p2.ndjson,strategy,,"two\nlines",0,\n'
        "R1,P1,Good-p2.ndjson,strategy,,easy start,1,FOOT\n"
        "R2,P1,Good-p2.ndjson,strategy,,other,0,\n"
    )
    res = ingest(root)
    led = res.tables["ledger"]
    th = led[led.source.str.startswith("riyad-analysis")]
    th = th[~th.reason.str.contains("that no coded row codes")]  # the fixture codes no reason
    src = "riyad-analysis/derived/coded_responses.csv"
    assert th[["source", "reason", "action"]].values.tolist() == [
        [f"{src}:5", "duplicate of line 2", "excluded"],
        [
            f"{src}:6",
            "response_id 'R2' repeats line 4 with other content; the first is used",
            "excluded",
        ],
    ]
    assert_good_intact(res)


def test_log_file_name_not_utf8_is_ledgered_not_read(tmp_path):
    import os

    root = study_with(tmp_path, good_session())
    logs = os.fsencode(root / "backend" / "logs")
    os.rename(logs + b"/Bad-p1.ndjson", logs + b"/Bad-\xff.ndjson")
    res = ingest_and_write(root, tmp_path / "out")
    row = _file_rows(res, "backend/logs/Bad-\ufffd.ndjson")
    assert row["reason"].tolist() == ["not read: the file name is not UTF-8"]
    assert_good_intact(res)


def test_partial_copy_of_a_session_is_flagged(tmp_path):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    write_log(logs / "Bad-p1-partial.ndjson", good_session()[:12])  # interrupted copy
    res = ingest(root)
    row = _file_rows(res, "backend/logs/Bad-p1.ndjson")
    assert row["action"].tolist() == ["kept"]
    assert "same session start" in row["reason"].iloc[0]
    assert "as backend/logs/Bad-p1-partial.ndjson" in row["reason"].iloc[0]
    assert_good_intact(res)


def test_linked_log_folder_is_read(tmp_path):
    root = study_with(tmp_path, good_session())
    logs = root / "backend" / "logs"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (logs / "Bad-p1.ndjson").rename(elsewhere / "Bad-p1.ndjson")
    (elsewhere / "loop").symlink_to(elsewhere)  # a link cycle is walked once
    (root / "backend" / "more").symlink_to(elsewhere)
    p = tmp_path / "p.yaml"
    p.write_text(
        "name: x\npuzzle_file: nonograms_6.json\nlog_globs: [backend/*/*.ndjson]\n"
        "puzzles_per_session: 3\nparticipants:\n  default_participant_id: stem\n"
    )
    # by default a link to a folder outside the study is not followed: ledgered, not read
    res = ingest_study(root, load_preset(p))
    assert sorted(res.tables["participants"]["source_file"]) == ["backend/logs/Good-p2.ndjson"]
    row = _file_rows(res, "backend/more")
    assert "outside the study folder" in row["reason"].iloc[0]
    assert "follow_links_outside_study" in row["reason"].iloc[0]
    # the documented preset option follows it
    p.write_text(p.read_text() + "follow_links_outside_study: true\n")
    res = ingest_study(root, load_preset(p))
    assert sorted(res.tables["participants"]["source_file"]) == [
        "backend/logs/Good-p2.ndjson",
        "backend/more/Bad-p1.ndjson",
    ]
    assert_good_intact(res)


def test_coded_themes_file_not_utf8(tmp_path):
    root = study_with(tmp_path, good_session())
    derived = root / "riyad-analysis" / "derived"
    derived.mkdir(parents=True)
    (derived / "coded_responses.csv").write_bytes(
        b"response_id,participant_id,source_file,code_FOOT\nR1,P1,Good-p2.ndjson,\xff\n"
    )
    with pytest.raises(StudyError, match=r"coded_responses\.csv: not a UTF-8 CSV"):
        ingest(root)
