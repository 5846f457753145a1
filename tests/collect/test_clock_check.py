"""`nonolab validate` flags lines whose client time disagrees with the server's receive time
beyond the bounds (nonolab.study.clocks), naming file and line; logs without ``server_t`` are
not checked."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nonolab.study.clocks import AHEAD_S, BEHIND_S, clock_problems

SERVER = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)

#: skews (s) around and beyond both bounds, and ordinary ones
_SKEW = st.one_of(
    st.integers(-3600, 60),
    st.integers(61, 10**6),
    st.integers(-(10**10), -86_401),
    st.sampled_from([60, 61, -86_400, -86_401, 0]),
)
_LINE = st.one_of(
    st.tuples(st.just("skew"), _SKEW),
    st.tuples(st.sampled_from(["no server_t", "not json", "bad t", "empty"]), st.just(0)),
)


def _line(kind: str, skew: int, k: int) -> str:
    server = SERVER + timedelta(seconds=k)
    if kind == "skew":
        t = server + timedelta(seconds=skew)
        return json.dumps({"type": "move", "t": t.isoformat(), "server_t": server.isoformat()})
    if kind == "no server_t":
        return json.dumps({"type": "move", "t": (server + timedelta(days=9999)).isoformat()})
    if kind == "bad t":
        return json.dumps({"type": "move", "t": "yesterday", "server_t": server.isoformat()})
    if kind == "not json":
        return '{"type": "move", "server_t": '
    return ""


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINE, max_size=30))
def test_exactly_the_lines_beyond_the_bounds_are_problems(tmp_path, lines):
    f = tmp_path / "P1.ndjson"
    f.write_text("\n".join(_line(kind, s, k) for k, (kind, s) in enumerate(lines)) + "\n")
    got = clock_problems(f, "backend/logs/P1.ndjson", "P1")
    want = [k + 1 for k, (kind, s) in enumerate(lines)
            if kind == "skew" and (s > AHEAD_S or s < -BEHIND_S)]  # fmt: skip
    assert [p["line"] for p in got] == want
    for p in got:
        assert p["file"] == "backend/logs/P1.ndjson" and p["id"] == "P1"
        assert "server_t" in p["reason"] and ("ahead" in p["reason"] or "behind" in p["reason"])


@pytest.mark.parametrize(
    "offset_s,flagged",
    [(-40 * 365.25 * 86400, True), (-2 * 86400, True), (-3600, False), (30, False), (600, True)],
)
def test_validate_flags_an_export_whose_page_clock_was_wrong(tmp_path, plan, offset_s, flagged):
    """An export of a finished session whose page times are all shifted by ``offset_s`` (as a
    page with a wrong clock would have written them): validate names every line beyond the
    bounds and calls the study unusable; within the bounds it stays usable."""
    from serve_helpers import Scripted, join, post_answers, rating

    warnings.filterwarnings("ignore", message="Using `httpx`")
    from starlette.testclient import TestClient

    from nonolab.cli.commands.validate import validate_study
    from nonolab.collect.app import create_app
    from nonolab.collect.export import export_study
    from nonolab.collect.store import Store

    store = Store(str(tmp_path / "s.sqlite"))
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        p = Scripted(client, join(client))
        p.setup()
        for k in range(1, plan.per_session + 1):
            p.send({"kind": "skip"}, rating(k, -1))
        p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(plan.per_session)})
        export_study(store, plan, tmp_path / "export")
    finally:
        store.close()
    assert validate_study(tmp_path / "export")["usable"]
    (log,) = (tmp_path / "export" / "backend" / "logs").glob("*.ndjson")
    recs = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    for r in recs:  # the page's clock off by offset_s: t moves, server_t does not
        r["t"] = (datetime.fromisoformat(r["server_t"]) + timedelta(seconds=offset_s)).isoformat()
    log.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    report = validate_study(tmp_path / "export")
    clock = [p for p in report["problems"] if "server_t" in p["reason"]]
    rel = log.relative_to(tmp_path / "export").as_posix()
    if flagged:
        assert not report["usable"]
        assert [(p["file"], p["line"]) for p in clock] == [
            (rel, k) for k in range(1, len(recs) + 1)
        ]
    else:
        assert report["usable"] and clock == []
