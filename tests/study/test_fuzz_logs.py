"""Property tests of the log-line parser: no crash other than the documented error type, and
every well-formed event round-trips through JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

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
            {"puzzle_id": st.integers(0, 9), "solved": st.booleans(), "mismatches": st.lists(cell)}
        ),
        "survey_submit": st.fixed_dictionaries(
            {
                "survey_type": st.sampled_from(["pre", "post", "puzzle_1", "puzzle_3"]),
                "answers": st.dictionaries(st.text(max_size=5), json_scalars, max_size=3),
            }
        ),
        "session_start_three": st.fixed_dictionaries(
            {"queue": st.lists(st.integers(0, 9), min_size=1, max_size=4)}
        ),
        "undo": st.fixed_dictionaries({"label": st.text(max_size=5)}),
        "reset": st.just({}),
        "session_end": st.just({}),
        "hint_none": st.just({}),
        "skip_puzzle": st.fixed_dictionaries({"puzzle_id": st.integers(0, 9)}),
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
        assert got == v, k


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=60) | event_strategy().map(repr).map(str.encode), max_size=12))
def test_read_log_lines_accounts_for_every_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fz") / "log.ndjson"
    path.write_bytes(b"\n".join(x.replace(b"\n", b" ") for x in lines))
    events, errors, n = read_log_lines(str(path), "log.ndjson")
    assert len(events) + len(errors) == n
    assert n == sum(1 for x in lines if x.replace(b"\n", b" ").strip())
