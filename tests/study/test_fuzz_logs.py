"""Property tests of the log-line parser (no crash other than the documented error type, every
well-formed event round-trips through JSON) and of table coercion (any logged value becomes a
table value, a ledger row or a :class:`TableSchemaError` naming the table and column)."""

from __future__ import annotations

import json
import tempfile
import unicodedata
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.study.logs import EVENT_SPECS, LogLineError, parse_line, read_log_lines

T = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)
cell = st.fixed_dictionaries({"r": st.integers(0, 30), "c": st.integers(0, 30)})


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_logline_error(data):
    try:
        ev = parse_line(data, "f.ndjson", 7)
    except LogLineError as exc:
        assert exc.source == "f.ndjson:7" and str(exc).startswith("f.ndjson:7: ")
    else:
        assert ev.type in EVENT_SPECS


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["type", "t", "r", "c", "value", "mode", "queue", "answers", "solved"])
        | st.text(max_size=6),
        json_values | st.sampled_from(list(EVENT_SPECS)) | T.map(datetime.isoformat),
        max_size=8,
    )
)
def test_arbitrary_objects_raise_only_logline_error(obj):
    try:
        ev = parse_line(json.dumps(obj), "x", 1)
    except LogLineError:
        return
    assert ev.type == obj["type"] and ev.t.tzinfo is not None


#: puzzle ids: integers, or non-empty strings (any form: they are read in NFC)
puzzle_id = st.integers(0, 9) | st.text(st.characters(blacklist_categories=("Cs",)), min_size=1)


def event_strategy():
    base = {
        "move": st.fixed_dictionaries(
            {"r": st.integers(0, 99), "c": st.integers(0, 99), "value": st.sampled_from([-1, 0, 1])}
        ),
        "hint": st.fixed_dictionaries({"r": st.integers(0, 99), "c": st.integers(0, 99)}),
        "drag": st.fixed_dictionaries(
            {
                "mode": st.sampled_from(["flip", "cross", "cross_toggle"]),
                "normalized_start": cell,
                "normalized_end": cell,
                "changed_cells": st.integers(0, 100),
            }
        ),
        "check_bank": st.fixed_dictionaries(
            {"puzzle_id": puzzle_id, "solved": st.booleans(), "mismatches": st.lists(cell)}
        ),
        "survey_submit": st.fixed_dictionaries(
            {
                "survey_type": st.sampled_from(["pre", "post", "puzzle_1", "puzzle_3"]),
                "answers": st.dictionaries(st.text(max_size=5), json_scalars, max_size=3),
            }
        ),
        "session_start_three": st.fixed_dictionaries(
            {"queue": st.lists(puzzle_id, min_size=1, max_size=4)}
        ),
        "undo": st.fixed_dictionaries({"label": st.text(max_size=5)}),
        "reset": st.just({}),
        "session_end": st.just({}),
        "hint_none": st.just({}),
        "skip_puzzle": st.fixed_dictionaries({"puzzle_id": puzzle_id}),
    }
    return st.sampled_from(sorted(base)).flatmap(lambda k: st.tuples(st.just(k), base[k], T))


@settings(max_examples=300, deadline=None)
@given(event_strategy(), st.integers(-12, 12))
def test_valid_events_round_trip(item, tz_hours):
    typ, fields, t = item
    stamp = t.astimezone(timezone(timedelta(hours=tz_hours)))  # any offset: parsed to UTC
    line = json.dumps({"type": typ, **fields, "t": stamp.isoformat()})
    ev = parse_line(line, "f", 3)
    assert ev.type == typ and ev.line_no == 3
    assert ev.t == t and ev.t.utcoffset() == timedelta(0)
    for k, v in fields.items():
        got = ev.fields[k]
        if isinstance(got, tuple):  # cells are returned as (r, c)
            got = {"r": got[0], "c": got[1]}
        if k == "queue":  # puzzle ids are text in Unicode normal form C
            v = [_id_text(x) for x in v]
        elif k == "puzzle_id":
            v = _id_text(v)
        assert got == v, k


def _id_text(v):
    return unicodedata.normalize("NFC", v) if isinstance(v, str) else str(v)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=60) | event_strategy().map(repr).map(str.encode), max_size=12))
def test_read_log_lines_accounts_for_every_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fz") / "log.ndjson"
    path.write_bytes(b"\n".join(x.replace(b"\n", b" ") for x in lines))
    events, errors, n = read_log_lines(str(path), "log.ndjson")
    assert len(events) + len(errors) == n
    assert n == sum(1 for x in lines if x.replace(b"\n", b" ").strip())


# --- table coercion: any logged value ends as a table value, a ledger row or a named error -----

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=6) | st.sampled_from(
    ["\ud800", "a\udfffb", "\ud83d"]
)
any_number = (
    st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.integers(max_value=-(2**62), min_value=-(2**70))
    | st.floats()
    | st.sampled_from([1e20, -1e20, 2**63, 10**400])
)
any_value = st.none() | st.booleans() | any_number | any_text


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["ratings", "participants", "events", "attempts"]), st.data())
def test_coerce_table_raises_only_table_schema_error(name, data):
    from nonolab.study.schemas import TableSchemaError, coerce_table, columns, table_schema

    cols = columns(name)
    props = table_schema(name)["properties"]
    numeric = [c for c in cols if props[c].get("type") not in ("string", ["string", "null"])]
    col = data.draw(st.sampled_from(numeric or cols))
    values = data.draw(st.lists(any_value, min_size=1, max_size=3))
    frame = pd.DataFrame({col: pd.Series(values, dtype=object)})
    try:
        out = coerce_table(frame, name)
    except TableSchemaError as exc:
        assert f"table {name}: column {col}" in str(exc)
    else:
        assert list(out.columns) == cols and len(out) == len(values)


@settings(max_examples=40, deadline=None)
@given(
    difficulty=any_value,
    rate_again=any_value,
    skill=any_value,
    diffs_len=any_value,
    schedule_idx=any_value,
    label=any_value,
    comment=any_value,
    key=any_text,
)
def test_any_logged_value_is_used_ledgered_or_excluded(
    difficulty, rate_again, skill, diffs_len, schedule_idx, label, comment, key
):
    from synth_study import PRE, good_session, ingest, write_study

    from nonolab.study.ingest import write_ingest

    events = good_session()
    events[0] = {**events[0], "schedule_idx": schedule_idx}
    events[1] = {**events[1], "answers": {**PRE, "skill_nonogram": skill, key: comment}}
    events[11] = {**events[11], "answers": {"difficulty": difficulty}}
    events[14] = {**events[14], "label": label, "diffs_len": diffs_len}
    post = events[-1]
    events[-1] = {**post, "answers": {**post["answers"], "puzzle_1_rate_again": rate_again}}
    with tempfile.TemporaryDirectory() as tmp:
        root = write_study(Path(tmp) / "s", {"Fz-p1": events})
        res = ingest(root)
        write_ingest(res, Path(tmp) / "out")
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]
    assert s["events_read"] == len(events)
    used = res.tables["participants"]["participant_id"].tolist()
    assert used == ["Fz-p1"] or len(res.tables["ledger"]) > 0
