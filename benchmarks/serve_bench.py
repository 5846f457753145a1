"""Load benchmark of the study server (`nonolab serve`), loopback only, bounded in count and time.

Starts `nonolab serve examples/plan.yaml` in a child process on 127.0.0.1 and drives it with
simulated participants (asyncio + httpx), each sending its own numbered events one per request
(the page's worst case: no batching) at a human rate (exponential gaps, mean `--gap` seconds):
moves, drags, undos, hints and checks on its puzzle, the rating survey when a puzzle is solved.

Phase 1 (steady): `--participants` participants for `--duration` seconds. Reports the
acknowledgement latency (p50/p99/max, ms), events sent / acknowledged / stored (read back from the
database afterwards: every participant's stored events must be exactly 1..n, nothing lost or
duplicated) and the server's resident memory sampled every 5 s (first, last, max; the slope over
the second half in MB/min).

Phase 2 (burst): the same participants at rates rising to `--burst` times the steady rate
(1x, 2x, 5x, 10x by default, `--burst-step` seconds each); for each, offered and achieved events
per second, p99 latency, 429 answers. Saturation: the first rate whose p99 exceeds 100 ms or
whose achieved rate is below 95 % of the offered one.

Usage:
    python benchmarks/serve_bench.py [--participants 200] [--duration 120] [--database PATH]
        [--json benchmarks/results/serve_bench.json]

Bounds: at most 1000 participants, 600 s per phase; the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "examples" / "plan.yaml"
PRE = {
    "played_before": "few",
    "skill_nonogram": 5,
    "nonogram_size_experience": [],
    "logic_experience": [],
    "puzzle_played_frequency": "few",
    "skill_puzzles": 5,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(database: str, port: int, synchronous: str = "FULL") -> subprocess.Popen:
    """Start `nonolab serve` on 127.0.0.1:``port``; return once it answers."""
    import httpx

    env = {**os.environ, "NONOLAB_ADMIN_TOKEN": "bench", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nonolab", "serve", str(PLAN), "--database", database,
         "--port", str(port), "--sqlite-synchronous", synchronous],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


class Conn:
    """A minimal HTTP/1.1 keep-alive client over asyncio streams (POST JSON, read the JSON
    answer): the load generator shares the machine's CPU with the server, and httpx costs
    several times more CPU per request."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        data = json.dumps(body).encode()
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
                return status, json.loads(payload or b"null")
            except (ConnectionError, asyncio.IncompleteReadError):
                self.writer = None
                if attempt:
                    raise
        raise ConnectionError("unreachable")


class Sim:
    """One simulated participant."""

    def __init__(self, client: Any, token: str, rng: random.Random):
        self.client, self.token, self.rng = client, token, rng
        self.seq = 0
        self.step = "consent"
        self.k = 0
        self.lat: list[float] = []
        self.sent = self.acked = self.limited = self.failed = 0

    async def send(self, ev: dict[str, Any], record: list[float] | None) -> dict[str, Any] | None:
        self.seq += 1
        body = {"events": [{**ev, "seq": self.seq, "t": time.time() * 1000.0}]}
        self.sent += 1
        while True:
            t0 = time.perf_counter()
            try:
                status, out = await self.client.post(f"/api/s/{self.token}/events", body)
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


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def drive(url: str, n: int, duration: float, gap: float, burst: list[float],
                burst_step: float, pid: int, seed: int) -> dict[str, Any]:  # fmt: skip
    import psutil

    proc = psutil.Process(pid)
    host, port = url.rsplit("//", 1)[1].split(":")
    if True:
        sims = []
        for i in range(n):
            conn = Conn(host, int(port))
            status, out = await conn.post("/api/join", {})
            while status == 429:  # the join rate is bounded too
                await asyncio.sleep(0.2)
                status, out = await conn.post("/api/join", {})
            sims.append(Sim(conn, out["url"].rsplit("/", 1)[1], random.Random(seed + i)))
        await asyncio.gather(*(s.setup() for s in sims))
        mem: list[tuple[float, float]] = []
        stop = asyncio.Event()

        async def sample() -> None:
            t0 = time.monotonic()
            while not stop.is_set():
                mem.append((time.monotonic() - t0, proc.memory_info().rss / 2**20))
                try:
                    await asyncio.wait_for(stop.wait(), 5.0)
                except TimeoutError:
                    pass

        sampler = asyncio.create_task(sample())
        cpu0 = sum(proc.cpu_times()[:2])
        me = psutil.Process()
        me0 = sum(me.cpu_times()[:2])
        steady: list[float] = []
        t0 = time.monotonic()
        await asyncio.gather(*(s.run(t0 + duration, gap, steady) for s in sims))
        wall = time.monotonic() - t0
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        me_cpu = sum(me.cpu_times()[:2]) - me0
        stop.set()
        await sampler
        half = [(t, m) for t, m in mem if t >= duration / 2]
        slope = None
        if len(half) >= 2:
            import numpy as np

            a = np.array(half)
            slope = float(np.polyfit(a[:, 0] / 60.0, a[:, 1], 1)[0])
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
                "server_cpu_ms_per_event": round(1000 * cpu / max(len(steady), 1), 2),
                "server_cpu_share": round(cpu / wall, 2),
                "client_cpu_ms_per_event": round(1000 * me_cpu / max(len(steady), 1), 2),
                "rate_limited": sum(s.limited for s in sims),
                "connection_errors": sum(s.failed for s in sims),
                "rss_mb_first_last_max": [
                    round(mem[0][1], 1),
                    round(mem[-1][1], 1),
                    round(max(m for _, m in mem), 1),
                ],  # fmt: skip
                "rss_slope_mb_per_min_second_half": None if slope is None else round(slope, 2),
            },
            "burst": [],
        }
        for mult in burst:
            rec: list[float] = []
            lim0 = sum(s.limited for s in sims)
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
                "saturated": bool((pct(rec, 0.99) or 0) > 100 or achieved < 0.95 * offered),
            })  # fmt: skip
        sat = [b["rate_x"] for b in result["burst"] if b["saturated"]]
        result["saturates_at_x"] = sat[0] if sat else None
        result["sent"] = {s.token: s.seq for s in sims}
        result["acked"] = {s.token: s.acked for s in sims}
        return result


