"""The plan's stopping rule and the platform keep one promise: a session that ends incomplete
(abandoned: no event for the plan's ``platform.replace_after_s``) is replaced by serving the
same schedule entry to the next participant. Checked through ``nonolab serve`` against an
independent model of the rule, over seeded random runs of joins, finishes and abandons."""

from __future__ import annotations

import itertools
import random
import time
import warnings

import numpy as np
import pytest
import yaml
from serve_helpers import Scripted, Server, post_answers, rating

warnings.filterwarnings("ignore", message="Using `httpx`")

from nonolab.collect.plan import load_plan  # noqa: E402
from nonolab.collect.store import Store  # noqa: E402
from nonolab.design.plan import PlanPuzzle, make_plan, write_plan  # noqa: E402
from nonolab.sat.puzzles import Puzzle  # noqa: E402

#: the promise as the plan states it (nonolab.design.study writes it into every plan)
PROMISE = "replaced by serving the same schedule entry to the next participant"


def _plan(tmp_path, k: int, m: int, blocks: int, seed: int, replace_after_s: float):
    rng = np.random.default_rng(seed)
    puzzles, seen = [], set()
    while len(puzzles) < k:
        p = Puzzle.from_grid(rng.integers(0, 2, (4, 4)).tolist())
        if p.hash not in seen:
            seen.add(p.hash)
            puzzles.append(PlanPuzzle(len(puzzles), p))
    block = [list(q) for q in itertools.permutations(range(k), m)][:k]
    queues = block * blocks
    plan = make_plan(
        "replacement", puzzles, queues, len(block), {"selection": seed},
        participants={"planned": len(queues), "stopping_rule": f"Stop after {len(queues)} "
                      f"complete sessions. Sessions that end incomplete are {PROMISE}."},
        platform={"replace_after_s": replace_after_s, "tutorial": False,
                  "warmup": {"enabled": False}},
    )  # fmt: skip
    return write_plan(plan, tmp_path / "plan.yaml")


class Participant(Scripted):
    def setup(self) -> None:
        self.send({"kind": "step", "from": "consent"},
                  {"kind": "survey", "survey_type": "pre", "answers": _PRE})  # fmt: skip

    def finish(self, n: int) -> None:
        for k in range(1, n + 1):
            self.send({"kind": "skip"}, rating(k, -1))
        self.send({"kind": "survey", "survey_type": "post", "answers": post_answers(n)})


_PRE = {"played_before": "few", "skill_nonogram": 6, "nonogram_size_experience": ["10*10"],
        "logic_experience": ["sudoku"], "puzzle_played_frequency": "many", "skill_puzzles": 7}  # fmt: skip


@pytest.mark.parametrize(
    "seed,backend",
    [(3, "sqlite"), pytest.param(5, "postgresql", marks=pytest.mark.slow),
     pytest.param(11, "sqlite", marks=pytest.mark.slow)],
)  # fmt: skip
def test_incomplete_sessions_are_replaced_through_nonolab_serve(tmp_path, seed, backend, request):
    path = _plan(tmp_path, k=3, m=2, blocks=2, seed=seed, replace_after_s=WAIT)
    plan = load_plan(path)
    _scenario(tmp_path, path, plan, seed, len(plan.sessions), _database(backend, tmp_path, request))


def _database(backend: str, tmp_path, request) -> str:
    """A fresh database for ``nonolab serve --database``: a SQLite file or a new database on
    the throwaway PostgreSQL cluster (tests/collect/conftest.py)."""
    if backend == "sqlite":
        return str(tmp_path / "study.sqlite")
    pg = request.getfixturevalue("pg_cluster_module")
    return pg.create_database(request.getfixturevalue("pg_server"))


#: the test plans' replace_after_s (the smallest the schema allows)
WAIT = 1.0


