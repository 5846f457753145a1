"""Helpers of the study platform's tests: a scripted participant over the HTTP API."""

from __future__ import annotations

import time
from typing import Any

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
    """A participant driving the API with explicit client times (epoch ms)."""

    def __init__(self, client: Any, token: str, t0_ms: float | None = None):
        self.client, self.token = client, token
        self.seq = 0
        self.t = t0_ms if t0_ms is not None else time.time() * 1000.0 - 3_600_000.0

    def events(self, *evs: dict[str, Any], gap_ms: float = 1000.0) -> list[dict[str, Any]]:
        """Number and time ``evs`` (each ``gap_ms`` after the previous one)."""
        out = []
        for e in evs:
            self.seq += 1
            self.t += gap_ms
            out.append({**e, "seq": self.seq, "t": self.t})
        return out

    def post(self, batch: list[dict[str, Any]]) -> Any:
        return self.client.post(f"/api/s/{self.token}/events", json={"events": batch})

    def send(self, *evs: dict[str, Any], gap_ms: float = 1000.0) -> dict[str, Any]:
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
