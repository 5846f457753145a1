"""The platform fuzzer: honest and hostile clients interleaved against a real ``nonolab serve``
on 127.0.0.1 (SQLite or PostgreSQL), with hostile values drawn from the request contract's own
schema (contract_mutations).

A *case* is plain JSON: the number of honest and hostile participants and a list of rounds, each
a list of hostile actions (:func:`generate` draws one from a seed). In every round each honest
participant who has not finished sends its next batch while the round's hostile actions run
concurrently (threads), so that SQLite's grouped commits mix honest and hostile requests.
:func:`run_case` plays a case and returns the list of invariant violations (empty = passed):

* no answer is a 5xx;
* every honest request is answered 200 (connection errors during a restart are retried);
* hostile requests get the 4xx the contract promises (a poisoned batch: 422 with its valid
  prefix acknowledged and the refused number named);
* every event an honest participant got acknowledged is in the export exactly once (its log
  line), and the export validates with the honest participants' counts;
* requests naming unknown links leave the database unchanged (a digest of every row before and
  after a burst of them).

The researcher's actions of the plan's stopping rule run among them (one lock: they take turns
with each other, not with the participants): ``abandon`` (a new session sets up and goes idle;
the test's clock moves its last activity back past ``platform.replace_after_s``, and the next
participant must be served its schedule entry), ``exclude`` (``nonolab serve --exclude`` while
the server runs: the next participant is served the excluded session's entry; the export lists
it), ``export_foreign`` (an export into the export folder while the researcher's own file lies in
it: refused with 409, nothing in the folder changed) and ``wrong_plan`` (a kill -9 restart first
tried with another plan over the same database: refused with status 2 naming both hashes, then
restarted with the right plan).

:func:`shrink` removes hostile actions while the case still fails (bounded number of replays);
:func:`save_case` writes a case as JSON (to a results folder outside the source tree; a case is
promoted to ``tests/collect/fuzz_regressions/`` by copying it there on purpose).
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from contract_mutations import deep, event_mutations, mutated_event
from serve_helpers import PRE, Server, post_answers, solve_moves

from nonolab.collect.app import redact

MUTATIONS = {c[0]: c for c in event_mutations()}
HOSTILE_OPS = ("poison", "poison", "poison", "raw", "replay", "unknown", "unknown", "join_bad",
               "slow", "export", "admin_bad")  # fmt: skip
BODY_TIMEOUT_S = 1.0


#: the researcher's actions of the stopping rule and the export, and how often each is drawn
RESEARCHER_OPS = {"abandon": 2, "exclude": 1, "export_foreign": 1, "wrong_plan": 1}


def generate(seed: int, honest: int = 3, hostile: int = 2, rounds: int = 20,
             per_round: int = 3, restarts: int = 1,
             researcher: dict[str, int] | None = None) -> dict[str, Any]:  # fmt: skip
    """Return a case drawn from ``seed``: ``rounds`` rounds of ``per_round`` hostile actions
    (and ``restarts`` kill -9 restarts at random rounds), plus the researcher's actions
    ``researcher`` (``{op: count}``, default :data:`RESEARCHER_OPS`) at random rounds."""
    rng = random.Random(seed)
    extra = RESEARCHER_OPS if researcher is None else researcher
    researcher_at = [(rng.randrange(1, rounds), op) for op, n in sorted(extra.items())
                     for _ in range(n)]  # fmt: skip
    names = sorted(MUTATIONS)
    out_rounds = []
    admin_bad = 0
    restart_at = set(rng.sample(range(2, rounds), min(restarts, max(0, rounds - 2))))
    for k in range(rounds):
        acts: list[dict[str, Any]] = []
        for _ in range(per_round):
            op = rng.choice(HOSTILE_OPS)
            if op == "admin_bad":
                admin_bad += 1
                if admin_bad > 3:  # the researcher's own requests share the address
                    op = "unknown"
            a: dict[str, Any] = {"op": op, "who": rng.randrange(hostile)}
            if op == "poison":
                a["mutation"] = rng.choice(names)
            elif op == "raw":
                a["body"] = rng.choice(["bad-utf8", "deep", "nan", "not-object", "huge-int"])
            elif op == "replay":
                a["altered"] = rng.random() < 0.5
            elif op == "unknown":
                a["route"] = rng.choice(["events", "state", "page", "bad-body"])
                a["token"] = "".join(rng.choice("abcdefXYZ0189-_") for _ in range(43))
            elif op == "join_bad":
                a["body"] = rng.choice(["[]", '"x"', "7", "null", '{"external_id": 5}',
                                        '{"external_id": "\\u0000"}', deep(30)])  # fmt: skip
            acts.append(a)
        if k in restart_at:
            acts.append({"op": "restart"})
        acts += [{"op": op, "who": 0} for at, op in researcher_at if at == k]
        out_rounds.append(acts)
    return {"seed": seed, "honest": honest, "hostile": hostile, "rounds": out_rounds}


def save_case(case: dict[str, Any], folder: Path, name: str, problems: list[str]) -> Path:
    """Write ``case`` (with the problems it produced) as ``folder/name.json``; return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**case, "problems": problems[:20]}, indent=1) + "\n")
    return path


