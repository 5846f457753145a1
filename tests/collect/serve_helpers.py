"""Helpers of the study platform's tests: a scripted participant over the HTTP API, and
``nonolab serve`` in a child process (:class:`Server`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


PLAN = REPO / "examples" / "plan.yaml"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PRE = {
    "played_before": "few",
    "skill_nonogram": 6,
    "nonogram_size_experience": ["10*10"],
    "logic_experience": ["sudoku"],
    "puzzle_played_frequency": "many",
    "skill_puzzles": 7,
}


def post_answers(n: int, rate: int = 3) -> dict[str, Any]:
    """Post-survey answers for ``n`` attempts (every attempt re-rated ``rate``)."""
    out: dict[str, Any] = {}
    for k in range(1, n + 1):
        out |= {f"puzzle_{k}_rate_again": rate, f"puzzle_{k}_guesses": "few",
                f"puzzle_{k}_rating_reason": f"reason {k}"}  # fmt: skip
    return out | {"strategy": "lines first", "comments": "none"}


def rating(k: int, difficulty: int = 3) -> dict[str, Any]:
    """The survey event after attempt ``k`` (1-based)."""
    return {"kind": "survey", "survey_type": f"puzzle_{k}",
            "answers": {"difficulty": difficulty, f"puzzle_{k}_guesses": "never"}}  # fmt: skip


class Scripted:
    """A participant driving the API with explicit client times (epoch ms; by default from now,
    ``gap_ms`` apart: the request contract refuses times before the session started or ahead
    of the server clock beyond its tolerance)."""

    def __init__(self, client: Any, token: str, t0_ms: float | None = None):
        self.client, self.token = client, token
        self.seq = 0
        self.t = t0_ms if t0_ms is not None else time.time() * 1000.0

    def events(self, *evs: dict[str, Any], gap_ms: float = 100.0) -> list[dict[str, Any]]:
        """Number and time ``evs`` (each ``gap_ms`` after the previous one)."""
        out = []
        for e in evs:
            self.seq += 1
            self.t += gap_ms
            out.append({**e, "seq": self.seq, "t": self.t})
        return out

    def post(self, batch: list[dict[str, Any]]) -> Any:
        return self.client.post(f"/api/s/{self.token}/events", json={"events": batch})

    def send(self, *evs: dict[str, Any], gap_ms: float = 100.0) -> dict[str, Any]:
        r = self.post(self.events(*evs, gap_ms=gap_ms))
        assert r.status_code == 200, r.text
        return r.json()

    def state(self) -> dict[str, Any]:
        r = self.client.get(f"/api/s/{self.token}/state")
        assert r.status_code == 200, r.text
        return r.json()

    def setup(self) -> None:
        """Consent, tutorial, warm-up and the pre-survey."""
        self.send({"kind": "step", "from": "consent"}, {"kind": "step", "from": "tutorial"},
                  {"kind": "step", "from": "warmup"},
                  {"kind": "survey", "survey_type": "pre", "answers": PRE})  # fmt: skip


def solve_moves(solution: Any) -> list[dict[str, Any]]:
    """One fill move per filled cell of ``solution``."""
    return [
        {"kind": "move", "r": r, "c": c, "value": 1}
        for r, row in enumerate(solution)
        for c, v in enumerate(row)
        if v
    ]


def join(client: Any) -> str:
    """Create a session through the open enrollment; return its token."""
    r = client.post("/api/join", json={})
    assert r.status_code == 200, r.text
    return r.json()["url"].rsplit("/", 1)[1]


#: Seconds a started server has to answer its first request.
START_TIMEOUT_S = 120


class Server:
    """``nonolab serve`` in a child process on a free port (start, kill -9, start again)."""

    def __init__(
        self, plan: Path, database: str, export_dir: Path, token: str = "researcher-token"
    ):
        self.plan, self.database, self.export_dir, self.token = plan, database, export_dir, token
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.extra_args: list[str] = []  # more ``nonolab serve`` options

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "NONOLAB_ADMIN_TOKEN": self.token,
               "PYTHONPATH": str(REPO / "src")}  # fmt: skip
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nonolab", "serve", str(self.plan), "--database",
             self.database, "--port", str(self.port), "--export-dir", str(self.export_dir),
             *self.extra_args],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        import httpx

        # generous: on a loaded 2-core machine (two test workers, Snakemake jobs) the server's
        # imports alone can take tens of seconds
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.kill()  # a server that never answered is not left running
        raise RuntimeError(f"server did not start within {START_TIMEOUT_S} s")

    def kill(self) -> None:
        """Kill the server at once (SIGKILL: no shutdown, as a crash)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
