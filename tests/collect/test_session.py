"""The session state machine: every line it writes is a valid log line, and the board the
server keeps equals the board nonolab's ingest replays from those lines
(nonolab.study.board.Board, an independent statement of each event's effect)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import PRE

from nonolab.collect.session import InvalidEvent, apply_event, new_state
from nonolab.study.board import Board
from nonolab.study.logs import parse_line

T0 = 1.7e12

cell = st.tuples(st.integers(0, 4), st.integers(0, 4))
action = st.one_of(
    st.builds(lambda rc, v: {"kind": "move", "r": rc[0], "c": rc[1], "value": v}, cell,
              st.sampled_from([1, 0, -1])),
    st.builds(lambda a, b, m: {"kind": "drag", "mode": m, "start": {"r": a[0], "c": a[1]},
                               "end": {"r": b[0], "c": b[1]}},
              cell, cell, st.sampled_from(["flip", "cross", "cross_toggle"])),
    st.just({"kind": "undo"}),
    st.just({"kind": "reset"}),
    st.just({"kind": "hint"}),
    st.just({"kind": "check"}),
)  # fmt: skip


def _to_puzzle(plan, state):
    for i, frm in enumerate(("consent", "tutorial", "warmup")):
        state, lines, _ = apply_event(plan, state, {"kind": "step", "from": frm, "t": T0 + i}, T0)
    return state


@settings(max_examples=150, deadline=None)
@given(actions=st.lists(action, max_size=40), gaps=st.lists(st.floats(-500, 5000), min_size=40,
                                                            max_size=40))  # fmt: skip
def test_server_board_equals_the_ingest_replay(plan, actions, gaps):
    state = new_state(plan, plan.sessions[0], 0)
    state = _to_puzzle(plan, state)
    state, _, _ = apply_event(
        plan, state, {"kind": "survey", "survey_type": "pre", "answers": PRE, "t": T0 + 10}, T0
    )
    sol = np.array(plan.puzzles[plan.sessions[0][0]].solution)
    ref = Board(*sol.shape)
    t = T0 + 100
    last_t = None
    for a, g in zip(actions, gaps, strict=False):
        if state["step"] != "puzzle":
            break
        t += g  # negative gaps: a re-anchored clock; the server keeps time monotonic
        state, lines, res = apply_event(plan, state, {**a, "t": t, "seq": 1}, T0 + 1e9, who="x")
        for ln in lines:
            ev = parse_line(json.dumps(ln))
            assert last_t is None or ev.t >= last_t
            last_t = ev.t
            f = ev.fields
            if ev.type == "move":
                ref.move(f["r"], f["c"], f["value"])
            elif ev.type == "drag":
                (r0, c0), (r1, c1) = f["normalized_start"], f["normalized_end"]
                cells = [(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
                assert f["changed_cells"] == len(cells)
                ref.drag(f["mode"], cells)
            elif ev.type == "undo":
                ref.undo()
            elif ev.type == "reset":
                ref.reset()
            elif ev.type == "check_bank":
                assert f["solved"] == bool(((ref.cells == 1).astype(int) == sol).all())
            elif ev.type == "hint":
                assert int(ref.cells[f["r"], f["c"]] == 1) != sol[f["r"], f["c"]]
        if state["step"] == "puzzle":
            assert np.array_equal(np.array(state["board"]).reshape(sol.shape), ref.cells)


def test_refused_events_leave_the_state_unchanged(plan):
    state = _to_puzzle(plan, new_state(plan, plan.sessions[0], 0))
    snapshot = json.dumps(state, sort_keys=True)
    for ev in ({"kind": "move", "r": 0, "c": 0, "value": 1, "t": T0},
               {"kind": "survey", "survey_type": "pre", "answers": {}, "t": T0},
               {"kind": "nope", "t": T0}, {"kind": "check", "t": float("nan")}):  # fmt: skip
        with pytest.raises(InvalidEvent):
            apply_event(plan, state, ev, T0)
        assert json.dumps(state, sort_keys=True) == snapshot
