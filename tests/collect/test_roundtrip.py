"""Round trip: scripted participants' sessions, exported and read back by the nonolab ingest,
give the features the scripts produced (counted from the scripts' own actions and clocks, not
from the logs): move, hint, check and error counts, solve flags, pause counts for the scripted
waits, times, ratings."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from serve_helpers import Scripted, join, post_answers

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.export import export_study  # noqa: E402
from nonolab.collect.store import Store  # noqa: E402
from nonolab.study.board import Board  # noqa: E402

THRESHOLD_S = 5.0


def _gap(rng: random.Random) -> float:
    """A scripted wait in ms: short (0-3 s) or a pause (7-40 s), never near the threshold."""
    return rng.uniform(0, 3000) if rng.random() < 0.8 else rng.uniform(7000, 40000)


def script_attempt(rng: random.Random, p: Scripted, sol: np.ndarray, k: int, hint_limit: int):
    """Play one attempt with random actions; return what the script did (its own counts)."""
    h, w = sol.shape
    board = Board(h, w)
    times: list[float] = []
    did = {"moves": 0, "hints": 0, "checks": 0, "errors": 0, "solved": False, "first_solve": None}
    hints_used = 0

    def act(ev):
        nonlocal hints_used
        gap = _gap(rng)
        out = p.send(ev, gap_ms=gap)
        times.append(p.t)
        return out["results"][str(p.seq)]

    for _ in range(rng.randint(3, 25)):
        x = rng.random()
        if x < 0.55:
            r, c = rng.randrange(h), rng.randrange(w)
            v = rng.choice([1, 1, -1, 0])
            act({"kind": "move", "r": r, "c": c, "value": v})
            board.move(r, c, v)
            did["moves"] += 1
            did["errors"] += int(v == 1 and sol[r, c] == 0)
        elif x < 0.65:
            a = (rng.randrange(h), rng.randrange(w))
            b = (rng.randrange(h), rng.randrange(w))
            mode = rng.choice(["flip", "cross", "cross_toggle"])
            act({"kind": "drag", "mode": mode, "start": {"r": a[0], "c": a[1]},
                 "end": {"r": b[0], "c": b[1]}})  # fmt: skip
            rows = range(min(a[0], b[0]), max(a[0], b[0]) + 1)
            cols = range(min(a[1], b[1]), max(a[1], b[1]) + 1)
            board.drag(mode, [(r, c) for r in rows for c in cols])
        elif x < 0.72:
            act({"kind": "undo"})
            board.undo()
        elif x < 0.76:
            act({"kind": "reset"})
            board.reset()
            hints_used = 0
        elif x < 0.88:
            res = act({"kind": "hint"})
            wrong = ((board.cells == 1).astype(int) != sol).any()
            expect_hint = hints_used < hint_limit and wrong
            assert (res["hint"] is not None) == expect_hint
            if res["hint"] is not None:
                hr, hc = res["hint"]["r"], res["hint"]["c"]
                assert int(board.cells[hr, hc] == 1) != sol[hr, hc]  # names a wrong cell
                hints_used += 1
                did["hints"] += 1
        else:
            res = act({"kind": "check"})
            did["checks"] += 1
            solved = not ((board.cells == 1).astype(int) != sol).any()
            assert res["solved"] == solved
            if solved:
                did["solved"] = True
                did["first_solve"] = p.t
                break
    if not did["solved"]:
        if rng.random() < 0.3:
            act({"kind": "skip"})
        else:
            for r in range(h):
                for c in range(w):
                    if int(board.cells[r, c] == 1) != sol[r, c]:
                        v = int(sol[r, c])
                        act({"kind": "move", "r": r, "c": c, "value": v})
                        board.move(r, c, v)
                        did["moves"] += 1
                        did["errors"] += int(v == 1 and sol[r, c] == 0)
            assert act({"kind": "check"})["solved"]
            did["checks"] += 1
            did["solved"] = True
            did["first_solve"] = p.t
    gaps = np.diff(times)
    did["pauses"] = int((gaps >= THRESHOLD_S * 1000).sum())
    did["total"] = (times[-1] - times[0]) / 1000
    did["tts"] = (did["first_solve"] - times[0]) / 1000 if did["solved"] else did["total"]
    did["rating"] = rng.randint(1, 5)
    p.send({"kind": "survey", "survey_type": f"puzzle_{k}",
            "answers": {"difficulty": did["rating"], f"puzzle_{k}_guesses": "few"}})  # fmt: skip
    return did


@pytest.mark.parametrize("seed", [1, 2])
def test_scripted_sessions_round_trip_through_the_ingest(plan, tmp_path, seed):
    from nonolab.study.features import attempt_features
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    rng = random.Random(seed)
    # the server clock follows the scripted sessions' times (the request contract refuses client
    # times outside the session and ahead of the server clock)
    now = [1.7e9]
    store = Store(str(tmp_path / "s.sqlite"), clock=lambda: now[0])
    client = TestClient(create_app(plan, store, "admin-secret"))
    expected = {}

    class Clocked(Scripted):
        def events(self, *evs, gap_ms=1000.0):
            out = super().events(*evs, gap_ms=gap_ms)
            now[0] = self.t / 1000.0
            return out

    for i in range(6):
        now[0] = (1.7e12 + i * 1e7) / 1000.0
        tok = join(client)
        p = Clocked(client, tok, t0_ms=1.7e12 + i * 1e7)
        p.setup()
        label = f"P{i + 1:05d}"
        for k in range(1, plan.per_session + 1):
            pid = p.state()["session"]["puzzle"]["id"]
            sol = np.array(plan.puzzles[pid].solution)
            did = script_attempt(rng, p, sol, k, plan.platform["hint_limit"])
            expected[(label, k)] = (pid, did)
        finals = post_answers(plan.per_session, rate=rng.randint(1, 5))
        p.send({"kind": "survey", "survey_type": "post", "answers": finals})
        for k in range(1, plan.per_session + 1):
            expected[(label, k)][1]["final"] = finals[f"puzzle_{k}_rate_again"]
    export_study(store, plan, tmp_path / "study")
    res = ingest_study(tmp_path / "study", resolve_preset(tmp_path / "study", "default"))
    feats = attempt_features(res.tables, THRESHOLD_S)
    assert len(feats) == len(expected)
    for row in feats.to_dict("records"):
        pid, did = expected[(row["participant_id"], row["order"])]
        where = (row["participant_id"], row["order"])
        assert int(row["puzzle_id"]) == pid, where
        assert row["check_count"] == did["checks"], where
        assert row["hint_count"] == did["hints"], where
        assert row["error_count"] == did["errors"], where
        assert bool(row["solved"]) == did["solved"], where
        assert row["pause_count"] == did["pauses"], where
        assert row["total_time_s"] == pytest.approx(did["total"], abs=2e-6), (
            where
        )  # times are logged to the microsecond
        assert row["time_to_solve_s"] == pytest.approx(did["tts"], abs=2e-6), (
            where
        )  # times are logged to the microsecond
        assert row["initial_difficulty"] == did["rating"], where
        assert row["final_difficulty"] == did["final"], where
    moves = res.tables["events"]
    moves = moves[moves["type"] == "move"].drop_duplicates(["participant_id", "line_no"])
    assert len(moves) == sum(d["moves"] for _, d in expected.values())
    store.close()
