"""Tests of the ratings-figure tables: rating counts and means, and the solve trajectories
replayed from ingest events (hints do not change the board)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from nonolab.study.summaries import rating_counts, rating_means, solve_trajectories


def test_rating_counts():
    a = pd.DataFrame({"initial_difficulty": [1, 1, 5], "final_difficulty": [2, np.nan, 5]})
    c = rating_counts(a).set_index("rating")
    assert c["initial"].tolist() == [2, 0, 0, 0, 1]
    assert c["final"].tolist() == [0, 1, 0, 0, 1]


def test_rating_means_per_puzzle_in_label_order():
    a = pd.DataFrame(
        {
            "puzzle_id": ["10", "2", "2", "10"],
            "initial_difficulty": [1, 2, 4, 3],
            "final_difficulty": [np.nan, 5, 5, 2],
        }
    )
    m = rating_means(a)
    assert m["puzzle_id"].tolist() == ["2", "10"]
    assert m["initial_mean"].tolist() == [3.0, 2.0]
    assert m["initial_se"].iloc[0] == np.std([2, 4], ddof=1) / np.sqrt(2)
    assert m["final_mean"].tolist() == [5.0, 2.0]
    assert np.isnan(m["final_se"].iloc[1])  # one final rating: no SE


def test_trajectory_replay_by_hand():
    # 2x2 puzzle, solution [[1, 0], [0, 1]] (2 filled cells).
    puzzles = pd.DataFrame({"puzzle_id": ["7"], "solution_json": [json.dumps([[1, 0], [0, 1]])]})
    rows = [
        # line, t, type, r, c, value
        (1, 0.0, "move", 0, 0, 1),  # correct: 1
        (2, 10.0, "move", 0, 1, 1),  # wrong cell: still 1
        (3, 20.0, "undo", None, None, None),  # undo the wrong fill: 1
        (4, 30.0, "hint", 1, 1, None),  # a hint only names a cell: still 1
        (5, 40.0, "reset", None, None, None),  # board cleared: 0
        (6, 50.0, "drag", 0, 0, 1),  # drag over two cells
        (6, 50.0, "drag", 1, 1, 1),  # -> 2
        (7, 55.0, "check_bank", None, None, None),
    ]
    ev = pd.DataFrame(rows, columns=["line_no", "t_s", "type", "r", "c", "value"])
    ev = ev.assign(participant_id="p", order=1, phase="puzzle", puzzle_id="7", seq=ev["line_no"])
    traj = solve_trajectories(ev, puzzles, step_s=10.0)
    got = dict(zip(traj["t_s"], traj["median"], strict=True))
    assert got == {0.0: 0.5, 10.0: 0.5, 20.0: 0.5, 30.0: 0.5, 40.0: 0.0, 50.0: 1.0}
    assert traj["n_attempts"].unique().tolist() == [1]


def test_trajectories_of_no_events_are_empty():
    puzzles = pd.DataFrame({"puzzle_id": ["7"], "solution_json": [json.dumps([[1]])]})
    ev = pd.DataFrame(
        columns=["line_no", "t_s", "type", "r", "c", "value", "participant_id", "order"]
        + ["phase", "puzzle_id", "seq"]
    )
    traj = solve_trajectories(ev, puzzles)
    assert traj.empty and list(traj.columns)[:2] == ["puzzle_id", "t_s"]