class Honest:
    """An honest participant: plays the whole session in small batches, with real client
    times; remembers every event the server acknowledged."""

    def __init__(self, ident: int):
        self.ident = ident
        self.token = ""
        self.seq = 0
        self.acked: dict[int, dict[str, Any]] = {}
        self.plan_steps: list[list[dict[str, Any]]] = []
        self.done = False
        self.state: dict[str, Any] | None = None

    def next_batch(self, plan: Any, get_state: Any) -> list[dict[str, Any]] | None:
        if not self.plan_steps:
            st = get_state(self.token)["session"]
            step = st["step"]
            if step == "consent":
                self.plan_steps = [[{"kind": "step", "from": "consent"},
                                    {"kind": "step", "from": "tutorial"},
                                    {"kind": "step", "from": "warmup"}],
                                   [{"kind": "survey", "survey_type": "pre", "answers": PRE}]]  # fmt: skip
            elif step == "puzzle":
                moves = solve_moves(plan.puzzles[st["puzzle"]["id"]].solution)
                batches = [moves[i : i + 4] for i in range(0, len(moves), 4)]
                batches[0] = [{"kind": "move", "r": 0, "c": 0, "value": -1},
                              {"kind": "hint"}, {"kind": "undo"}, *batches[0]]  # fmt: skip
                self.plan_steps = [*batches, [{"kind": "check"}]]
            elif step == "rate":
                k = st["idx"] + 1
                self.plan_steps = [[{"kind": "survey", "survey_type": f"puzzle_{k}",
                                     "answers": {"difficulty": 1 + (self.ident + k) % 5,
                                                 f"puzzle_{k}_guesses": "few"}}]]  # fmt: skip
            elif step == "post":
                self.plan_steps = [[{"kind": "survey", "survey_type": "post",
                                     "answers": post_answers(st["n"])}]]  # fmt: skip
            else:
                self.done = True
                return None
        evs = self.plan_steps.pop(0)
        out = []
        for e in evs:
            self.seq += 1
            out.append({**e, "seq": self.seq, "t": time.time() * 1000.0})
        return out


EXPECTED_LINE = {"move": {"move"}, "undo": {"undo"}, "hint": {"hint", "hint_none"},
                 "check": {"check_bank"}, "survey": {"survey_submit"}}  # fmt: skip


def db_digest(url: str) -> str:
    """sha256 of every row of every table of the study database at ``url``."""
    import sqlalchemy as sa

    from nonolab.collect.store import META, database_url

    eng = sa.create_engine(database_url(url))
    h = hashlib.sha256()
    try:
        with eng.connect() as conn:
            for table in META.sorted_tables:
                rows = conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()
                h.update(f"{table.name}:{[tuple(r) for r in rows]!r}".encode())
    finally:
        eng.dispose()
    return h.hexdigest()


