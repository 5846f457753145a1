"""Ingest reads many log files in worker processes: the tables and summary must be exactly those
of the one-process read (same rows, order, dtypes, ledger and counts)."""

from __future__ import annotations

import pandas as pd
import pytest
from synth_study import good_session, write_study

import nonolab.study.ingest as ingest_mod
from nonolab.study.presets import resolve_preset


def _ingest(root, monkeypatch, min_files):
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_FILES", min_files)
    return ingest_mod.ingest_study(root, resolve_preset(root))


def _assert_same(a, b):
    assert a.summary == b.summary
    assert list(a.tables) == list(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True)
    assert a.inputs == b.inputs


def test_parallel_read_matches_serial_on_the_public_study(study_dir, monkeypatch):
    serial = _ingest(study_dir, monkeypatch, 10**9)
    parallel = _ingest(study_dir, monkeypatch, 1)
    _assert_same(serial, parallel)


def test_parallel_read_matches_serial_with_bad_lines(tmp_path, monkeypatch):
    bad = good_session()
    bad.insert(5, "{not json")
    bad.insert(7, b"\xff\xfe")
    bad.insert(9, '{"type": "move", "r": -1, "c": 0, "value": 1, "t": "2026-01-01T00:00:00Z"}')
    bad.insert(11, '{"type": "move", "r": true, "c": 0, "value": 1, "t": "2026-01-01T00:00:00Z"}')
    bad.insert(12, '{"type": "move", "r": 0, "c": 0, "value": 2, "t": "2026-01-01T00:00:00Z"}')
    bad.insert(13, '{"type": "mystery", "t": "2026-01-01T00:00:00Z"}')
    sessions = {f"P{i}-p{i}": good_session() if i % 3 else bad for i in range(1, 10)}
    sessions["Nobody-p99"] = []
    root = write_study(tmp_path / "study", sessions)
    serial = _ingest(root, monkeypatch, 10**9)
    parallel = _ingest(root, monkeypatch, 1)
    assert serial.summary["events_excluded"] > 0
    _assert_same(serial, parallel)


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "move", "r": 1, "c": 2, "value": -1, "t": "2026-01-01T00:00:00Z"}',
        '{"type": "move", "r": 1.0, "c": 2, "value": 1, "t": "2026-01-01T00:00:00Z"}',
        '{"type": "move", "r": false, "c": 2, "value": 1, "t": "2026-01-01T00:00:00Z"}',
        '{"type": "move", "c": 2, "value": 1, "t": "2026-01-01T00:00:00Z"}',
        '{"type": "move", "r": 1, "c": 2, "value": 5, "t": "2026-01-01T00:00:00Z"}',
        '{"type": "move", "r": 1, "c": 2, "value": 1, "t": "2026-01-01T00:00:00Z"} x',
        '\ufeff\ufeff{"type": "hint_none", "t": "2026-01-01T00:00:00Z"}',
        '{"type": "hint_none", "t": "2026-01-01T00:00:00Z", "x": NaN}',
    ],
)
def test_fast_parse_paths_match_the_reference(line):
    """The shared-decoder and move fast paths give the reference result or error message."""
    import json

    from nonolab.study import logs

    try:
        got = logs.parse_line(line, "f", 3)
    except logs.LogLineError as exc:
        got = ("error", type(exc), str(exc))
    stripped = line.strip().removeprefix("\ufeff")
    try:
        obj = json.loads(stripped, parse_constant=logs._reject_constant)
    except ValueError as exc:
        assert got == ("error", logs.LogLineError, f"f:3: not a JSON object ({exc})")
        return
    spec = logs.EVENT_SPECS[obj["type"]]
    try:
        fields = {k: check(obj[k]) for k, check in spec.required.items()}
    except (KeyError, TypeError, ValueError):
        assert got[0] == "error"
        return
    want = logs.Event(obj["type"], logs.parse_time(obj["t"]), spec.role, fields, 3, stripped)
    assert got == want
    assert repr(got) == repr(want)
