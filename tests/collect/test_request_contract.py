"""The study server's request contract (nonolab.collect.contract), isolation, strangers and
credentials, with cases generated from the contract's own schema (contract_mutations), on SQLite
and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import warnings

import pytest
import sqlalchemy as sa
from contract_mutations import BASE, deep, event_mutations, mutated_event
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import PLAN, REPO, Scripted, free_port, join

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import TokenBucket, create_app, redact  # noqa: E402
from nonolab.collect.contract import ContractError, check_body, check_event, parse_body  # noqa: E402
from nonolab.collect.session import InvalidEvent  # noqa: E402
from nonolab.collect.store import META, Store  # noqa: E402

ADMIN_TOKEN = "admin-secret-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
MUTATIONS = event_mutations()


@pytest.fixture
def served(plan, db_url, tmp_path):
    store = Store(db_url)
    app = create_app(plan, store, ADMIN_TOKEN, export_dir=tmp_path / "export")
    with TestClient(app) as client:
        yield client, store
    store.close()


def db_digest(store: Store) -> str:
    """sha256 of every row of every table of ``store``."""
    h = hashlib.sha256()
    with store.read_engine.connect() as conn:
        for table in META.sorted_tables:
            rows = conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()
            h.update(f"{table.name}:{[tuple(r) for r in rows]!r}".encode())
    return h.hexdigest()


def test_the_generator_covers_every_field_of_the_schema():
    import jsonschema

    from nonolab.collect.contract import schema

    jsonschema.Draft202012Validator.check_schema(schema())
    fields = {f for _, f, _ in MUTATIONS}
    assert set(schema()["$defs"]["event"]["properties"]) <= fields
    assert len(MUTATIONS) > 80


@pytest.mark.parametrize("case", MUTATIONS, ids=[c[0] for c in MUTATIONS])
def test_every_schema_mutation_is_refused_before_the_store(case):
    now = time.time() * 1000.0
    body = parse_body(('{"events": [' + mutated_event(case, 5, now) + "]}").encode())
    check_body("events_body", body)
    ev = body["events"][0]
    if case[1] == "seq":  # the store's own check (the number decides replay or gap)
        seq = ev.get("seq")
        assert isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= 2**31 - 1
        return
    with pytest.raises(InvalidEvent) as e:
        check_event(ev, now - 1000.0, now)
    assert str(e.value) and len(str(e.value)) < 400


def test_valid_page_events_pass_the_contract():
    now = time.time() * 1000.0
    for ev in BASE.values():
        check_event({**ev, "seq": 1, "t": now}, now - 5000.0, now)


@settings(max_examples=200, deadline=None)
@given(offset_s=st.floats(-1e7, 1e7, allow_nan=False))
def test_client_time_window(offset_s):
    start = 1.8e12
    now = start + 600_000.0
    tol = 60_000.0
    t = now + offset_s * 1000.0
    ev = {"kind": "undo", "seq": 1, "t": t}
    ok = start - tol <= t <= now + tol
    if ok:
        check_event(ev, start, now)
    else:
        with pytest.raises(InvalidEvent, match="clock"):
            check_event(ev, start, now)


@pytest.mark.parametrize(
    "raw",
    [b"\xff\xfe", b"{", b"[1,", b"NaN", b'{"events": [Infinity]}', b"[" * 5000 + b"]" * 5000,
     b"1" * 5000],
)  # fmt: skip
def test_bodies_that_are_not_json_are_contract_errors(raw):
    with pytest.raises(ContractError):
        parse_body(raw)


WRONG_BODIES = ["[]", '"x"', "1", "null", "true", deep(20), '{"zz_extra": 1}']


@pytest.mark.parametrize("text", [*WRONG_BODIES, '{"external_id": 5}',
                                  '{"external_id": "a\\u0000"}', '{"external_id": "\\ud800"}',
                                  json.dumps({"external_id": "x" * 201})])  # fmt: skip
def test_a_join_body_of_the_wrong_type_creates_no_session(served, text):
    client, store = served
    before = db_digest(store)
    r = client.post("/api/join", content=text.encode())
    assert r.status_code == 400 and r.json()["error"], r.text
    assert db_digest(store) == before


@pytest.mark.parametrize("text", [*WRONG_BODIES, "{}", '{"events": {}}', '{"events": []}',
                                  '{"events": [], "x": 1}', '{"\\u0000": 1}'])  # fmt: skip
def test_an_events_body_of_the_wrong_shape_is_refused_and_not_stored(served, text):
    client, store = served
    tok = join(client)
    before = db_digest(store)
    r = client.post(f"/api/s/{tok}/events", content=text.encode())
    assert r.status_code == 400 and r.json()["error"], r.text
    assert db_digest(store) == before


@pytest.mark.parametrize("text", [*WRONG_BODIES, '{"count": 0}', '{"count": 1001}',
                                  '{"count": 1e999}', '{"count": 2.5}'])  # fmt: skip
def test_a_links_body_of_the_wrong_type_makes_no_links(served, text):
    client, store = served
    before = db_digest(store)
    r = client.post("/api/admin/links", content=text.encode(), headers=ADMIN)
    assert r.status_code == 400 and r.json()["error"], r.text
    assert db_digest(store) == before


def test_a_refused_event_keeps_the_valid_prefix_for_every_mutation(served, plan):
    """Batch [valid, mutated, valid] for every generated mutation: the first is stored and
    acknowledged, the answer names the refused number and why, the third is not stored; the
    participant goes on with the next valid event."""
    client, store = served
    p = Scripted(client, join(client))
    p.setup()
    n_ok = p.seq
    for case in MUTATIONS:
        now = time.time() * 1000.0
        first = json.dumps({"kind": "move", "r": 0, "c": 0, "value": 1, "seq": n_ok + 1, "t": now})
        bad = mutated_event(case, n_ok + 2, now)
        third = json.dumps({"kind": "undo", "seq": n_ok + 3, "t": now})
        r = client.post(f"/api/s/{p.token}/events",
                        content=f'{{"events": [{first}, {bad}, {third}]}}'.encode())  # fmt: skip
        assert r.status_code == 422, (case, r.status_code, r.text)
        out = r.json()
        assert out["acked"] == n_ok + 1, (case, out)
        assert out["refused"]["seq"] == (None if case[1] == "seq" else n_ok + 2), (case, out)
        assert out["refused"]["index"] == 1, (case, out)
        assert out["error"], case
        n_ok += 1
    st_ = p.state()
    assert st_["last_seq"] == n_ok
    # the participant goes on: the next valid event is taken
    p.seq = n_ok
    assert p.send({"kind": "undo"})["acked"] == n_ok + 1


def test_grouped_commits_isolate_an_item_the_database_refuses(tmp_path):
    """One item of a commit group that the database refuses (a unique-key violation) gets its
    own error; the items around it are committed."""
    from concurrent.futures import Future

    from nonolab.collect.store import COUNTERS, _commit_group

    store = Store(str(tmp_path / "g.sqlite"))

    def add(name):
        return lambda conn: conn.execute(COUNTERS.insert().values(name=name, value=1))

    items = [(add("a"), Future()), (add("schedule"), Future()), (add("b"), Future())]
    _commit_group(store.engine, items)
    assert items[0][1].exception() is None and items[2][1].exception() is None
    assert isinstance(items[1][1].exception(), sa.exc.IntegrityError)
    with store.read_engine.connect() as conn:
        names = set(conn.execute(sa.select(COUNTERS.c.name)).scalars())
    assert {"a", "b", "schedule"} <= names
    store.close()


def test_unknown_links_write_nothing_and_are_rate_limited(served):
    client, store = served
    join(client)
    before = db_digest(store)
    codes = []
    for i in range(260):
        tok = f"unknown-{i:04d}-" + "x" * 30
        kind = i % 4
        if kind == 0:
            r = client.post(f"/api/s/{tok}/events",
                            json={"events": [{**BASE["undo"], "seq": 1, "t": time.time() * 1e3}]})  # fmt: skip
        elif kind == 1:
            r = client.post(f"/api/s/{tok}/events", content=b"[not json")
        elif kind == 2:
            r = client.get(f"/api/s/{tok}/state")
        else:
            r = client.get(f"/s/{tok}")
        codes.append(r.status_code)
    assert set(codes) <= {404, 429} and 429 in codes
    assert db_digest(store) == before


@pytest.mark.parametrize("tok", ["%00abc", "a%00", "%ED%A0%80", "%C3%A9t%C3%A9", "a%20b",
                                 "x" * 5000, "a.b", "%FF"])  # fmt: skip
def test_links_that_cannot_be_tokens_are_unknown_without_a_lookup(served, tok):
    client, store = served
    before = db_digest(store)
    for method, path in (("get", f"/s/{tok}"), ("get", f"/api/s/{tok}/state"),
                         ("post", f"/api/s/{tok}/events")):  # fmt: skip
        r = getattr(client, method)(path)
        assert r.status_code in (404, 429), (path, r.status_code)
    assert db_digest(store) == before


@settings(max_examples=50, deadline=None)
@given(keys=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=300))
def test_rate_limit_state_is_bounded(keys):
    b = TokenBucket(1.0, 2.0, max_keys=50)
    for k in keys:
        b.take(k)
        assert len(b) <= 50


def test_researcher_authentication_says_what_is_wrong_and_is_rate_limited(served):
    client, _ = served
    r = client.get("/api/admin/summary")
    assert r.status_code == 401 and "required" in r.json()["error"]
    r = client.get("/api/admin/summary", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and "wrong" in r.json()["error"]
    codes = [client.get("/api/admin/summary", headers={"Authorization": f"Bearer guess{i}"})
             .status_code for i in range(15)]  # fmt: skip
    assert 429 in codes and set(codes) <= {401, 429}
    # while limited, even the right token waits (guessing cannot be sped up)
    assert client.get("/api/admin/summary", headers=ADMIN).status_code == 429


@settings(max_examples=100, deadline=None)
@given(token=st.text(max_size=15))
def test_short_or_empty_researcher_tokens_are_refused(token):
    from nonolab.cli.commands.serve import admin_token_from_env

    got, msg = admin_token_from_env({"NONOLAB_ADMIN_TOKEN": token})
    assert got is None and "NONOLAB_ADMIN_TOKEN" in msg


def test_researcher_token_rules():
    from nonolab.cli.commands.serve import admin_token_from_env

    got, msg = admin_token_from_env({})
    assert got and got in msg
    assert admin_token_from_env({"NONOLAB_ADMIN_TOKEN": "a" * 16}) == ("a" * 16, "")
    assert admin_token_from_env({"NONOLAB_ADMIN_TOKEN": "  " + "a" * 20})[0] is None


@settings(max_examples=200)
@given(tok=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                   min_size=8, max_size=64),
       tail=st.sampled_from(["", "/state", "/events", "?x=1"]))  # fmt: skip
def test_redact_removes_link_and_bearer_tokens(tok, tail):
    # the whole redacted text is compared (a token may be a word of the record itself, such
    # as "authoriz", so "the token is not in the text" is not the property)
    for form in ('127.0.0.1 - "GET /s/{}{} HTTP/1.1" 200',
                 "'path': '/api/s/{0}{1}', (b'authorization', b'Bearer {0}')"):  # fmt: skip
        assert redact(form.format(tok, tail)) == form.format("<token>", tail)


@pytest.mark.parametrize("token", ["", "short", " " * 20])
def test_serve_refuses_a_weak_researcher_token_at_start(token, tmp_path):
    env = {**os.environ, "NONOLAB_ADMIN_TOKEN": token, "PYTHONPATH": str(REPO / "src")}
    r = subprocess.run(
        [sys.executable, "-m", "nonolab", "serve", str(PLAN), "--database",
         str(tmp_path / "s.sqlite"), "--port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "NONOLAB_ADMIN_TOKEN" in r.stderr, r.stderr
    assert not (tmp_path / "s.sqlite").exists()


def test_tokens_never_reach_the_log_at_any_level(tmp_path):
    import httpx

    port = free_port()
    admin = "researcher-token-for-the-log-test"
    env = {**os.environ, "NONOLAB_ADMIN_TOKEN": admin, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nonolab", "serve", str(PLAN), "--database",
         str(tmp_path / "s.sqlite"), "--port", str(port), "--log-level", "trace"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        tok = httpx.post(base + "/api/join", json={}).json()["url"].rsplit("/", 1)[1]
        assert httpx.get(f"{base}/s/{tok}").status_code == 200
        assert httpx.get(f"{base}/api/s/{tok}/state").status_code == 200
        httpx.post(f"{base}/api/s/{tok}/events", json={"events": [{"kind": "undo"}]})
        httpx.get(base + "/api/admin/summary", headers={"Authorization": f"Bearer {admin}"})
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0].decode("utf-8", "replace")
    assert "/s/<token>" in out  # the access log was written, redacted
    assert tok not in out and admin not in out


def test_an_unreachable_database_is_503_not_500(served, monkeypatch):
    """The database failing (not the request) is a 503 the page retries, never a 500."""
    client, store = served
    tok = join(client)

    async def down(*a, **k):
        raise sa.exc.OperationalError("INSERT", {}, Exception("database is locked"))

    monkeypatch.setattr(store, "submit_async", down)
    r = client.post(f"/api/s/{tok}/events",
                    json={"events": [{"kind": "undo", "seq": 1, "t": time.time() * 1e3}]})  # fmt: skip
    assert r.status_code == 503 and r.json()["retry_after_s"] > 0


def test_slow_clients_cannot_starve_honest_ones(tmp_path):
    """Twice as many connections as the cap, each sending half a body and then nothing: the
    server keeps its file descriptors, answers each slow one 408 after the body timeout, and an
    honest participant's request (retried on 503, as the page does) is answered 200 within the
    body timeout and a little more."""
    import socket

    import httpx
    from serve_helpers import Server

    srv = Server(PLAN, str(tmp_path / "s.sqlite"), tmp_path / "export")
    srv.extra_args = ["--max-connections", "16", "--body-timeout", "2"]
    srv.start()
    socks = []
    try:
        tok = httpx.post(srv.url + "/api/join", json={}).json()["url"].rsplit("/", 1)[1]
        for _ in range(32):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(f"POST /api/s/{tok}/events HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n"
                      "Content-Type: application/json\r\n\r\n{".encode())  # fmt: skip
            socks.append(s)
        t0 = time.monotonic()
        codes = []
        while True:
            r = httpx.post(f"{srv.url}/api/s/{tok}/events", timeout=10,
                           json={"events": [{"kind": "step", "from": "consent", "seq": 1,
                                             "t": time.time() * 1e3}]})  # fmt: skip
            codes.append(r.status_code)
            if r.status_code != 503:
                break
            time.sleep(0.2)
        assert r.status_code == 200, codes
        assert time.monotonic() - t0 < 2 + 5
        heads = [s.recv(100).split(b"\r\n", 1)[0] for s in socks]
        assert all(b" 408 " in h or b" 503 " in h for h in heads), heads
        # both bounds engaged: connections past the cap refused at once, the rest timed out
        assert {h.split(b" ")[1] for h in heads} == {b"408", b"503"}, heads
        assert srv.proc.poll() is None
    finally:
        for s in socks:
            s.close()
        srv.stop()
