"""One board: the platform plays every board and decides "solved" with the analysis's own board
replay (nonolab.study.board). Seeded random sessions (moves, drags of every mode, undos,
resets, hints; some solved, some not) are served, exported and ingested; the ingest's replayed
final board of every attempt is the board the platform held, and the platform's "solved" is
exactly "the replayed board matches the solution"."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from serve_helpers import Scripted, join, post_answers, rating, solve_moves

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.export import export_study  # noqa: E402
from nonolab.collect.store import Store  # noqa: E402
from nonolab.study.board import BOARD_EVENTS, final_boards  # noqa: E402


def _random_events(rng: random.Random, h: int, w: int, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        kind = rng.choices(["move", "drag", "undo", "reset", "hint"], [6, 3, 2, 1, 1])[0]
        if kind == "move":
            out.append({"kind": "move", "r": rng.randrange(h), "c": rng.randrange(w),
                        "value": rng.choice([1, 1, -1, 0])})  # fmt: skip
        elif kind == "drag":
            out.append({"kind": "drag", "mode": rng.choice(["flip", "cross", "cross_toggle"]),
                        "start": {"r": rng.randrange(h), "c": rng.randrange(w)},
                        "end": {"r": rng.randrange(h), "c": rng.randrange(w)}})  # fmt: skip
        else:
            out.append({"kind": kind})
    return out


@pytest.mark.parametrize("seed", [5, 8])
def test_the_platform_and_the_ingest_replay_one_board(tmp_path, plan, seed):
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    rng = random.Random(seed)
    store = Store(str(tmp_path / "s.sqlite"))
    held: dict[tuple[str, int], list[int]] = {}
    said: dict[tuple[str, int], bool] = {}
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        for _ in range(4):
            p = Scripted(client, join(client))
            label = store.participant(p.token)["label"]
            p.setup()
            for k in range(1, plan.per_session + 1):
                puzzle = p.state()["session"]["puzzle"]
                h, w = puzzle["height"], puzzle["width"]
                evs = _random_events(rng, h, w, rng.randint(0, 30))
                if rng.random() < 0.5:  # then solve it: a reset and the solution's cells,
                    sol = plan.puzzles[puzzle["id"]].solution  # a few random events after
                    evs += [{"kind": "reset"}, *solve_moves(sol)]
                    evs += _random_events(rng, h, w, rng.choice([0, 0, 2]))
                if evs:
                    p.send(*evs)
                held[(label, k)] = p.state()["session"]["board"]
                out = p.send({"kind": "check"})
                said[(label, k)] = out["results"][str(p.seq)]["solved"]
                if not said[(label, k)]:
                    p.send({"kind": "skip"})
                p.send(rating(k))
            p.send({"kind": "survey", "survey_type": "post",
                    "answers": post_answers(plan.per_session)})  # fmt: skip
        export_study(store, plan, tmp_path / "export")
    finally:
        store.close()
    result = ingest_study(tmp_path / "export", resolve_preset(tmp_path / "export", "auto"))
    ev = result.tables["events"]
    att = result.tables["attempts"]
    sols = {pid: np.array(p.solution) for pid, p in plan.puzzles.items()}
    shapes = {(a, o): sols[int(q)].shape
              for a, o, q in zip(att["participant_id"], att["order"], att["puzzle_id"], strict=True)}  # fmt: skip
    boards = final_boards(ev[ev["type"].isin(BOARD_EVENTS)], shapes)
    assert len(said) == 12 and 0 < sum(said.values()) < 12  # both outcomes drawn
    for (label, k), cells in held.items():
        key = (label, k)
        replayed = boards.get(key)
        if replayed is None:  # no board event in the attempt
            assert not any(cells), key
            replayed = np.zeros(shapes[key], dtype=np.int8)
        assert replayed.ravel().tolist() == cells, key
        q = int(att[(att["participant_id"] == label) & (att["order"] == k)]["puzzle_id"].iloc[0])
        assert said[key] == bool(((replayed == 1).astype(int) == sols[q]).all()), key
