"""Helpers (:func:`write_study`, :func:`good_session`) that the bad-input and fuzz tests
use to build studies in temporary folders. Nothing here is copied from the study data.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nonolab.sat.puzzles import Puzzle
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset

T0 = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
GRIDS = {
    0: [[1, 1, 0], [0, 1, 0], [0, 1, 1]],
    1: [[1, 0, 1], [1, 1, 1], [0, 0, 1]],
    2: [[0, 1, 0], [1, 1, 1], [0, 1, 0]],
}
PRE = {
    "played_before": "few",
    "skill_nonogram": 4,
    "nonogram_size_experience": ["<=10*10", "10*10"],
    "logic_experience": ["sudoku"],
    "puzzle_played_frequency": "regular",
    "skill_puzzles": 7,
    "logic_experience_other": "kakuro",
}


def ev(typ: str, s: float, **kw) -> dict:
    """One log event ``typ`` at ``s`` seconds after T0."""
    return {"type": typ, **kw, "t": (T0 + timedelta(seconds=s)).isoformat()}


def puzzle_file_content(grids: dict[int, list[list[int]]] = GRIDS) -> list[dict]:
    """The study puzzle file (JSON list of {id, solution, clues}) for ``grids``."""
    out = []
    for pid, g in grids.items():
        p = Puzzle.from_grid(g)
        out.append({"id": pid, "solution": g, "clues": p.clues_dict()})
    return out


def good_session(queue=(0, 1, 2)) -> list[dict]:
    """A complete session with hand-checkable features (see test_hand_computed_features)."""
    a, b, c = queue
    return [
        ev("session_start_three", 0, queue=list(queue), schedule_idx=4),
        ev("survey_submit", 10, survey_type="pre", puzzle_idx=None, answers=PRE),
        # attempt 1: puzzle a
        ev("move", 12, r=0, c=0, value=1),
        ev("move", 13, r=0, c=2, value=1),  # error (solution 0)
        ev("move", 17, r=0, c=2, value=0),  # gap 4 s: pause
        ev(
            "drag",
            18,
            mode="flip",
            start={"r": 2, "c": 1},
            end={"r": 1, "c": 1},
            normalized_start={"r": 1, "c": 1},
            normalized_end={"r": 2, "c": 1},
            changed_cells=2,
        ),
        ev("hint", 18.5, r=0, c=1),
        ev("move", 19, r=0, c=1, value=1),
        ev("check_bank", 22, puzzle_id=a, solved=False, mismatches=[[2, 2]]),  # gap 3 s: pause
        ev("move", 23, r=2, c=2, value=1),
        ev("check_bank", 24, puzzle_id=a, solved=True, mismatches=[]),
        ev(
            "survey_submit",
            30,
            survey_type="puzzle_1",
            puzzle_idx=0,
            answers={"difficulty": 2, "puzzle_1_guesses": "never"},
        ),
        # attempt 2: puzzle b, skipped
        ev("move", 31, r=0, c=0, value=1),
        ev("move", 32, r=1, c=0, value=1),
        ev("undo", 33, label="cell", diffs_len=1),
        ev(
            "drag",
            34,
            mode="cross_toggle",
            start={"r": 2, "c": 0},
            end={"r": 2, "c": 1},
            normalized_start={"r": 2, "c": 0},
            normalized_end={"r": 2, "c": 1},
            changed_cells=2,
        ),
        ev("skip_puzzle", 40, idx=1, puzzle_id=b),  # gap 6 s: pause
        ev("puzzle_advanced", 40.5, from_idx=1, to_idx=2, puzzle_id=c),
        ev(
            "survey_submit",
            45,
            survey_type="puzzle_2",
            puzzle_idx=1,
            answers={"difficulty": -1, "puzzle_2_guesses": "n/a"},
        ),
        # attempt 3: puzzle c, reset then undo
        ev("move", 46, r=0, c=1, value=1),
        ev("move", 47, r=1, c=0, value=1),
        ev("reset", 48),
        ev("undo", 49, label="reset", diffs_len=2),
        ev("move", 50, r=1, c=1, value=1),
        ev("move", 51, r=1, c=2, value=1),
        ev("move", 52, r=2, c=1, value=1),
        ev("check_bank", 53, puzzle_id=c, solved=True, mismatches=[]),
        ev(
            "ended_without_full_completion",
            53.5,
            solved_flags=[True, False, True],
            skipped_flags=[False, True, False],
        ),
        ev("session_end", 53.5),
        ev(
            "survey_submit",
            55,
            survey_type="puzzle_3",
            puzzle_idx=2,
            answers={"difficulty": 4, "puzzle_3_guesses": "few"},
        ),
        ev(
            "survey_submit",
            60,
            survey_type="post",
            puzzle_idx=None,
            answers={
                "puzzle_1_rate_again": 3,
                "puzzle_1_guesses": "never",
                "puzzle_1_rating_reason": "started from the full column",
                "puzzle_3_rate_again": 4,
                "puzzle_3_rating_reason": "the reset cost time",
                "strategy": "edges first",
                "comments": "none",
            },
        ),
    ]


def write_log(path: Path, events: list[dict | str | bytes], newline_at_end: bool = True) -> None:
    """Write events (dicts as JSON; str/bytes verbatim) one per line."""
    parts = []
    for e in events:
        if isinstance(e, dict):
            parts.append(json.dumps(e).encode())
        elif isinstance(e, str):
            parts.append(e.encode())
        else:
            parts.append(e)
    data = b"\n".join(parts) + (b"\n" if newline_at_end else b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_study(root: Path, sessions: dict[str, list], puzzles=None) -> Path:
    """Write a default-layout study under ``root``: puzzle file + backend/logs/<name>.ndjson."""
    root.mkdir(parents=True, exist_ok=True)
    content = puzzle_file_content() if puzzles is None else puzzles
    (root / "nonograms_6.json").write_text(json.dumps(content), encoding="utf-8")
    for name, events in sessions.items():
        fname = name if "." in name else name + ".ndjson"
        write_log(root / "backend" / "logs" / fname, events)
    return root


def ingest(root: Path):
    """Ingest ``root`` with the preset ``auto`` resolves (default for synthetic studies)."""
    return ingest_study(root, resolve_preset(root))
