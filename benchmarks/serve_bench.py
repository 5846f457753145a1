"""Load benchmark of the study server (`nonolab serve`), loopback only, bounded in count and time.

Starts `nonolab serve examples/plan.yaml` in `--servers` child processes (default 1) on
127.0.0.1, all on one store, and drives them with simulated participants (asyncio, a minimal
keep-alive HTTP client), each sending its own numbered events one per request (the page's worst
case: no batching) at a human rate (exponential gaps, mean `--gap` seconds): moves, drags,
undos, hints and checks on its puzzle, the rating survey when a puzzle is solved. With several
servers the participants are spread round-robin over them, as a load balancer would
(`--spread participant`: each participant keeps to one server; `--spread request`: its
requests alternate between the servers).

Stores: a temporary SQLite file (WAL, `--synchronous FULL` by default; one server only: SQLite
serves one process), `--database PATH` (an empty SQLite file), `--database postgresql://...`
(an existing, empty PostgreSQL database) or `--postgres` (a throwaway PostgreSQL cluster on
127.0.0.1, benchmarks/pg_cluster.py, with fsync and synchronous_commit on, removed at the end).

Phase 1 (steady): `--participants` participants for `--duration` seconds. Reports the
acknowledgement latency (p50/p99/max, ms), events sent / acknowledged / stored (read back from the
store through SQLAlchemy afterwards: every participant's stored events must be exactly 1..n,
nothing lost or duplicated), server CPU per event, the throwaway cluster's CPU per event, the
CPU (in cores) that other jobs on the machine used meanwhile, and
each server's resident memory sampled every 5 s (first, last, max; the slope over the second half
in MB/min; the top-level figures are the sums over the servers).

Phase 2 (burst): the same participants at rates rising to `--burst` times the steady rate
(1x, 2x, 5x, 10x by default, `--burst-step` seconds each); for each, offered and achieved events
per second, p99 latency, 429 answers. Saturation: the first rate whose p99 exceeds 100 ms or
whose achieved rate is below 95 % of the offered one.

`--hostile N` mixes N hostile clients into the steady phase (each a request per `--hostile-gap`
seconds on average: batches with an event outside the request contract after a valid one,
unknown links, bodies that are not JSON, wrong join bodies, bodies that never finish); their
answers are counted by status (a 5xx fails the run) and their sessions' stored events must be
exactly their acknowledged prefixes. `--mixed` runs the honest participants alone and then with
`--hostile` (default 10) hostile clients, each on a fresh store, and reports the ratios.

`--matrix` runs three configurations one after the other in one invocation: SQLite with one
server (the baseline), a throwaway PostgreSQL with one server, and with `--servers` (default 2)
servers; the JSON holds the three results and their ratios to the baseline.

Usage:
    python benchmarks/serve_bench.py [--participants 200] [--duration 120] [--database PATH|URL]
        [--postgres] [--servers N] [--spread participant|request] [--matrix]
        [--hostile N] [--hostile-gap S] [--mixed] [--json benchmarks/results/serve_bench.json]

Bounds: at most 1000 participants, 600 s per phase, 8 servers; the servers bind 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "examples" / "plan.yaml"
MAX_SERVERS = 8
SEND_TIMEOUT_S = 60.0  # an event not acknowledged by then (retries included) ends the run
PRE = {
    "played_before": "few",
    "skill_nonogram": 5,
    "nonogram_size_experience": [],
    "logic_experience": [],
    "puzzle_played_frequency": "few",
    "skill_puzzles": 5,
}


class UsageError(ValueError):
    """Options the benchmark refuses (the message says why)."""


def _pg_cluster() -> ModuleType:
    """benchmarks/pg_cluster.py (loaded by path: the benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("pg_cluster", Path(__file__).with_name(
        "pg_cluster.py"))  # fmt: skip
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PG = _pg_cluster()


def is_postgres(database: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL."""
    return database.startswith(("postgresql://", "postgres://"))


def start_servers(database: str, ports: list[int], synchronous: str, logdir: Path
                  ) -> list[subprocess.Popen]:  # fmt: skip
    """Start one `nonolab serve` per port on 127.0.0.1, all at once (so several processes create
    the tables of an empty database together); return once every one answers. Each server's
    stderr goes to ``logdir/server-PORT.log``."""
    import httpx

    env = {**os.environ, "NONOLAB_ADMIN_TOKEN": "bench-researcher-token",
           "PYTHONPATH": str(REPO / "src")}  # fmt: skip
    procs = []
    for port in ports:
        with open(logdir / f"server-{port}.log", "wb") as err:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "nonolab", "serve", str(PLAN), "--database", database,
                 "--port", str(port), "--sqlite-synchronous", synchronous],
                env=env, stdout=subprocess.DEVNULL, stderr=err,
            ))  # fmt: skip
    deadline = time.monotonic() + 60
    try:
        for port, proc in zip(ports, procs, strict=True):
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (logdir / f"server-{port}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"server on port {port} did not start:\n{log}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
    except BaseException:  # also Ctrl-C while they start: none is left running
        stop_servers(procs)
        raise
    return procs


def stop_servers(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every server, then SIGKILL those still running after 15 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


class Conn:
    """A minimal HTTP/1.1 keep-alive client over asyncio streams (POST JSON, read the JSON
    answer): the load generator shares the machine's CPU with the server, and httpx costs
    several times more CPU per request."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.post_raw(path, json.dumps(body).encode())

    async def post_raw(self, path: str, data: bytes) -> tuple[int, Any]:
        for attempt in range(2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            try:
                self.writer.write(
                    f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: "
                    f"application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await self.writer.drain()
                head = await self.reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                payload = await self.reader.readexactly(length)
                if b"connection: close" in head.lower():
                    self.writer.close()
                    self.writer = None
                try:
                    return status, json.loads(payload or b"null")
                except ValueError:
                    return status, None
            except (ConnectionError, asyncio.IncompleteReadError):
                self.writer = None
                if attempt:
                    raise
        raise ConnectionError("unreachable")


class Sim:
    """One simulated participant; its event number ``seq`` goes to ``clients[seq % len]`` (one
    client: every request to one server)."""

    def __init__(self, clients: list[Conn], token: str, rng: random.Random):
        self.clients, self.token, self.rng = clients, token, rng
        self.seq = 0
        self.step = "consent"
        self.k = 0
        self.lat: list[float] = []
        self.sent = self.acked = self.limited = self.failed = 0

    async def send(self, ev: dict[str, Any], record: list[float] | None) -> dict[str, Any] | None:
        self.seq += 1
        body = {"events": [{**ev, "seq": self.seq, "t": time.time() * 1000.0}]}
        self.sent += 1
        client = self.clients[self.seq % len(self.clients)]
        give_up = time.monotonic() + SEND_TIMEOUT_S
        while True:
            if time.monotonic() > give_up:  # a dead server ends the run instead of hanging it
                raise RuntimeError(f"event {self.seq} not acknowledged within {SEND_TIMEOUT_S} s "
                                   f"by the server on port {client.port}")  # fmt: skip
            t0 = time.perf_counter()
            try:
                status, out = await client.post(f"/api/s/{self.token}/events", body)
            except (OSError, asyncio.IncompleteReadError):
                self.failed += 1
                await asyncio.sleep(0.5)
                continue
            dt = (time.perf_counter() - t0) * 1000.0
            if status == 429:
                self.limited += 1
                await asyncio.sleep(float(out.get("retry_after_s", 0.5)))
                continue
            if status != 200:
                raise RuntimeError(f"{status}: {out}")
            self.acked = out["acked"]
            self.step = out["step"]
            if record is not None:
                record.append(dt)
            self.lat.append(dt)
            return out["results"][str(self.seq)]

    async def setup(self) -> None:
        for frm in ("consent", "tutorial", "warmup"):
            await self.send({"kind": "step", "from": frm}, None)
        await self.send({"kind": "survey", "survey_type": "pre", "answers": PRE}, None)

    def next_event(self) -> dict[str, Any]:
        if self.step == "rate":
            self.k += 1
            return {"kind": "survey", "survey_type": f"puzzle_{self.k}",
                    "answers": {"difficulty": 3, f"puzzle_{self.k}_guesses": "few"}}  # fmt: skip
        x = self.rng.random()
        r, c = self.rng.randrange(5), self.rng.randrange(5)
        if x < 0.75:
            return {"kind": "move", "r": r, "c": c, "value": self.rng.choice([1, 1, -1, 0])}
        if x < 0.85:
            return {"kind": "drag", "mode": "cross", "start": {"r": r, "c": c},
                    "end": {"r": self.rng.randrange(5), "c": self.rng.randrange(5)}}  # fmt: skip
        if x < 0.93:
            return {"kind": "undo"}
        if x < 0.97:
            return {"kind": "hint"}
        return {"kind": "check"}

    async def run(self, until: float, gap_s: float, record: list[float]) -> None:
        while True:
            wait = self.rng.expovariate(1.0 / gap_s)
            left = until - time.monotonic()
            if wait >= left:
                await asyncio.sleep(max(left, 0))
                return
            await asyncio.sleep(wait)
            if self.step in ("post", "done"):
                return
            await self.send(self.next_event(), record)


# what hostile clients send (mixed into the honest load with --hostile): events outside the
# request contract after a valid one (the store keeps the valid prefix), bodies that are not
# JSON or of the wrong shape, unknown links, wrong join bodies, bodies that never finish
POISON = [
    '"t": 1e20',
    '"t": 1e999',
    '"t": -5',
    '"value": 7',
    '"r": 9223372036854775808',
    '"r": 1e999',
    '"kind": "teleport"',
    '"zz": "\\u0000"',
    '"mode": "\\ud800"',
    '"start": ' + "[" * 40 + "]" * 40,
]
HOSTILE_OPS = ("poison", "poison", "poison", "unknown", "unknown", "bad_body", "join_bad",
               "slow")  # fmt: skip


class Hostile:
    """A hostile client: its own session, poisoned batches, unknown links, bodies that are not
    JSON, wrong join bodies and slow bodies (headers and half a body, then nothing: held until
    the server's body timeout), one request at a time with exponential gaps."""

    def __init__(self, port: int, token: str, seq: int, rng: random.Random):
        self.port, self.token, self.seq, self.rng = port, token, seq, rng
        self.conn = Conn("127.0.0.1", port)
        self.status: dict[str, int] = {}
        self.requests = 0
        self.slow_task: asyncio.Task[None] | None = None

    def count(self, op: str, status: int) -> None:
        key = f"{op}:{status}"
        self.status[key] = self.status.get(key, 0) + 1
        self.requests += 1

    async def slow(self) -> None:
        r, w = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            w.write(f"POST /api/s/{self.token}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
                    '{"events": ['.encode())  # fmt: skip
            await w.drain()
            head = await asyncio.wait_for(r.readuntil(b"\r\n"), 60)
            self.count("slow", int(head.split(b" ", 2)[1]))
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            self.count("slow", 0)
        finally:
            w.close()

    async def act(self) -> None:
        op = self.rng.choice(HOSTILE_OPS)
        if op == "slow":  # held in the background (one at a time per client) while it goes on
            if self.slow_task is None or self.slow_task.done():
                self.slow_task = asyncio.create_task(self.slow())
                return
            op = "unknown"
        if op == "poison":
            now = time.time() * 1000.0
            good = json.dumps({"kind": "move", "r": 0, "c": 0, "value": 1, "seq": self.seq + 1,
                               "t": now})  # fmt: skip
            bad = (f'{{"kind": "move", "r": 0, "c": 0, "value": 1, "seq": {self.seq + 2}, '
                   f'"t": {now}, {self.rng.choice(POISON)}}}')  # fmt: skip
            data = f'{{"events": [{good}, {bad}]}}'.encode()
            status, out = await self.conn.post_raw(f"/api/s/{self.token}/events", data)
            if status == 422 and out and out.get("acked") == self.seq + 1:
                self.seq += 1
            self.count(op, status)
            return
        if op == "unknown":
            tok = "".join(self.rng.choice("abcdef0123456789") for _ in range(43))
            path, data = f"/api/s/{tok}/events", b'{"events": [{"kind": "undo"}]}'
        elif op == "bad_body":
            path = f"/api/s/{self.token}/events"
            data = self.rng.choice([b"\xff\xfe", b"[1, 2]", b"{", b'{"events": NaN}'])
        else:
            path, data = "/api/join", self.rng.choice([b"[]", b'"x"', b'{"external_id": 5}'])
        status, _ = await self.conn.post_raw(path, data)
        self.count(op, status)

    async def run(self, until: float, gap_s: float) -> None:
        while True:
            wait = self.rng.expovariate(1.0 / gap_s)
            if time.monotonic() + wait >= until:
                return  # a slow body still held is awaited by drive, after the steady phase
            await asyncio.sleep(wait)
            try:
                await self.act()
            except (OSError, asyncio.IncompleteReadError):
                self.count("connection", 0)
                self.conn = Conn("127.0.0.1", self.port)


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def drive(ports: list[int], n: int, duration: float, gap: float, burst: list[float],
                burst_step: float, pids: list[int], seed: int, spread: str = "participant",
                db_cpu: Callable[[], float] | None = None, hostile: int = 0,
                hostile_gap: float = 0.1) -> dict[str, Any]:  # fmt: skip
    """Join ``n`` participants (participant ``i`` on server ``i % len(ports)``), run the steady
    phase (with ``hostile`` hostile clients, one request each per ``hostile_gap`` seconds on
    average) and the bursts; return the results (latencies in ms, memory in MB, CPU in ms per
    event) and the events each participant sent and got acknowledged."""
    import psutil

    procs = [psutil.Process(pid) for pid in pids]
    k = len(ports)
    sims = []
    for i in range(n):
        own = Conn("127.0.0.1", ports[i % k])
        status, out = await own.post("/api/join", {})
        while status == 429:  # the join rate is bounded too (per process)
            await asyncio.sleep(0.2)
            status, out = await own.post("/api/join", {})
        clients = [own]
        if spread == "request":  # seq s goes to server (i + s) % k
            clients = [own if j == i % k else Conn("127.0.0.1", ports[j]) for j in range(k)]
        sims.append(Sim(clients, out["url"].rsplit("/", 1)[1], random.Random(seed + i)))
    await asyncio.gather(*(s.setup() for s in sims))
    hostiles = []
    for j in range(hostile):
        own = Conn("127.0.0.1", ports[j % k])
        status, out = await own.post("/api/join", {})
        while status == 429:
            await asyncio.sleep(0.2)
            status, out = await own.post("/api/join", {})
        h = Sim([own], out["url"].rsplit("/", 1)[1], random.Random(seed + 10_000 + j))
        await h.setup()
        hostiles.append(Hostile(ports[j % k], h.token, h.seq, random.Random(seed + 20_000 + j)))
    mem: list[tuple[float, list[float]]] = []
    stop = asyncio.Event()

    async def sample() -> None:
        t0 = time.monotonic()
        while not stop.is_set():
            mem.append((time.monotonic() - t0, [p.memory_info().rss / 2**20 for p in procs]))
            try:
                await asyncio.wait_for(stop.wait(), 5.0)
            except TimeoutError:
                pass

    def cpu_each() -> list[float]:
        return [sum(p.cpu_times()[:2]) for p in procs]

    me = psutil.Process()

    def machine() -> tuple[float, float]:
        """(CPU seconds the whole machine was busy, CPU seconds of the servers, the throwaway
        cluster and this load generator): their difference is other jobs' load."""
        t = psutil.cpu_times()
        busy = t.user + t.nice + t.system + getattr(t, "irq", 0) + getattr(t, "softirq", 0)
        ours = sum(cpu_each()) + (db_cpu() if db_cpu else 0.0) + sum(me.cpu_times()[:2])
        return busy, ours

    def others(m0: tuple[float, float], wall: float) -> float:
        m1 = machine()
        return round(max(0.0, (m1[0] - m0[0]) - (m1[1] - m0[1])) / wall, 2)

    sampler = asyncio.create_task(sample())
    cpu0 = cpu_each()
    db0 = db_cpu() if db_cpu else None
    me0 = sum(me.cpu_times()[:2])
    m0 = machine()
    steady: list[float] = []
    t0 = time.monotonic()
    await asyncio.gather(*(s.run(t0 + duration, gap, steady) for s in sims),
                         *(h.run(t0 + duration, hostile_gap) for h in hostiles))  # fmt: skip
    wall = time.monotonic() - t0
    await asyncio.gather(*(h.slow_task for h in hostiles if h.slow_task is not None))
    other = others(m0, wall)
    cpu = [b - a for a, b in zip(cpu0, cpu_each(), strict=True)]
    db = db_cpu() - db0 if db_cpu else None
    me_cpu = sum(me.cpu_times()[:2]) - me0
    stop.set()
    await sampler
    ev = max(len(steady), 1)

    def memory(series: list[tuple[float, float]]) -> dict[str, Any]:
        half = [(t, m) for t, m in series if t >= duration / 2]
        slope = None
        if len(half) >= 2:
            import numpy as np

            a = np.array(half)
            slope = round(float(np.polyfit(a[:, 0] / 60.0, a[:, 1], 1)[0]), 2)
        ms = [m for _, m in series]
        return {"rss_mb_first_last_max": [round(ms[0], 1), round(ms[-1], 1), round(max(ms), 1)],
                "rss_slope_mb_per_min_second_half": slope}  # fmt: skip

    total = memory([(t, sum(ms)) for t, ms in mem])
    per_server = [
        {"port": port, "server_cpu_ms_per_event": round(1000 * c / ev, 2),
         "server_cpu_share": round(c / wall, 2), **memory([(t, ms[j]) for t, ms in mem])}
        for j, (port, c) in enumerate(zip(ports, cpu, strict=True))
    ]  # fmt: skip
    result: dict[str, Any] = {
        "steady": {
            "participants": n,
            "duration_s": round(wall, 1),
            "mean_gap_s": gap,
            "events": len(steady),
            "events_per_s": round(len(steady) / wall, 1),
            "p50_ms": round(pct(steady, 0.50), 2),
            "p99_ms": round(pct(steady, 0.99), 2),
            "max_ms": round(max(steady), 2),
            "server_cpu_ms_per_event": round(1000 * sum(cpu) / ev, 2),
            "server_cpu_share": round(sum(cpu) / wall, 2),
            "database_cpu_ms_per_event": None if db is None else round(1000 * db / ev, 2),
            "client_cpu_ms_per_event": round(1000 * me_cpu / ev, 2),
            "rate_limited": sum(s.limited for s in sims),
            "connection_errors": sum(s.failed for s in sims),
            "other_jobs_cpu_cores": other,
            **total,
            "per_server": per_server,
        },
        "burst": [],
    }
    for mult in burst:
        rec: list[float] = []
        lim0 = sum(s.limited for s in sims)
        m1 = machine()
        c1, d1 = cpu_each(), (db_cpu() if db_cpu else None)
        t1 = time.monotonic()
        await asyncio.gather(*(s.run(t1 + burst_step, gap / mult, rec) for s in sims))
        w = time.monotonic() - t1
        offered = n / (gap / mult)
        achieved = len(rec) / w
        result["burst"].append({
            "rate_x": mult,
            "offered_per_s": round(offered, 1),
            "achieved_per_s": round(achieved, 1),
            "p99_ms": round(pct(rec, 0.99) or 0, 2),
            "rate_limited": sum(s.limited for s in sims) - lim0,
            "other_jobs_cpu_cores": others(m1, w),
            "server_cpu_cores": [round((b - a) / w, 2) for a, b in zip(c1, cpu_each(), strict=True)],
            "database_cpu_cores": None if db_cpu is None else round((db_cpu() - d1) / w, 2),
            "saturated": bool((pct(rec, 0.99) or 0) > 100 or achieved < 0.95 * offered),
        })  # fmt: skip
    sat = [b["rate_x"] for b in result["burst"] if b["saturated"]]
    result["saturates_at_x"] = sat[0] if sat else None
    if hostiles:
        by: dict[str, int] = {}
        for h in hostiles:
            for key, v in h.status.items():
                by[key] = by.get(key, 0) + v
        result["hostile"] = {
            "clients": hostile,
            "mean_gap_s": hostile_gap,
            "requests": sum(h.requests for h in hostiles),
            "requests_per_s": round(sum(h.requests for h in hostiles) / wall, 1),
            "answers": dict(sorted(by.items())),
            "server_errors_5xx": sum(
                v for key, v in by.items() if key.split(":")[1].startswith("5")
            ),
        }
    # the hostile sessions' stored events must be exactly their acknowledged prefixes too
    result["sent"] = {s.token: s.seq for s in sims} | {h.token: h.seq for h in hostiles}
    result["acked"] = {s.token: s.acked for s in sims} | {h.token: h.seq for h in hostiles}
    return result


def check_stored(database: str, sent: dict[str, int]) -> dict[str, int]:
    """Read every stored event back through SQLAlchemy (the store's own tables, SQLite or
    PostgreSQL); return ``{participants, stored, lost, duplicated, unexpected}``: ``lost`` counts
    the numbers 1..n a participant sent that are not stored, ``duplicated`` the rows beyond one
    per number, ``unexpected`` stored numbers outside 1..n or rows of participants this run did
    not create."""
    import sqlalchemy as sa

    from nonolab.collect.store import EVENTS, PARTICIPANTS, database_url

    engine = sa.create_engine(database_url(database))
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(PARTICIPANTS.c.token, EVENTS.c.seq).select_from(
                    PARTICIPANTS.outerjoin(EVENTS, EVENTS.c.participant_id == PARTICIPANTS.c.id)
                )
            ).all()
    finally:
        engine.dispose()
    seqs: dict[str, list[int]] = {}
    for token, seq in rows:
        seqs.setdefault(token, [])
        if seq is not None:
            seqs[token].append(seq)
    lost = dup = unexpected = 0
    for token, got in seqs.items():
        want = sent.get(token)
        if want is None:
            unexpected += len(got)
            continue
        have = set(got)
        dup += len(got) - len(have)
        lost += sum(1 for s in range(1, want + 1) if s not in have)
        unexpected += sum(1 for s in have if not 1 <= s <= want)
    lost += sum(want for token, want in sent.items() if token not in seqs)
    return {"participants": len(seqs), "stored": sum(len(g) for g in seqs.values()),
            "lost": lost, "duplicated": dup, "unexpected": unexpected}  # fmt: skip


def describe_store(database: str, synchronous: str) -> str:
    """Name the store as the JSON records it: ``sqlite (WAL, synchronous=FULL)`` or, asked of
    the server, ``postgresql 15 (fsync on, synchronous_commit on)``."""
    if not is_postgres(database):
        return f"sqlite (WAL, synchronous={synchronous})"
    import sqlalchemy as sa

    from nonolab.collect.store import database_url

    engine = sa.create_engine(database_url(database))
    try:
        with engine.connect() as conn:
            show = {k: conn.exec_driver_sql(f"SHOW {k}").scalar()
                    for k in ("server_version", "fsync", "synchronous_commit")}  # fmt: skip
    finally:
        engine.dispose()
    major = str(show["server_version"]).split(".")[0].split()[0]
    return f"postgresql {major} (fsync {show['fsync']}, synchronous_commit {show['synchronous_commit']})"


def refuse_used_database(database: str) -> None:
    """Raise UsageError when ``database`` already holds participants: the benchmark writes
    hundreds of simulated sessions and must never run against a study's database."""
    import sqlalchemy as sa

    from nonolab.collect.store import PARTICIPANTS, database_url

    if not is_postgres(database) and not Path(database).exists():
        return
    engine = sa.create_engine(database_url(database))
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("participants"):
                return
            n = conn.execute(sa.select(sa.func.count()).select_from(PARTICIPANTS)).scalar()
    finally:
        engine.dispose()
    if n:
        raise UsageError(f"the database already holds {n} participants: the benchmark needs an "
                         "empty database (it writes simulated sessions)")  # fmt: skip


def filesystem(path: str) -> str | None:
    """Return the type of the file system that holds ``path`` (e.g. ``ext4``), if known."""
    import psutil

    path = os.path.realpath(path)
    best = None
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        if (path == mp or path.startswith(mp.rstrip("/") + "/")) and (
            best is None or len(mp) > len(best.mountpoint)
        ):
            best = part
    return best.fstype if best else None


def cluster_cpu(cluster: Any) -> Callable[[], float] | None:
    """A function returning the CPU seconds (user + system) the throwaway cluster used so far:
    its postmaster with the backends it reaped, and the backends alive now."""
    import psutil

    pid = cluster.postmaster_pid()
    if pid is None:
        return None
    pm = psutil.Process(pid)

    def total() -> float:
        t = sum(pm.cpu_times()[:4])  # user, system, children_user, children_system
        for child in pm.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                t += sum(child.cpu_times()[:2])
        return t

    return total


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the benchmark runs, so that the servers and a
    throwaway cluster are stopped and removed as on Ctrl-C."""

    def handler(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run(n: int, duration: float, gap: float, burst: list[float], burst_step: float,
        database: str | None = None, seed: int = 0, synchronous: str = "FULL", servers: int = 1,
        spread: str = "participant", postgres: bool = False, hostile: int = 0,
        hostile_gap: float = 0.1) -> dict[str, Any]:  # fmt: skip
    """Run both phases against ``servers`` fresh server processes on one store; return the
    results (see the module docstring). ``postgres=True`` starts a throwaway durable cluster
    (and ``database`` must be None); ``hostile`` hostile clients join the steady phase."""
    if not 0 <= hostile <= 100 or not 0.01 <= hostile_gap <= 60:
        raise UsageError("--hostile: 0 to 100 clients, --hostile-gap 0.01 to 60 s")
    if not 1 <= n <= 1000 or not 0 < duration <= 600 or not 0 < burst_step <= 600:
        raise UsageError("at most 1000 participants and 600 s per phase")
    if not 1 <= servers <= MAX_SERVERS:
        raise UsageError(f"--servers: 1 to {MAX_SERVERS}")
    if spread not in ("participant", "request"):
        raise UsageError("--spread: participant or request")
    if postgres and database:
        raise UsageError("--postgres starts its own cluster: give no --database")
    pg_store = postgres or (database is not None and is_postgres(database))
    if servers > 1 and not pg_store:
        raise UsageError(f"--servers {servers} needs PostgreSQL (--postgres or --database "
                         "postgresql://...): a SQLite store serves one process")  # fmt: skip
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        stack.enter_context(_term_as_interrupt())
        db_cpu = None
        datadir = tmp
        if postgres:
            cluster = stack.enter_context(PG.throwaway_cluster(durable=True))
            database = PG.create_database(cluster.url, "nonolab_bench")
            db_cpu = cluster_cpu(cluster)
            datadir = str(cluster.data)
        elif database is None:
            database = str(Path(tmp) / "bench.sqlite")
        elif not pg_store:
            datadir = str(Path(database).resolve().parent)
        refuse_used_database(database)
        ports = [PG.free_port() for _ in range(servers)]
        procs = start_servers(database, ports, synchronous, Path(tmp))
        try:
            load0 = os.getloadavg()[0]
            out = asyncio.run(drive(ports, n, duration, gap, burst, burst_step,
                                    [p.pid for p in procs], seed, spread, db_cpu, hostile,
                                    hostile_gap))  # fmt: skip
            load1 = os.getloadavg()[0]
        finally:
            stop_servers(procs)
        sent = out.pop("sent")
        acked = out.pop("acked")
        out["integrity"] = check_stored(database, sent)
        out["integrity"]["acked_equals_sent"] = acked == sent
        out["store"] = describe_store(database, synchronous)
    out["servers"] = servers
    out["spread"] = spread
    out["machine"] = {"cpus": os.cpu_count(), "load_before": round(load0, 2),
                      "load_after": round(load1, 2),
                      "data_filesystem": None if pg_store and not postgres
                      else filesystem(datadir)}  # fmt: skip
    return out


RATIO_KEYS = ("p50_ms", "p99_ms", "max_ms", "server_cpu_ms_per_event")


def ratios(res: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``res`` over ``base`` for the steady latencies and server CPU per event (above 1: ``res``
    is slower / costlier), and the saturating burst rates of both."""
    out: dict[str, Any] = {
        k: round(res["steady"][k] / base["steady"][k], 2) if base["steady"][k] else None
        for k in RATIO_KEYS
    }
    rss, rss0 = (
        res["steady"]["rss_mb_first_last_max"][2],
        base["steady"]["rss_mb_first_last_max"][2],
    )
    out["rss_max_mb"] = round(rss / rss0, 2)
    out["saturates_at_x"] = [res["saturates_at_x"], base["saturates_at_x"]]
    return out


def matrix(n: int, duration: float, gap: float, burst: list[float], burst_step: float,
           seed: int, servers: int, spread: str) -> dict[str, Any]:  # fmt: skip
    """Run SQLite / 1 server (the baseline), throwaway PostgreSQL / 1 server and PostgreSQL /
    ``servers`` servers one after the other; return the three results and their ratios to the
    baseline."""
    configs = [("sqlite-1", {}), ("postgresql-1", {"postgres": True}),
               (f"postgresql-{servers}", {"postgres": True, "servers": servers,
                                          "spread": spread})]  # fmt: skip
    results: dict[str, Any] = {}
    for name, kw in configs:
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)
        results[name] = run(n, duration, gap, burst, burst_step, seed=seed, **kw)
    base = results["sqlite-1"]
    return {
        "baseline": "sqlite-1",
        "runs": results,
        "ratios_to_baseline": {k: ratios(v, base) for k, v in results.items() if k != "sqlite-1"},
    }


def mixed(n: int, duration: float, gap: float, burst: list[float], burst_step: float,
          seed: int, hostile: int, hostile_gap: float, postgres: bool) -> dict[str, Any]:  # fmt: skip
    """Run the honest participants alone (the baseline), then the same participants with
    ``hostile`` hostile clients, each on a fresh store; return both and the ratios."""
    results: dict[str, Any] = {}
    for name, h in (("honest-only", 0), (f"honest+{hostile}-hostile", hostile)):
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)
        results[name] = run(n, duration, gap, burst, burst_step, seed=seed, postgres=postgres,
                            hostile=h, hostile_gap=hostile_gap)  # fmt: skip
    base = results["honest-only"]
    return {
        "baseline": "honest-only",
        "runs": results,
        "ratios_to_baseline": {
            k: ratios(v, base) for k, v in results.items() if k != "honest-only"
        },
    }


def ok(res: dict[str, Any]) -> bool:
    """True when nothing was lost, duplicated or stored unexpectedly."""
    if "runs" in res:
        return all(ok(r) for r in res["runs"].values())
    i = res["integrity"]
    clean = res.get("hostile", {}).get("server_errors_5xx", 0) == 0
    return clean and i["lost"] == 0 and i["duplicated"] == 0 and i["unexpected"] == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=200)
    ap.add_argument("--duration", type=float, default=120.0, help="steady phase, seconds")
    ap.add_argument(
        "--gap",
        type=float,
        default=4.1,
        help="mean seconds between a participant's events (default 4.1: the public study's mean "
        "gap between interaction events within attempts)",
    )
    ap.add_argument("--burst", default="1,2,5,10", help="burst rates, multiples of the steady "
                    "rate ('none': no burst phase)")  # fmt: skip
    ap.add_argument("--burst-step", type=float, default=20.0, help="seconds per burst rate")
    ap.add_argument("--database", help="an empty SQLite file (default: a temporary one) or an "
                    "existing empty database postgresql://user@host/db")  # fmt: skip
    ap.add_argument("--postgres", action="store_true", help="start a throwaway PostgreSQL "
                    "cluster on 127.0.0.1 (fsync on), removed at the end")  # fmt: skip
    ap.add_argument("--servers", type=int, default=None, help="server processes on one store "
                    "(PostgreSQL only; default 1, with --matrix 2)")  # fmt: skip
    ap.add_argument("--spread", default="participant", choices=["participant", "request"],
                    help="round-robin over the servers per participant (default) or per "
                    "request")  # fmt: skip
    ap.add_argument("--matrix", action="store_true", help="run SQLite/1 server (baseline), "
                    "PostgreSQL/1 server and PostgreSQL/--servers servers")  # fmt: skip
    ap.add_argument("--hostile", type=int, default=0, help="hostile clients mixed into the "
                    "steady phase (poisoned batches, unknown links, bad and slow bodies)")  # fmt: skip
    ap.add_argument(
        "--hostile-gap",
        type=float,
        default=0.1,
        help="mean seconds between a hostile client's requests (default 0.1)",
    )
    ap.add_argument("--mixed", action="store_true", help="run the honest participants alone, "
                    "then with --hostile hostile clients (default 10), on fresh stores")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    burst = [] if a.burst == "none" else [float(x) for x in a.burst.split(",")]
    try:
        if a.mixed:
            res = mixed(a.participants, a.duration, a.gap, burst, a.burst_step, a.seed,
                        a.hostile or 10, a.hostile_gap, a.postgres)  # fmt: skip
        elif a.matrix:
            if a.database or a.postgres:
                ap.error("--matrix chooses its stores: give neither --database nor --postgres")
            res = matrix(a.participants, a.duration, a.gap, burst, a.burst_step, a.seed,
                         a.servers or 2, a.spread)  # fmt: skip
        else:
            res = run(a.participants, a.duration, a.gap, burst, a.burst_step, a.database,
                      a.seed, a.synchronous, a.servers or 1, a.spread, a.postgres, a.hostile,
                      a.hostile_gap)  # fmt: skip
    except UsageError as e:
        ap.error(str(e))
    except KeyboardInterrupt:
        print("interrupted: servers stopped, temporary stores removed", file=sys.stderr)
        return 130
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(text + "\n")
    return 0 if ok(res) else 1


if __name__ == "__main__":
    raise SystemExit(main())