def check_stored(database: str, sent: dict[str, int]) -> dict[str, int]:
    """Read the SQLite store back: return ``{participants, lost, duplicated, stored}``."""
    con = sqlite3.connect(database)
    rows = con.execute(
        "SELECT p.token, count(e.seq), count(DISTINCT e.seq), min(e.seq), max(e.seq) "
        "FROM participants p LEFT JOIN events e ON e.participant_id = p.id GROUP BY p.token"
    ).fetchall()
    con.close()
    lost = dup = stored = 0
    for token, n, nd, lo, hi in rows:
        want = sent.get(token, 0)
        stored += n
        dup += n - nd
        lost += want - nd if (lo == 1 and hi == nd) else want
    return {"participants": len(rows), "stored": stored, "lost": lost, "duplicated": dup}


def run(n: int, duration: float, gap: float, burst: list[float], burst_step: float,
        database: str | None = None, seed: int = 0, synchronous: str = "FULL") -> dict[str, Any]:  # fmt: skip
    """Run both phases against a fresh server; return the results (see the module docstring)."""
    if not 1 <= n <= 1000 or not 0 < duration <= 600 or not 0 < burst_step <= 600:
        raise ValueError("at most 1000 participants and 600 s per phase")
    tmp = tempfile.mkdtemp(prefix="serve-bench-")
    database = database or str(Path(tmp) / "bench.sqlite")
    port = free_port()
    proc = start_server(database, port, synchronous)
    try:
        load0 = os.getloadavg()[0]
        out = asyncio.run(drive(f"http://127.0.0.1:{port}", n, duration, gap, burst,
                                burst_step, proc.pid, seed))  # fmt: skip
        load1 = os.getloadavg()[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    sent = out.pop("sent")
    acked = out.pop("acked")
    out["integrity"] = check_stored(database, sent)
    out["integrity"]["acked_equals_sent"] = acked == sent
    out["machine"] = {"cpus": os.cpu_count(), "load_before": round(load0, 2),
                      "load_after": round(load1, 2)}  # fmt: skip
    out["store"] = f"sqlite (WAL, synchronous={synchronous})"
    return out


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
    ap.add_argument("--burst", default="1,2,5,10", help="burst rates, multiples of the steady rate")
    ap.add_argument("--burst-step", type=float, default=20.0, help="seconds per burst rate")
    ap.add_argument("--database", help="SQLite file (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    res = run(a.participants, a.duration, a.gap, [float(x) for x in a.burst.split(",")],
              a.burst_step, a.database, a.seed, a.synchronous)  # fmt: skip
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(text + "\n")
    ok = res["integrity"]["lost"] == 0 and res["integrity"]["duplicated"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