def _scenario(tmp_path, path, plan, seed: int, n_entries: int, db: str | None = None) -> None:
    """Serve ``path`` with ``nonolab serve`` over ``db`` (default: a SQLite file); seeded joins,
    finishes and abandons until the first ``n_entries`` schedule entries are finished, each join
    checked against the model."""
    import httpx

    wait = plan.platform["replace_after_s"]
    db = db or str(tmp_path / "study.sqlite")
    server = Server(path, db, tmp_path / "export")
    server.start()
    rng = random.Random(seed)
    # the model: entries handed out fresh in order; an abandoned session's entry is owed and
    # owed entries are served first, smallest first
    fresh, owed = 0, []
    served: list[tuple[Participant, int]] = []
    completed: list[int] = []
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            # the researcher recruits until every planned entry has a complete session
            while fresh < n_entries or owed:
                group = []
                for _ in range(min(rng.randint(1, 3), n_entries - fresh + len(owed))):
                    p = Participant(client, _token(client))
                    if owed:
                        want = owed.pop(0)
                    else:
                        want, fresh = fresh % n_entries, fresh + 1
                    assert _entry(db, p.token) == want, (want, owed)
                    group.append((p, want))
                for p, entry in group:
                    fate = rng.choice(["finish", "finish", "abandon early", "abandon late"])
                    if fate == "finish":
                        p.setup()
                        p.finish(plan.per_session)
                        completed.append(entry)
                    elif fate == "abandon late":
                        p.setup()
                        p.send({"kind": "skip"})
                    if fate != "finish":
                        owed.append(entry)
                    served.append((p, entry))
                if owed:
                    owed.sort()
                    time.sleep(wait + 0.3)  # the abandoned ones are now past replace_after_s
            # every planned entry completed exactly once: what the stopping rule promises
            assert sorted(completed) == list(range(n_entries))
            r = client.get(
                "/api/admin/summary", headers={"Authorization": f"Bearer {server.token}"}
            )
            assert r.status_code == 200 and r.json()["owed"] == owed
            # an abandoned participant who comes back still finishes (their entry is then
            # over-served, never lost), and nothing is owed for it any more
            back = [(p, e) for p, e in served if _step(db, p.token) != "done"]
            assert back  # the seeded run abandons sessions
            p, e = back[0]
            if p.seq == 0:
                p.setup()
            _finish_from(p, plan)
            assert _step(db, p.token) == "done"
            r = client.get(
                "/api/admin/summary", headers={"Authorization": f"Bearer {server.token}"}
            )
            assert r.json()["balance"]["sessions"][e]["finished"] == 2
    finally:
        server.stop()


@pytest.mark.slow
def test_the_plan_nonolab_design_writes_keeps_its_promise_when_served(study_dir, tmp_path):
    """``nonolab design`` (tiny settings, the public pool) writes the stopping rule; its plan,
    served with a short abandon time, re-serves abandoned entries as the rule says."""
    from nonolab.cli import main

    out = tmp_path / "design"
    assert main(["design", "--pool", str(study_dir / "nonograms10x10.txt"),
                 "--pool-metrics", str(study_dir / "nonogram_solver_stats.csv"),
                 "--puzzles", "6", "--participants", "12", "--k-curve", "6",
                 "--replications", "20", "--lmm-replications", "5", "--random-selections", "10",
                 "--reference-study", str(study_dir), "--no-figures", "--out", str(out)]) == 0  # fmt: skip
    raw = yaml.safe_load((out / "plan.yaml").read_text(encoding="utf-8"))
    assert PROMISE in raw["participants"]["stopping_rule"]
    raw["platform"] = {"replace_after_s": WAIT, "tutorial": False, "warmup": {"enabled": False}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    plan = load_plan(path)
    _scenario(tmp_path, path, plan, 5, min(len(plan.sessions), 8))


def _token(client) -> str:
    r = client.post("/api/join", json={})
    assert r.status_code == 200, r.text
    return r.json()["url"].rsplit("/", 1)[1]


def _row(db, token):
    store = Store(str(db))
    try:
        return store.participant(token)
    finally:
        store.close()


def _entry(db, token) -> int:
    return _row(db, token)["schedule_idx"]


def _step(db, token) -> str:
    return _row(db, token)["step"]


def _finish_from(p: Participant, plan) -> None:
    st = p.state()["session"]
    k = st["idx"] + 1
    if st["step"] == "puzzle":
        p.send({"kind": "skip"})
        st = p.state()["session"]
    if st["step"] == "rate":
        p.send(rating(k, -1))
        k += 1
    for j in range(k, plan.per_session + 1):
        p.send({"kind": "skip"}, rating(j, -1))
    p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(plan.per_session)})


