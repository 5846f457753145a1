"""The session grammar (docs/data-format.md, "Session grammar"): each violation is a ledger row
with file:line and the decision the docs state, never a silent change of a result.

Issue examples: a second complete session appended to a log used to flip ``solved`` False ->
True through the later completion event, with no ledger row; a clock jump of one day inside an
attempt used to give an 86,680 s solve time with no ledger row.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synth_study import ev, good_session, ingest, write_study

from nonolab.study.features import attempt_features
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import StudyError, load_preset

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
DAY = 86400.0


def _shift(events, seconds):
    out = []
    for e in events:
        t = datetime.fromisoformat(e["t"]) + timedelta(seconds=seconds)
        out.append({**e, "t": t.isoformat()})
    return out


def _accounting_ok(res):
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]


def test_second_complete_session_appended_is_excluded(tmp_path):
    first = good_session()  # attempt 2 skipped: solved False
    second = _shift(good_session(), 3600)
    second = [e for e in second if e["type"] != "ended_without_full_completion"]
    second.insert(-3, ev("completed_all_three", 3600 + 53.6))
    root = write_study(tmp_path / "s", {"p1": first + second})
    res = ingest(root)
    att = res.tables["attempts"]
    assert list(att["solved"]) == [True, False, True]  # the first session's flags
    led = res.tables["ledger"]
    row = led[led["reason"].str.contains("second session start")]
    assert list(row["source"]) == [f"backend/logs/p1.ndjson:{len(first) + 1}"]
    assert row.iloc[0]["action"] == "excluded"
    assert f"the {len(second) - 1} lines after it" in row.iloc[0]["reason"]
    # the first session alone gives the same tables
    alone = ingest(write_study(tmp_path / "a", {"p1": first}))
    for name in ("attempts", "ratings", "participants"):
        assert res.tables[name].equals(alone.tables[name]), name
    _accounting_ok(res)


@SETTINGS
@given(at=st.integers(3, 10), jump=st.floats(0, 3 * DAY))
def test_clock_jump_inside_an_attempt(tmp_path, at, jump):
    """Any jump at any line of attempt 1: longer than max_gap_s (3600 s) excludes attempt 1
    with an attempt-level row naming the line after the gap; shorter is used as it is."""
    events = good_session()
    events = events[:at] + _shift(events[at:], jump)
    root = write_study(tmp_path / f"s{at}-{jump}", {"p1": events})
    res = ingest(root)
    gap = (
        datetime.fromisoformat(events[at]["t"]) - datetime.fromisoformat(events[at - 1]["t"])
    ).total_seconds()
    led = res.tables["ledger"]
    rows = led[led["level"] == "attempt"]
    rows = rows[rows["reason"].str.contains("max_gap_s")]
    att = res.tables["attempts"]
    if gap > 3600:
        assert list(rows["source"]) == [f"backend/logs/p1.ndjson:{at + 1}"]
        assert list(rows["id"]) == ["p1/1"] and list(rows["action"]) == ["excluded"]
        assert list(att["order"]) == [2, 3]
        assert list(res.tables["ratings"]["order"]) == [2, 3]
        assert not (res.tables["events"]["order"] == 1).any()
        feats = attempt_features(res.tables, threshold_s=2.0)
        assert feats["time_to_solve_s"].max() < 3600
    else:
        assert rows.empty and list(att["order"]) == [1, 2, 3]
    _accounting_ok(res)


def test_one_day_clock_jump_gives_no_day_long_solve_time(tmp_path):
    events = good_session()
    events = events[:8] + _shift(events[8:], DAY)
    res = ingest(write_study(tmp_path / "s", {"p1": events}))
    feats = attempt_features(res.tables, threshold_s=2.0)
    assert (feats["time_to_solve_s"].dropna() < 100).all()
    assert res.tables["ledger"]["reason"].str.contains("a clock jump").any()


def test_max_gap_is_a_preset_setting(tmp_path):
    events = good_session()
    events = events[:8] + _shift(events[8:], 600)
    root = write_study(tmp_path / "s", {"p1": events})
    (root / "preset.yaml").write_text(
        "extends: default\nname: t\nmax_gap_s: 300\n", encoding="utf-8"
    )
    strict = ingest_study(root, load_preset(root / "preset.yaml"))
    assert list(strict.tables["attempts"]["order"]) == [2, 3]
    assert list(ingest(root).tables["attempts"]["order"]) == [1, 2, 3]  # default 3600 s


def test_second_completion_event_is_excluded(tmp_path):
    events = good_session()
    i = next(k for k, e in enumerate(events) if e["type"] == "ended_without_full_completion")
    events.insert(i + 1, ev("completed_all_three", 53.7))
    res = ingest(write_study(tmp_path / "s", {"p1": events}))
    assert list(res.tables["attempts"]["solved"]) == [True, False, True]
    led = res.tables["ledger"]
    row = led[led["reason"].str.contains("second completion event")]
    assert list(row["source"]) == [f"backend/logs/p1.ndjson:{i + 2}"]
    _accounting_ok(res)


def test_completion_event_first_in_time_is_used_whatever_its_type(tmp_path):
    """completed_all_three logged after ended_without_full_completion no longer wins."""
    events = good_session()
    events.append(ev("completed_all_three", 70))
    res = ingest(write_study(tmp_path / "s", {"p1": events}))
    assert list(res.tables["attempts"]["solved"]) == [True, False, True]


# --- variable sessions -----------------------------------------------------------------------


def _two_puzzle_session(queue=(1, 2)):
    """good_session() cut after attempt 2 (no attempt 3)."""
    events = good_session(queue=(*queue, 0))
    events[0] = {**events[0], "queue": list(queue), "schedule_idx": 8}
    cut = next(k for k, e in enumerate(events) if e.get("survey_type") == "puzzle_2")
    body = events[: cut + 1]
    body.append(ev("completed_all_three", 46))
    post = ev(
        "survey_submit",
        60,
        survey_type="post",
        puzzle_idx=None,
        answers={"puzzle_1_rate_again": 3, "puzzle_2_rate_again": 5},
    )
    return [e for e in body if e["type"] != "puzzle_advanced"] + [post]


@pytest.mark.parametrize(
    "sizes", ["[2, 3]", "{min: 2, max: 4}", "\n  - 3\n  - 2"], ids=["list", "range", "block"]
)
def test_variable_session_sizes_keep_every_participant(tmp_path, sizes):
    root = write_study(tmp_path / "s", {"p1": good_session(), "p2": _two_puzzle_session()})
    (root / "preset.yaml").write_text(
        f"extends: default\nname: t\npuzzles_per_session: {sizes}\n", encoding="utf-8"
    )
    preset = load_preset(root / "preset.yaml")
    res = ingest_study(root, preset)
    att = res.tables["attempts"]
    assert res.summary["participants"] == 2 and res.summary["participants_excluded"] == 0
    assert list(att[att.participant_id == "p2"]["order"]) == [1, 2]
    assert list(att[att.participant_id == "p2"]["session_size"]) == [2, 2]
    assert list(att[att.participant_id == "p1"]["session_size"]) == [3, 3, 3]
    rat = res.tables["ratings"]
    assert list(rat[rat.participant_id == "p2"]["final_difficulty"]) == [3, 5]
    feats = attempt_features(res.tables, threshold_s=2.0)
    assert len(feats) == 5
    _accounting_ok(res)


def test_single_session_size_still_excludes_other_counts(tmp_path):
    root = write_study(tmp_path / "s", {"p1": good_session(), "p2": _two_puzzle_session()})
    res = ingest(root)
    led = res.tables["ledger"]
    assert led["reason"].str.contains("session serves 2 puzzles, the preset expects 3").any()
    assert res.summary["participants"] == 1


@pytest.mark.parametrize("bad", ["{min: 4, max: 2}", "[]", "0", "[2, 2]", "{min: 2}"])
def test_bad_session_sizes_are_preset_errors(tmp_path, bad):
    path = tmp_path / "preset.yaml"
    path.write_text(f"extends: default\nname: t\npuzzles_per_session: {bad}\n")
    with pytest.raises(StudyError, match="puzzles_per_session"):
        load_preset(path)


def test_event_names_keep_being_read_for_any_count(tmp_path):
    """session_start_three / completed_all_three are the platform's names for the session start
    and 'every puzzle served was solved', whatever the number of puzzles."""
    events = _two_puzzle_session()
    assert json.dumps(events).count("session_start_three") == 1
    root = write_study(tmp_path / "s", {"p2": events})
    (root / "preset.yaml").write_text("extends: default\nname: t\npuzzles_per_session: 2\n")
    res = ingest_study(root, load_preset(root / "preset.yaml"))
    assert list(res.tables["attempts"]["solved"]) == [True, True]
