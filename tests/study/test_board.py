"""The one board replay (:mod:`nonolab.study.board`): semantics by hand, and the hint semantics
checked against the public study's logs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from public_study import study_ingest

from nonolab.study.board import Board, replay_attempts


def test_board_by_hand():
    b = Board(2, 3)
    assert b.move(0, 0, 1) == 0
    assert b.drag("cross", [(1, 0), (1, 1)]) == [(0, -1), (0, -1)]
    assert b.drag("cross_toggle", [(1, 1), (1, 2)]) == [(-1, 0), (0, -1)]
    b.hint(0, 1)  # a hint names a cell; the board does not change
    assert b.cells.tolist() == [[1, 0, 0], [-1, 0, -1]]
    b.undo()  # the cross_toggle drag
    assert b.cells.tolist() == [[1, 0, 0], [-1, -1, 0]]
    b.reset()
    assert not b.cells.any()
    b.undo()  # the reset
    assert b.cells.tolist() == [[1, 0, 0], [-1, -1, 0]]
    b.undo()
    b.undo()
    b.undo()  # nothing left to undo
    assert not b.cells.any()
    assert b.filled_correct(np.array([[1, 1, 0], [0, 0, 0]])) == 0


def test_replay_yields_after_board_events_only():
    ev = pd.DataFrame(
        [
            ("p", 1, 1, "move", 0, 0, 1),
            ("p", 1, 2, "hint", 0, 1, None),
            ("p", 1, 3, "drag", 0, 1, 1),
            ("p", 1, 3, "drag", 1, 1, 1),
            ("p", 1, 4, "check_bank", None, None, None),
            ("q", 2, 1, "undo", None, None, None),
        ],
        columns=["participant_id", "order", "line_no", "type", "r", "c", "value"],
    )
    seen = [
        (k, i, b.cells.sum())
        for k, i, b in replay_attempts(ev, {("p", 1): (2, 2), ("q", 2): (2, 2)})
    ]
    assert seen == [(("p", 1), 0, 1), (("p", 1), 2, 3), (("q", 2), 5, 0)]


def test_hints_do_not_change_the_board_in_the_public_logs(study_dir):
    """The platform's hint names a cell that differs from the solution, and a click always
    changes its cell (left: 1 <-> 0, right: -1 <-> 0). So the next move on a hinted cell must
    change the replayed value. With hints leaving the board alone it nearly always does
    (ingest's ``prev_value``); had a hint set the cell to its solution state (1, or -1 for an
    empty cell), most of those moves would have set the value the cell already held."""
    tables = study_ingest(str(study_dir)).tables
    pz = tables["puzzles"]
    sols = {
        h: np.array(json.loads(s))
        for h, s in zip(pz["puzzle_hash"], pz["solution_json"], strict=True)
    }
    ev = tables["events"]
    ev = ev[ev["phase"] == "puzzle"].sort_values(["participant_id", "order", "seq"], kind="stable")
    n_hints = n_next = same_if_no_change = same_if_set = 0
    for _, g in ev.groupby(["participant_id", "order"], sort=False):
        sol = sols[g["puzzle_hash"].iloc[0]]
        pending: set[tuple[int, int]] = set()
        for typ, r, c, prev, value in zip(
            g["type"], g["r"], g["c"], g["prev_value"], g["value"], strict=True
        ):
            if typ not in ("hint", "move", "drag"):
                continue
            cell = (int(r), int(c))
            if typ == "hint":
                n_hints += 1
                pending.add(cell)
            elif cell in pending:
                pending.discard(cell)
                if typ == "move":
                    n_next += 1
                    same_if_no_change += int(prev == value)
                    same_if_set += int(value == (1 if sol[cell] == 1 else -1))
    assert n_hints > 600 and n_next > 600
    assert same_if_no_change <= 0.02 * n_next  # 9 of 645 in the public logs
    assert same_if_set >= 0.5 * n_next  # 411 of 645
