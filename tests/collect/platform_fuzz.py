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


def generate(seed: int, honest: int = 3, hostile: int = 2, rounds: int = 20,
             per_round: int = 3, restarts: int = 1) -> dict[str, Any]:  # fmt: skip
    """Return a case drawn from ``seed``: ``rounds`` rounds of ``per_round`` hostile actions
    (and ``restarts`` kill -9 restarts at random rounds)."""
    rng = random.Random(seed)
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
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(f"POST /api/s/{token}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                      '{"events": ['.encode())  # fmt: skip
            try:
                got = s.recv(200).decode("latin-1")
            except (TimeoutError, OSError):
                self.problems.append("a slow body was not answered within 10 s")
                return
            self.requests += 1
            if got and " 408 " not in got.split("\r\n", 1)[0]:
                self.problems.append(f"slow body answered {got.splitlines()[0] if got else ''}")

    def restart(self) -> None:
        time.sleep(0.05)
        self.server.kill()
        self.server.start()

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
        rep = validate_study(folder)
        if rep["problems"]:
            self.problems.append(f"the export does not validate: {rep['problems'][:3]}")
        want = (len(self.honest), len(self.honest) * self.plan.per_session)
        got = (rep["summary"]["participants"], rep["summary"]["attempts"])
        if got != want:
            self.problems.append(f"validate counts {got}, the honest clients produced {want}")


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