class Run:
    """One case against one server."""

    def __init__(self, case: dict[str, Any], plan_path: Path, plan: Any, database: str,
                 workdir: Path):  # fmt: skip
        self.case, self.plan, self.database = case, plan, database
        self.server = Server(plan_path, database, workdir / "export", token="fuzz-researcher-token")
        self.server.extra_args = ["--body-timeout", str(BODY_TIMEOUT_S)]
        self.problems: list[str] = []
        self.requests = 0
        self.client = httpx.Client(timeout=30)
        self.admin = {"Authorization": f"Bearer {self.server.token}"}
        self.hostile: list[dict[str, Any]] = []
        self.honest = [Honest(i) for i in range(case["honest"])]
        self.plan_path, self.workdir = plan_path, workdir
        # the researcher's actions take turns (each checks the schedule as a whole); exports
        # take turns with each other (one checks that a refused export changed nothing)
        self.researcher_lock = threading.Lock()
        self.export_lock = threading.Lock()
        self.excluded: dict[str, str] = {}  # label -> reason, as the researcher excluded them
        self.extra = 0  # sessions the researcher's actions made
        # counts kill -9 restarts (twice each: before the kill, after the start; odd while one
        # is under way): a connection cut while it was odd or changed was cut by a restart
        self.generation = 0

    # -- requests ---------------------------------------------------------------------------

    def request(self, method: str, path: str, *, retry: bool = False, **kw: Any) -> httpx.Response:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = self.client.request(method, self.server.url + path, **kw)
            except httpx.TransportError:
                if not retry or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                continue
            self.requests += 1
            if r.status_code >= 500:
                self.problems.append(f"{r.status_code} for {method} {redact(path)}: {r.text[:200]}")
            return r

    def get_state(self, token: str) -> dict[str, Any]:
        r = self.request("GET", f"/api/s/{token}/state", retry=True)
        if r.status_code != 200:
            self.problems.append(f"honest state request answered {r.status_code}: {r.text[:200]}")
            return {"session": {"step": "done"}}
        return r.json()

    # -- actors -----------------------------------------------------------------------------

    def honest_step(self, h: Honest) -> None:
        batch = h.next_batch(self.plan, self.get_state)
        if batch is None:
            return
        r = self.request("POST", f"/api/s/{h.token}/events", json={"events": batch}, retry=True)
        if r.status_code != 200:
            self.problems.append(f"honest {h.ident} batch answered {r.status_code}: {r.text[:300]}")
            h.done = True
            return
        for e in batch:
            if e["seq"] <= r.json()["acked"]:
                h.acked[e["seq"]] = e

    def hostile_act(self, a: dict[str, Any]) -> None:
        """Run hostile action ``a``; a request cut by a restart is not retried (the hostile
        participant's numbering is read again from the server)."""
        if a["op"] in RESEARCHER_OPS:
            with self.researcher_lock:
                getattr(self, a["op"])()
            return
        me = self.hostile[a["who"] % len(self.hostile)]
        try:
            with me["lock"]:  # one hostile participant's requests in turn (its own numbering)
                self._hostile_act(a)
        except httpx.TransportError:
            if a["op"] in ("poison", "replay"):
                me["seq"] = self.get_state(me["token"])["last_seq"]
                me["last"] = None

    def _hostile_act(self, a: dict[str, Any]) -> None:
        op = a["op"]
        me = self.hostile[a["who"] % len(self.hostile)]
        tok = me["token"]
        if op == "poison":
            case = MUTATIONS[a["mutation"]]
            now = time.time() * 1000.0
            first = {"kind": "move", "r": 0, "c": 0, "value": 1, "seq": me["seq"] + 1, "t": now}
            text = '{"events": [' + json.dumps(first) + ", "
            text += mutated_event(case, me["seq"] + 2, now) + "]}"
            r = self.request("POST", f"/api/s/{tok}/events", content=text.encode())
            if r.status_code == 429:
                return
            body = (
                r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            )
            want = None if case[1] == "seq" else me["seq"] + 2
            if (
                r.status_code != 422
                or body.get("acked") != me["seq"] + 1
                or (body.get("refused", {}).get("seq") != want)
            ):
                self.problems.append(f"poison {a['mutation']}: {r.status_code} {r.text[:300]}")
                return
            me["seq"] += 1
            me["last"] = [first]
        elif op == "raw":
            raw = {"bad-utf8": b'{"events": [{"kind": "\xff"}]}', "deep": deep(5000).encode(),
                   "nan": b'{"events": [{"t": NaN}]}', "not-object": b"[1, 2]",
                   "huge-int": b'{"events": [' + b"9" * 5000 + b"]}"}[a["body"]]  # fmt: skip
            r = self.request("POST", f"/api/s/{tok}/events", content=raw)
            if r.status_code not in (400, 429):
                self.problems.append(f"raw {a['body']}: {r.status_code} {r.text[:200]}")
        elif op == "replay":
            if not me.get("last"):
                return
            batch = [dict(e) for e in me["last"]]
            if a["altered"]:
                batch[0]["t"] += 1.0  # the same number with other content
            r = self.request("POST", f"/api/s/{tok}/events", json={"events": batch})
            want = 422 if a["altered"] else 200
            if r.status_code not in (want, 429):
                self.problems.append(
                    f"replay altered={a['altered']}: {r.status_code} {r.text[:200]}"
                )
        elif op == "unknown":
            t = a["token"]
            route = a["route"]
            if route == "events":
                r = self.request("POST", f"/api/s/{t}/events",
                                 json={"events": [{"kind": "undo", "seq": 1, "t": 1.0}]})  # fmt: skip
            elif route == "bad-body":
                r = self.request("POST", f"/api/s/{t}/events", content=b"\x00\xff")
            elif route == "state":
                r = self.request("GET", f"/api/s/{t}/state")
            else:
                r = self.request("GET", f"/s/{t}")
            if r.status_code not in (404, 429):
                self.problems.append(f"unknown link {route}: {r.status_code}")
        elif op == "join_bad":
            r = self.request("POST", "/api/join", content=a["body"].encode())
            if r.status_code not in (400, 429):
                self.problems.append(
                    f"join body {a['body'][:20]!r}: {r.status_code} {r.text[:200]}"
                )
        elif op == "slow":
            self.slow_body(tok)
        elif op == "export":
            with self.export_lock:
                r = self.request("POST", "/api/admin/export", headers=self.admin)
            if r.status_code not in (200, 409):
                self.problems.append(f"export during writes: {r.status_code} {r.text[:200]}")
        elif op == "admin_bad":
            r = self.request("GET", "/api/admin/summary", headers={"Authorization": "Bearer guess"})
            if r.status_code not in (401, 429):
                self.problems.append(f"wrong researcher token: {r.status_code}")

    def slow_body(self, token: str) -> None:
        """Send the headers and a few bytes of a body, then nothing: the server must answer 408
        after its body timeout (and keep serving everyone else meanwhile)."""
        gen = self.generation
        try:
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
                s.sendall(f"POST /api/s/{token}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                          '{"events": ['.encode())  # fmt: skip
                got = s.recv(200).decode("latin-1")
        except OSError as e:  # TimeoutError included
            if (gen % 2 or self.generation != gen) and not isinstance(e, TimeoutError):
                return  # cut (or refused) by a kill -9 restart under way or meanwhile
            self.problems.append(f"a slow body was not answered within 10 s ({e!r})")
            return
            self.requests += 1
            if got and " 408 " not in got.split("\r\n", 1)[0]:
                self.problems.append(f"slow body answered {got.splitlines()[0] if got else ''}")

    def restart(self) -> None:
        time.sleep(0.05)
        with self.researcher_lock:  # one restart at a time (wrong_plan restarts too)
            self.generation += 1
            self.server.kill()
            self.server.start()
            self.generation += 1

    # -- the researcher ---------------------------------------------------------------------

    def admin_json(self, path: str) -> dict[str, Any]:
        r = self.request("GET", path, headers=self.admin, retry=True)
        if r.status_code != 200:
            self.problems.append(f"GET {path} answered {r.status_code}: {r.text[:200]}")
            return {}
        return r.json()

    def new_session(self, name: str, setup: bool = True) -> tuple[str, str, int]:
        """Join as a new participant ``name`` (external id) and set up; return ``(token, label,
        schedule entry)``."""
        self.extra += 1
        r = self.request("POST", "/api/join", json={"external_id": f"{name}-{self.extra}"},
                         retry=True)  # fmt: skip
        tok = r.json()["url"].rsplit("/", 1)[1]
        if setup:
            now = time.time() * 1000.0
            batch = [{"kind": "step", "from": "consent", "seq": 1, "t": now}]
            self.request("POST", f"/api/s/{tok}/events", json={"events": batch}, retry=True)
        rows = self.admin_json("/api/admin/participants").get("participants", [])
        row = next(p for p in rows if p["external_id"] == f"{name}-{self.extra}")
        return tok, row["label"], row["schedule_idx"]

    def owed(self) -> list[int] | None:
        return self.admin_json("/api/admin/summary").get("owed")

    def expect_replacement(self, what: str, entry: int) -> None:
        """The schedule owes exactly ``entry``; the next participant is served it; then nothing
        is owed."""
        if (owed := self.owed()) != [entry]:
            self.problems.append(f"{what}: entry {entry} should be owed alone, owed {owed}")
            return
        _, _, got = self.new_session(f"replaces-{what}", setup=False)
        if got != entry:
            self.problems.append(f"{what}: the next participant got entry {got}, not {entry}")
        if (owed := self.owed()) != []:
            self.problems.append(f"{what}: after the replacement still owed {owed}")

    def abandon(self) -> None:
        """A participant sets up and goes idle; the test's clock moves the session's last
        activity back past the plan's ``replace_after_s``: its entry is owed and re-served."""
        import sqlalchemy as sa

        from nonolab.collect.store import PARTICIPANTS, database_url

        _, label, entry = self.new_session("abandons")
        eng = sa.create_engine(database_url(self.database))
        try:
            with eng.begin() as conn:
                conn.execute(
                    PARTICIPANTS.update().where(PARTICIPANTS.c.label == label).values(
                        updated_at=time.time() - self.plan.platform["replace_after_s"] - 5)
                )  # fmt: skip
        finally:
            eng.dispose()
        self.expect_replacement("abandon", entry)

    def exclude(self) -> None:
        """``nonolab serve --exclude`` while the server runs: the excluded session's entry is
        served to the next participant."""
        _, label, entry = self.new_session("excluded")
        reason = f"fuzz exclusion {len(self.excluded) + 1} <b>&amp;"
        proc = self.cli("--exclude", label, "--reason", reason)
        if proc.returncode != 0 or label not in proc.stdout:
            self.problems.append(
                f"--exclude {label}: status {proc.returncode} {proc.stderr[-300:]}"
            )
            return
        self.excluded[label] = reason
        self.expect_replacement("exclude", entry)

    def cli(self, *args: str, plan: Path | None = None) -> Any:
        import os
        import subprocess
        import sys

        from serve_helpers import REPO

        env = {**os.environ, "PYTHONPATH": str(REPO / "src"),
               "NONOLAB_ADMIN_TOKEN": self.server.token}  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "nonolab", "serve", str(plan or self.plan_path), "--database",
             self.database, *args],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    def export_foreign(self) -> None:
        """The researcher's own file in the export folder: the export is refused (409) naming
        it, and nothing in the folder changes; once moved out, exports work again."""
        dest = self.workdir / "export"
        with self.export_lock:
            if not dest.exists():
                r = self.request("POST", "/api/admin/export", headers=self.admin, retry=True)
                if r.status_code != 200:
                    self.problems.append(f"first export answered {r.status_code}: {r.text[:200]}")
                    return
            foreign = dest / "backend" / "my notes.txt"
            foreign.write_text("the researcher's notes\n", encoding="utf-8")
            before = _folder_digest(dest)
            r = self.request("POST", "/api/admin/export", headers=self.admin, retry=True)
            after = _folder_digest(dest)
            if r.status_code != 409 or "my notes.txt" not in r.text:
                self.problems.append(
                    f"export beside a foreign file answered {r.status_code}: {r.text[:200]}"
                )
            if after != before:
                self.problems.append("a refused export changed the export folder")
            foreign.unlink()

    def wrong_plan(self) -> None:
        """A kill -9 restart first tried with another plan over the same database: refused
        (status 2) naming both plans' hashes; then the server restarts with its own plan."""
        from nonolab.collect.plan import load_plan

        other = self.workdir / "other-plan.yaml"
        if not other.exists():
            other.write_text(self.plan_path.read_text(encoding="utf-8").replace(
                f"name: {self.plan.name}\n", f"name: {self.plan.name}-edited\n", 1),
                encoding="utf-8")  # fmt: skip
        self.generation += 1
        self.server.kill()
        try:
            proc = self.cli("--port", str(self.server.port), plan=other)
            want = (self.plan.digest, load_plan(other).digest)
            if proc.returncode != 2 or not all(d in proc.stderr for d in want):
                self.problems.append(f"a restart with another plan: status {proc.returncode}, "
                                     f"{proc.stderr[-300:]!r}")  # fmt: skip
        finally:
            self.server.start()
            self.generation += 1

    # -- the run ----------------------------------------------------------------------------

    def play(self) -> None:
        self.server.start()
        try:
            for h in self.honest:
                r = self.request("POST", "/api/join", json={"external_id": f"honest-{h.ident}"})
                h.token = r.json()["url"].rsplit("/", 1)[1]
            for j in range(self.case["hostile"]):
                r = self.request("POST", "/api/join", json={"external_id": f"hostile-{j}"})
                tok = r.json()["url"].rsplit("/", 1)[1]
                setup = [{"kind": "step", "from": "consent"}, {"kind": "step", "from": "tutorial"},
                         {"kind": "step", "from": "warmup"},
                         {"kind": "survey", "survey_type": "pre", "answers": PRE}]  # fmt: skip
                now = time.time() * 1000.0
                batch = [{**e, "seq": i + 1, "t": now} for i, e in enumerate(setup)]
                self.request("POST", f"/api/s/{tok}/events", json={"events": batch})
                self.hostile.append({"token": tok, "seq": len(batch), "last": batch,
                                     "lock": threading.Lock()})  # fmt: skip
            with ThreadPoolExecutor(max_workers=16) as pool:
                for acts in self.case["rounds"]:
                    jobs = [pool.submit(self.honest_step, h) for h in self.honest if not h.done]
                    for a in acts:
                        if a["op"] == "restart":
                            jobs.append(pool.submit(self.restart))
                        else:
                            jobs.append(pool.submit(self.hostile_act, a))
                    for j in jobs:
                        j.result()
                # the honest participants finish after the hostile rounds
                for _ in range(200):
                    live = [h for h in self.honest if not h.done]
                    if not live:
                        break
                    for j in [pool.submit(self.honest_step, h) for h in live]:
                        j.result()
            self.check_strangers()
            self.check_export()
        finally:
            self.client.close()
            self.server.stop()

    def check_strangers(self) -> None:
        before = db_digest(self.database)
        for i in range(40):
            tok = f"stranger-{i:03d}-" + "q" * 32
            op = ("events", "bad-body", "state", "page")[i % 4]
            self.hostile_act({"op": "unknown", "who": 0, "route": op, "token": tok})
            self.hostile_act({"op": "join_bad", "who": 0, "body": "[]"})
        if db_digest(self.database) != before:
            self.problems.append("requests for unknown links changed the database")

    def check_export(self) -> None:
        from nonolab.cli.commands.validate import validate_study

        r = self.request("POST", "/api/admin/export", headers=self.admin)
        if r.status_code != 200:
            self.problems.append(f"final export answered {r.status_code}: {r.text[:200]}")
            return
        folder = Path(r.json()["folder"])
        people = self.request("GET", "/api/admin/participants", headers=self.admin).json()
        label = {p["external_id"]: p["label"] for p in people["participants"]}
        finished = 0
        for h in self.honest:
            files = [p for p in folder.rglob(f"{label[f'honest-{h.ident}']}.ndjson")]
            if len(files) != 1:
                self.problems.append(f"honest {h.ident}: {len(files)} exported logs")
                continue
            finished += "incomplete" not in files[0].parts
            lines = [json.loads(x) for x in files[0].read_text().splitlines() if x.strip()]
            by_seq: dict[int, list[str]] = {}
            for ln in lines:
                by_seq.setdefault(ln.get("seq"), []).append(ln["type"])
            for seq, ev in h.acked.items():
                want = EXPECTED_LINE.get(ev["kind"])
                if want is None:
                    continue
                n = sum(t in want for t in by_seq.get(seq, []))
                if n != 1:
                    self.problems.append(f"honest {h.ident} event {seq} ({ev['kind']}) is in "
                                         f"the export {n} times")  # fmt: skip
            extra = set(by_seq) - set(h.acked)
            if extra:
                self.problems.append(f"honest {h.ident}: exported events never acknowledged "
                                     f"{sorted(extra)[:5]}")  # fmt: skip
        if finished != len(self.honest):
            self.problems.append(f"{finished} of {len(self.honest)} honest sessions finished")
        try:
            rec = json.loads((folder / "export.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            self.problems.append(f"export.json unreadable: {e}")
        else:
            if rec.get("excluded") != self.excluded:
                self.problems.append(f"export.json lists excluded {rec.get('excluded')}, the "
                                     f"researcher excluded {self.excluded}")  # fmt: skip
        rep = validate_study(folder)
        if rep["problems"]:
            self.problems.append(f"the export does not validate: {rep['problems'][:3]}")
        want = (len(self.honest), len(self.honest) * self.plan.per_session)
        got = (rep["summary"]["participants"], rep["summary"]["attempts"])
        if got != want:
            self.problems.append(f"validate counts {got}, the honest clients produced {want}")


def _folder_digest(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def run_case(case: dict[str, Any], plan_path: Path, plan: Any, database: str,
             workdir: Path) -> tuple[list[str], int]:  # fmt: skip
    """Play ``case``; return ``(problems, requests made)``."""
    run = Run(case, plan_path, plan, database, workdir)
    try:
        run.play()
    except Exception as e:  # a crash of the harness is a finding too (e.g. a refused join)
        import traceback

        run.problems.append(f"{type(e).__name__}: {e} {traceback.format_exc(limit=-2)[-600:]}")
    return run.problems, run.requests


def shrink(case: dict[str, Any], fails: Any, budget: int = 12) -> dict[str, Any]:
    """Return a smaller case that still fails (``fails(case) -> bool``): drop halves, then
    single rounds' hostile actions, at most ``budget`` replays."""
    cur = case
    acts = [(i, j) for i, r in enumerate(cur["rounds"]) for j in range(len(r))]
    chunk = max(1, len(acts) // 2)
    while chunk >= 1 and budget > 0:
        acts = [(i, j) for i, r in enumerate(cur["rounds"]) for j in range(len(r))]
        progressed = False
        for start in range(0, len(acts), chunk):
            if budget <= 0:
                break
            drop = set(acts[start : start + chunk])
            trial = {**cur, "rounds": [[a for j, a in enumerate(r) if (i, j) not in drop]
                                       for i, r in enumerate(cur["rounds"])]}  # fmt: skip
            budget -= 1
            if fails(trial):
                cur, progressed = trial, True
                break
        if not progressed:
            chunk //= 2
    return cur
