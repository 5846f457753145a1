"""API tests of the study server (every endpoint, tokens, idempotency, refusals, limits,
restart, export), on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import yaml
from serve_helpers import PRE, Scripted, join, post_answers, rating, solve_moves

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.plan import load_plan  # noqa: E402
from nonolab.collect.store import Store  # noqa: E402

ADMIN = {"Authorization": "Bearer admin-secret"}


@pytest.fixture
def served(plan, db_url, tmp_path):
    store = Store(db_url)
    app = create_app(plan, store, "admin-secret", export_dir=tmp_path / "export")
    with TestClient(app) as client:
        yield client, store
    store.close()


def play_session(client, plan, skip_second: bool = False) -> Scripted:
    tok = join(client)
    p = Scripted(client, tok)
    p.setup()
    queue = p.state()["session"]["puzzle"] and None
    st = p.state()["session"]
    for k in range(st["n"]):
        pid = p.client.get(f"/api/s/{tok}/state").json()["session"]["puzzle"]["id"]
        if skip_second and k == 1:
            p.send({"kind": "move", "r": 0, "c": 0, "value": -1}, {"kind": "skip"})
        else:
            p.send(*solve_moves(plan.puzzles[pid].solution), {"kind": "check"})
        p.send(rating(k + 1))
    p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(st["n"])})
    assert queue is None
    return p


def test_whole_session_exports_a_study_that_validates(served, plan, tmp_path):
    from nonolab.cli.commands.validate import validate_study

    client, store = served
    play_session(client, plan)
    play_session(client, plan, skip_second=True)
    r = client.post("/api/admin/export", headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["finished"] == 2
    report = validate_study(tmp_path / "export")
    assert report["problems"] == [], report["problems"]
    assert report["summary"]["participants"] == 2 and report["summary"]["attempts"] == 6
    # the exported puzzle file is the plan's puzzles
    pz = json.loads((tmp_path / "export" / "nonograms_6.json").read_text())
    assert [p["id"] for p in pz] == sorted(plan.puzzles)
    # live validate from the dashboard gives the same verdict
    v = client.get("/api/admin/validate", headers=ADMIN).json()
    assert v == {"usable": True, "problems": 0, "first_problems": [], "finished": 2}


def test_pages_and_static_files(served):
    client, _ = served
    assert "Start" in client.get("/").text
    assert client.get("/admin").status_code == 200
    tok = join(client)
    page = client.get(f"/s/{tok}")
    assert page.status_code == 200 and "study.js" in page.text
    assert client.get("/s/not-a-token").status_code == 404
    js = client.get("/static/study.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]


def test_links_are_unguessable_and_private(served, plan):
    client, store = served
    a, b = join(client), join(client)
    assert a != b and len(a) >= 43  # 32 random bytes, URL-safe base64
    pa = Scripted(client, a)
    pa.setup()
    # b's session is untouched by a's events
    assert Scripted(client, b).state()["session"]["step"] == "consent"
    assert Scripted(client, a).state()["session"]["step"] == "puzzle"
    for path in ("/api/s/x/state", f"/api/s/{a[:-1]}/state"):
        assert client.get(path).status_code == 404
    r = client.post(
        f"/api/s/{a[:-1]}/events", json={"events": [{"kind": "reset", "seq": 5, "t": 0}]}
    )
    assert r.status_code == 404
    # the state never carries the solution
    st = pa.state()
    assert "solution" not in json.dumps(st["session"])


@pytest.mark.parametrize(
    "path,method",
    [("/api/admin/summary", "get"), ("/api/admin/participants", "get"),
     ("/api/admin/validate", "get"), ("/api/admin/export", "post"), ("/api/admin/links", "post")],
)  # fmt: skip
def test_researcher_routes_need_the_researcher_token(served, path, method):
    client, _ = served
    tok = join(client)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {tok}"},
                    {"Authorization": "admin-secret"}):  # fmt: skip
        r = getattr(client, method)(path, headers=headers)
        assert r.status_code == 401, (path, headers)
    kw = {"json": {"count": 2}} if path.endswith("links") else {}
    assert getattr(client, method)(path, headers=ADMIN, **kw).status_code == 200


def test_links_made_by_the_researcher(served):
    client, _ = served
    r = client.post("/api/admin/links", headers=ADMIN, json={"count": 3})
    links = r.json()["links"]
    assert len(links) == 3 and len({x["url"] for x in links}) == 3
    assert client.get(links[0]["url"]).status_code == 200
    assert client.post("/api/admin/links", headers=ADMIN, json={"count": 0}).status_code == 400


def test_batches_are_idempotent(served, plan):
    client, store = served
    p = Scripted(client, join(client))
    p.setup()
    batch = p.events({"kind": "move", "r": 0, "c": 0, "value": 1}, {"kind": "hint"},
                     {"kind": "move", "r": 0, "c": 1, "value": -1}, {"kind": "check"})  # fmt: skip
    first = p.post(batch).json()
    again = p.post(batch).json()
    assert again == first and first["acked"] == 8
    # a batch overlapping the stored events: the old ones acknowledged, the new one applied
    more = p.events({"kind": "undo"})
    r = p.post(batch[2:] + more).json()
    assert r["acked"] == 9 and r["results"]["7"] == first["results"]["7"]
    lines = [ln for _, ln in store.logs()][0]
    seqs = [json.loads(x)["seq"] for x in lines]
    # the setup steps 1-2 write no line; step 3 writes session_start_three, 4 the pre-survey
    assert seqs == list(range(3, 10))  # every event's line once
    with store.engine.connect() as conn:
        n = conn.exec_driver_sql("SELECT count(*), count(DISTINCT seq) FROM events").one()
    assert tuple(n) == (9, 9)
    types = [json.loads(x)["type"] for x in lines]
    assert types.count("move") == 2 and types.count("hint") == 1 and types.count("undo") == 1
    # undo restored the crossed cell
    assert p.state()["session"]["board"][1] == 0
    # a stored number re-sent with other content (a second tab) is refused, not dropped silently
    other = [{**batch[0], "value": -1}]
    r = p.post(other)
    assert r.status_code == 422 and "other content" in r.json()["error"]
    assert p.state()["session"]["board"][0] == 1


def test_gaps_and_invalid_events_are_refused_and_counted(served, plan):
    client, store = served
    p = Scripted(client, join(client))
    bad = [
        ({"kind": "move", "r": 0, "c": 0, "value": 1}, "no puzzle is being played"),
        ({"kind": "teleport"}, "unknown event kind"),
        ({"kind": "survey", "survey_type": "post", "answers": {}}, "not expected"),
        ({"kind": "step", "from": "warmup"}, "cannot leave"),
    ]
    n = 0
    for ev, msg in bad:
        r = p.post([{**ev, "seq": 1, "t": p.t}])
        n += 1
        assert r.status_code == 422 and msg in r.json()["error"], r.text
    p.setup()
    seq = p.seq
    more_bad = [
        ({"kind": "move", "r": 5, "c": 0, "value": 1}, "outside the 5x5 grid"),
        ({"kind": "move", "r": 0, "c": 0, "value": 2}, "value must be"),
        ({"kind": "move", "r": 0, "c": True, "value": 1}, "must be an integer"),
        ({"kind": "drag", "mode": "paint", "start": {"r": 0, "c": 0}, "end": {"r": 1, "c": 1}},
         "mode must be"),
        ({"kind": "move", "r": 0, "c": 0, "value": 1, "t": 1e20}, "ahead of the server clock"),
        ({"kind": "move", "r": 0, "c": 0, "value": 1, "t": "now"}, "t must be a number"),
    ]  # fmt: skip
    for ev, msg in more_bad:
        r = p.post([{"t": p.t, **ev, "seq": seq + 1}])
        n += 1
        assert r.status_code == 422 and msg in r.json()["error"], (ev, r.text)
    # a gap in the numbering
    r = p.post([{"kind": "reset", "seq": seq + 2, "t": p.t}])
    n += 1
    assert r.status_code == 422 and "missing" in r.json()["error"]
    # a valid event followed by an invalid one: the first is stored, the second refused
    r = p.post([{"kind": "reset", "seq": seq + 1, "t": p.t},
                {"kind": "move", "r": 9, "c": 9, "value": 1, "seq": seq + 2, "t": p.t}])  # fmt: skip
    n += 1
    assert r.status_code == 422 and r.json()["acked"] == seq + 1
    # bad survey answers
    st = p.state()
    assert st["last_seq"] == seq + 1 and st["session"]["board"] == [0] * 25
    s = client.get("/api/admin/summary", headers=ADMIN).json()
    assert s["rejections"] == n
    for body in (b"{not json", b'{"events": [{"seq": NaN}]}', b'{"events": []}'):
        r = client.post(f"/api/s/{p.token}/events", content=body)
        assert r.status_code == 400, r.text


@pytest.mark.parametrize(
    "answers,msg",
    [({**PRE, "skill_nonogram": 11}, "must be an integer 1-10"),
     ({**PRE, "played_before": "always"}, "must be one of the options"),
     ({k: v for k, v in PRE.items() if k != "skill_puzzles"}, "is required"),
     ({**PRE, "logic_experience": ["sudoku", "sudoku"]}, "distinct options"),
     ({**PRE, "favourite": "x"}, "unknown items"),
     ({**PRE, "logic_experience_other": "x" * 5001}, "at most 5000")],
)  # fmt: skip
def test_survey_answers_are_checked(served, answers, msg):
    client, _ = served
    p = Scripted(client, join(client))
    p.send({"kind": "step", "from": "consent"}, {"kind": "step", "from": "tutorial"},
           {"kind": "step", "from": "warmup"})  # fmt: skip
    r = p.post(p.events({"kind": "survey", "survey_type": "pre", "answers": answers}))
    assert r.status_code == 422 and msg in r.json()["error"], r.text


def test_request_size_batch_size_and_event_rate_are_bounded(plan, tmp_path):
    raw = dict(plan.raw)
    raw["platform"] = {"limits": {"max_body_bytes": 4096, "max_batch_events": 10,
                                  "events_per_s": 2, "event_burst": 12}}  # fmt: skip
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(raw))
    small = load_plan(f)
    store = Store(str(tmp_path / "s.sqlite"))
    client = TestClient(create_app(small, store, "admin-secret"))
    p = Scripted(client, join(client))
    r = client.post(f"/api/s/{p.token}/events", content=b"x" * 5000)
    assert r.status_code == 413
    # a body without Content-Length (chunked) is cut off at the bound too
    r = client.post(f"/api/s/{p.token}/events", content=iter([b"x" * 1000] * 5))
    assert r.status_code == 413
    r = p.post([{"kind": "reset", "seq": i, "t": 0} for i in range(1, 12)])
    assert r.status_code == 413
    p.setup()  # 4 events
    r = p.post(p.events(*[{"kind": "move", "r": 0, "c": 0, "value": 1}] * 8))  # burst used up
    assert r.status_code == 200
    r = p.post(p.events({"kind": "reset"}))
    assert r.status_code == 429 and r.json()["retry_after_s"] > 0
    store.close()


def test_no_cors_and_strict_headers(served):
    client, _ = served
    r = client.options("/api/join", headers={"Origin": "https://evil.example",
                                             "Access-Control-Request-Method": "POST"})  # fmt: skip
    assert "access-control-allow-origin" not in r.headers
    r = client.post("/api/join", json={}, headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    page = client.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"


def test_restart_resumes_the_same_step_and_board(plan, db_url, tmp_path):
    store = Store(db_url)
    client = TestClient(create_app(plan, store, "admin-secret"))
    p = Scripted(client, join(client))
    p.setup()
    p.send({"kind": "move", "r": 1, "c": 1, "value": 1},
           {"kind": "drag", "mode": "cross", "start": {"r": 4, "c": 4}, "end": {"r": 3, "c": 2}})  # fmt: skip
    before = p.state()
    store.close()
    store2 = Store(db_url)  # a new process's view of the same database
    client2 = TestClient(create_app(plan, store2, "admin-secret"))
    p.client = client2
    after = p.state()
    assert after["session"] == before["session"] and after["last_seq"] == before["last_seq"]
    p.send({"kind": "undo"})
    assert p.state()["session"]["board"][4 * 5 + 4] == 0
    store2.close()


def test_export_is_atomic_and_refuses_foreign_folders(served, plan, tmp_path):
    from nonolab.collect.export import export_study

    client, store = served
    play_session(client, plan)
    dest = tmp_path / "out"
    export_study(store, plan, dest)
    first = sorted(x.name for x in (dest / "backend/logs").iterdir())
    play_session(client, plan)
    rec = export_study(store, plan, dest)  # replaces the earlier export
    assert rec["finished"] == 2 and len(list((dest / "backend/logs").iterdir())) == 2
    assert len(first) == 1
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".out")]  # no leftovers
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        export_study(store, plan, foreign)
    assert (foreign / "notes.txt").read_text() == "keep"
    # unfinished sessions go to incomplete/, not to the analysed logs
    Scripted(client, join(client)).setup()
    rec = export_study(store, plan, dest)
    assert rec["incomplete"] == 1 and len(list((dest / "incomplete").iterdir())) == 1


def test_dashboard_counts_and_balance(served, plan):
    client, _ = served
    n = 5
    for _ in range(n):
        play_session(client, plan)
    Scripted(client, join(client)).setup()  # one in progress
    join(client)  # one link never used
    s = client.get("/api/admin/summary", headers=ADMIN).json()
    assert (s["links"], s["started"], s["finished"], s["in_progress"]) == (n + 2, n + 1, n, 1)
    assert s["per_step"] == {"done": n, "puzzle": 1, "consent": 1}
    expect = {str(p): [0] * plan.per_session for p in plan.puzzles}
    for i in range(n):
        for k, pid in enumerate(plan.sessions[i % len(plan.sessions)]):
            expect[str(pid)][k] += 1
    assert s["balance"]["finished_per_puzzle_position"] == expect
    rows = client.get("/api/admin/participants", headers=ADMIN).json()["participants"]
    assert [r["schedule_idx"] for r in rows] == [i % len(plan.sessions) for i in range(n + 2)]


def test_closed_enrollment(plan, tmp_path):
    raw = {**plan.raw, "platform": {"enrollment": "links"}}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(raw))
    store = Store(str(tmp_path / "s.sqlite"))
    client = TestClient(create_app(load_plan(f), store, "admin-secret"))
    assert client.post("/api/join", json={}).status_code == 403
    store.close()


def test_sqlite_store_runs_in_wal_mode(tmp_path):
    store = Store(str(tmp_path / "s.sqlite"))
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()
    assert Path(tmp_path / "s.sqlite").exists()


def test_two_servers_share_one_database(plan, db_url):
    """Two server processes on one database (a load balancer sends a participant's batches to
    either): every event is stored once, in order, and both see the same session."""
    a, b = Store(db_url), Store(db_url)
    ca = TestClient(create_app(plan, a, "admin-secret"))
    cb = TestClient(create_app(plan, b, "admin-secret"))
    p = Scripted(ca, join(ca))
    p.setup()
    sent = []
    for i in range(12):
        batch = p.events({"kind": "move", "r": i % 5, "c": (i * 2) % 5, "value": 1 - i % 3})
        sent += batch
        # each batch (with the previous one again) to one server, then the other
        for client in (ca, cb) if i % 2 else (cb, ca):
            p.client = client
            r = p.post(sent[-2:])
            assert r.status_code == 200 and r.json()["acked"] == p.seq
    p.client = ca
    sa_, sb_ = p.state(), Scripted(cb, p.token).state()
    assert sa_["session"] == sb_["session"] and sa_["last_seq"] == 16
    lines = [json.loads(x) for _, ls in a.logs() for x in ls]
    assert [ln["seq"] for ln in lines if ln["type"] == "move"] == list(range(5, 17))
    a.close()
    b.close()


def test_servers_starting_together_create_the_tables_once(db_url):
    """Several server processes started at once on an empty database: each creates the tables
    if missing, and none fails because another created them first (a load balancer's servers
    start together)."""
    import threading

    n = 6
    barrier = threading.Barrier(n)
    stores: list[Store] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            stores.append(Store(db_url))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=start) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(stores) == n
    plan = load_plan(Path(__file__).resolve().parents[2] / "examples" / "plan.yaml")
    assert [s.create_participant(plan)["label"] for s in stores] == [
        f"P{k:05d}" for k in range(1, n + 1)
    ]
    for s in stores:
        s.close()


def test_completion_code_and_redirect_only_when_done(plan, tmp_path):
    raw = {**plan.raw, "platform": {"completion": {
        "code": "C0DE-42", "redirect_url": "https://example.org/done?cc={code}"}}}  # fmt: skip
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(raw))
    store = Store(str(tmp_path / "s.sqlite"))
    client = TestClient(create_app(load_plan(f), store, "admin-secret"))
    p = Scripted(client, join(client))
    p.setup()
    for k in range(1, 4):
        assert "completion" not in p.state()
        p.send({"kind": "skip"}, rating(k, difficulty=-1))
    assert "completion" not in p.state()  # the post-survey is still to come
    p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(3)})
    c = p.state()["completion"]
    assert c["code"] == "C0DE-42" and c["redirect_url"] == "https://example.org/done?cc=C0DE-42"
    store.close()