def test_owed_entries_follow_the_rule_on_both_databases(tmp_path, db_url):
    """The store's rule on SQLite and PostgreSQL with a simulated clock: an abandoned session's
    entry is owed, a live or finished one's is not, a researcher link never opened is never
    abandoned."""
    from nonolab.collect.store import PARTICIPANTS, owed_entries

    path = _plan(tmp_path, k=3, m=2, blocks=1, seed=1, replace_after_s=60)
    plan = load_plan(path)
    store = Store(db_url)
    try:
        made = [store.create_participant(plan) for _ in range(3)]
        assert [m["schedule_idx"] for m in made] == [0, 1, 2]
        now = time.time()
        with store.engine.begin() as conn:
            assert owed_entries(conn, plan, 3, now) == []
            assert owed_entries(conn, plan, 3, now + 61) == [0, 1, 2]
            conn.execute(PARTICIPANTS.update().where(PARTICIPANTS.c.label == made[1]["label"])
                         .values(step="done"))  # fmt: skip
            assert owed_entries(conn, plan, 3, now + 61) == [0, 2]
        with store.engine.begin() as conn:
            conn.execute(PARTICIPANTS.update().values(updated_at=now - 120))
        again = store.create_participant(plan)
        assert again["schedule_idx"] == 0 and again["replaces"]
        assert store.create_participant(plan)["schedule_idx"] == 2
        assert store.create_participant(plan)["schedule_idx"] == 0  # fresh: the cycle restarts
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_excluded_session_is_replaced_through_nonolab_serve(tmp_path, backend, request):
    """The stopping rule's other case: a session the researcher excludes (``nonolab serve
    --exclude``, while the server runs) has its schedule entry served to the next participant;
    the export keeps its data and lists it as excluded."""
    import json
    import os
    import subprocess
    import sys

    import httpx
    from serve_helpers import REPO

    path = _plan(tmp_path, k=3, m=2, blocks=1, seed=2, replace_after_s=600)
    plan = load_plan(path)
    db = _database(backend, tmp_path, request)
    server = Server(path, db, tmp_path / "export")
    server.start()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "nonolab", "serve", str(path), "--database", db, *args],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            people = [Participant(client, _token(client)) for _ in range(2)]
            for p in people:
                p.setup()
                p.finish(plan.per_session)
            labels = [_row(db, p.token)["label"] for p in people]
            assert [_entry(db, p.token) for p in people] == [0, 1]
            bad = cli("--exclude", "P09999", "--reason", "x")
            assert bad.returncode == 2 and "P09999" in bad.stderr
            assert cli("--exclude", labels[1]).returncode == 2  # a reason is required
            ok = cli("--exclude", labels[1], "--reason", "failed the attention check")
            assert ok.returncode == 0, ok.stderr
            assert labels[1] in ok.stdout
            assert _entry(db, _token(client)) == 1  # the excluded session's entry again
            assert _entry(db, _token(client)) == 2  # then the schedule goes on
            again = cli("--exclude", labels[1], "--reason", "twice")
            assert again.returncode == 0 and "nothing new" in again.stdout
            r = client.post(
                "/api/admin/export", headers={"Authorization": f"Bearer {server.token}"}
            )
            assert r.status_code == 200, r.text
        rec = json.loads((tmp_path / "export" / "export.json").read_text(encoding="utf-8"))
        assert rec["excluded"] == {labels[1]: "failed the attention check"}
        assert rec["finished"] == 2
    finally:
        server.stop()


def test_exclusions_in_the_store(tmp_path, db_url):
    from nonolab.collect.store import PARTICIPANTS, StoreError

    plan = load_plan(_plan(tmp_path, k=3, m=2, blocks=1, seed=4, replace_after_s=600))
    store = Store(db_url)
    try:
        made = [store.create_participant(plan) for _ in range(3)]
        with store.engine.begin() as conn:
            conn.execute(PARTICIPANTS.update().values(step="done"))
        assert store.exclude([made[2]["label"], made[0]["label"]], "r") == [
            made[2]["label"], made[0]["label"]]  # fmt: skip
        assert store.exclude([made[0]["label"]], "again") == []
        assert store.exclusions() == {made[0]["label"]: "r", made[2]["label"]: "r"}
        with pytest.raises(StoreError, match="P99999"):
            store.exclude(["P99999"], "r")
        assert [store.create_participant(plan)["schedule_idx"] for _ in range(3)] == [0, 2, 0]
        assert store.summary(plan)["excluded"] == 2
    finally:
        store.close()


def test_the_stores_clock_decides_abandonment_everywhere(tmp_path, db_url):
    """With a clock the test controls (a replayed study in 2023), the store's replacement, the
    summary's dropped and owed, and the page's server time all follow that clock, never the
    wall clock; the request contract's client-time window follows it too."""
    path = _plan(tmp_path, k=3, m=2, blocks=1, seed=6, replace_after_s=60)
    plan = load_plan(path)
    now = [1.7e9]
    store = Store(db_url, clock=lambda: now[0])
    try:
        a = store.create_participant(plan)
        out = store.submit(plan, a["token"], [{"kind": "step", "from": "consent", "seq": 1,
                                              "t": now[0] * 1000.0}])  # fmt: skip
        assert "refused" not in out, out
        s = store.summary(plan)
        assert (s["dropped"], s["owed"], s["in_progress"]) == (0, [], 1)
        now[0] += 61  # past replace_after_s on the store's clock (the wall clock is years on)
        s = store.summary(plan)
        assert (s["dropped"], s["owed"], s["in_progress"]) == (1, [0], 0)
        b = store.create_participant(plan)
        assert (b["schedule_idx"], b["replaces"]) == (0, True)
        assert store.summary(plan)["owed"] == []
        # a time on the store's clock is inside the contract's window; the wall clock's is not
        ok = store.submit(plan, b["token"], [{"kind": "step", "from": "consent", "seq": 1,
                                             "t": now[0] * 1000.0 + 10}])  # fmt: skip
        assert "refused" not in ok, ok
        late = store.submit(plan, b["token"], [{"kind": "step", "from": "tutorial", "seq": 2,
                                               "t": time.time() * 1000.0}])  # fmt: skip
        assert late["refused"]["seq"] == 2
        assert "ahead of the server clock" in late["refused"]["error"]
        from starlette.testclient import TestClient

        from nonolab.collect.app import create_app

        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        st = client.get(f"/api/s/{b['token']}/state").json()
        assert st["server_now_ms"] == now[0] * 1000.0  # the page anchors its clock to it
    finally:
        store.close()
