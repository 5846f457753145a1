"""Behavioural features per attempt (METHODS 4), computed from the ingest tables.

Definitions (all times in seconds, from the event times ``t``; an attempt's events are those with
``phase == "puzzle"`` and its ``order``, see :mod:`nonolab.study.ingest`):

* interaction events: roles ``interaction`` and ``marker`` (every event but session and survey
  events, as the published analysis counted them); a drag counts once;
* :func:`interaction_gaps`: differences between consecutive interaction-event times within one
  attempt (zero gaps included; gaps across attempts never formed);
* ``pause_count``: gaps ``>= threshold_s``;
* ``time_to_solve_s``: first interaction to the first ``check_bank`` with ``solved``; if never
  solved, first to last interaction (missing with fewer than two interactions);
* ``total_time_s``: first to last interaction (0 with one, missing with none);
* ``check_count``: ``check_bank`` events; ``hint_count``: ``hint`` events (not ``hint_none``);
* ``error_count``: ``move`` events that fill (value 1) a cell empty in the solution (drags are not
  counted, as published);
* ``percent_error``: fraction of all cells where the final board (replayed moves, drags, undos,
  resets; crossed counts as empty) differs from the solution; ``percent_incomplete``: fraction of
  the solution's filled cells not filled on the final board (both fractions in 0-1, despite the
  published names);
* ``solved``: the platform's completion flag; ratings and the six expertise items are joined.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd

from nonolab.study.ingest import EXPERTISE_ITEMS

INTERACTION_ROLES = ("interaction", "marker")
FEATURE_COLUMNS = [
    "participant_id",
    "puzzle_id",
    "puzzle_hash",
    "order",
    "pause_count",
    "time_to_solve_s",
    "total_time_s",
    "check_count",
    "error_count",
    "hint_count",
    "percent_error",
    "percent_incomplete",
    "solved",
    "initial_difficulty",
    "final_difficulty",
    *EXPERTISE_ITEMS,
]
KEYS = ["participant_id", "order"]


def attempt_events(events: pd.DataFrame) -> pd.DataFrame:
    """Return the events inside attempt windows, one row per log line (drags collapsed).

    Sorted by participant, order and time (stable on ``seq``).
    """
    ev = events[(events["phase"] == "puzzle") & (events["role"] != "survey")]
    ev = ev.drop_duplicates(["participant_id", "line_no"])
    return ev.sort_values(["participant_id", "order", "seq"], kind="stable")


def _seconds(t: pd.Series) -> np.ndarray:
    """Return datetimes as float seconds relative to their first value (microsecond exact)."""
    ns = t.astype("datetime64[us, UTC]").astype("int64").to_numpy()
    return ns.astype(np.float64) / 1e6


def interaction_gaps(
    events: pd.DataFrame, roles: tuple[str, ...] = INTERACTION_ROLES
) -> pd.DataFrame:
    """Return one row per gap between consecutive interaction events of an attempt.

    Columns: ``participant_id``, ``puzzle_id``, ``puzzle_hash``, ``order``, ``gap_s`` (seconds,
    >= 0, zero gaps kept). ``roles`` selects which event roles count as interaction.
    """
    ev = attempt_events(events)
    ev = ev[ev["role"].isin(roles)]
    us = ev["t"].astype("datetime64[us, UTC]").astype("int64")
    ev = ev.assign(_us=us).sort_values(KEYS + ["_us"], kind="stable")
    d = ev.groupby(KEYS, sort=False)["_us"].diff()
    out = ev.loc[d.notna(), ["participant_id", "puzzle_id", "puzzle_hash", "order"]].copy()
    out["gap_s"] = d[d.notna()].to_numpy(dtype=np.int64) / 1e6
    return out.reset_index(drop=True)


def _final_board(rows: pd.DataFrame, height: int, width: int) -> np.ndarray:
    """Replay move/drag/undo/reset rows (time order) and return the final board (-1/0/1)."""
    board = np.zeros((height, width), dtype=np.int8)
    stack: list[list[tuple[int, int, int]]] = []
    for typ, grp in _ops(rows):
        if typ in ("move", "drag"):
            snap = []
            for r, c, v in grp:
                snap.append((r, c, int(board[r, c])))
                board[r, c] = v
            if snap:
                stack.append(snap)
        elif typ == "undo":
            if stack:
                for r, c, old in stack.pop():
                    board[r, c] = old
        elif typ == "reset":
            nz = np.argwhere(board != 0)
            stack.append([(int(r), int(c), int(board[r, c])) for r, c in nz])
            board[:, :] = 0
    return board


def _ops(rows: pd.DataFrame) -> Iterator[tuple[str, list[tuple[int, int, int]]]]:
    """Yield (type, [(r, c, value), ...]) per log line: a drag's cells come as one operation."""
    cur_line, cur_type, cells = None, None, []
    for line, typ, r, c, v in rows[["line_no", "type", "r", "c", "value"]].itertuples(
        index=False, name=None
    ):
        if line != cur_line:
            if cur_line is not None:
                yield cur_type, cells
            cur_line, cur_type, cells = line, typ, []
        if typ in ("move", "drag"):
            cells.append((int(r), int(c), int(v)))
    if cur_line is not None:
        yield cur_type, cells


def _narrow(events: pd.DataFrame) -> pd.DataFrame:
    """Attempt-window events (surveys dropped) with the columns features use and ``us`` =
    event time in integer microseconds; sorted by participant, order and ``seq``."""
    ev = events.loc[
        (events["phase"] == "puzzle") & (events["role"] != "survey"),
        ["participant_id", "order", "puzzle_hash", "line_no", "seq", "type", "role"]
        + ["r", "c", "value", "solved", "t"],
    ]
    ev = ev.assign(us=ev["t"].astype("datetime64[us, UTC]").astype("int64")).drop(columns="t")
    return ev.sort_values(["participant_id", "order", "seq"], kind="stable")


def pause_counts(gaps: pd.DataFrame, threshold_s: float) -> pd.Series:
    """Return the pause count of each attempt in ``gaps``: the number of its gaps ``>=
    threshold_s`` seconds (0 when none is), as an int64 Series indexed by (``participant_id``,
    ``order``), sorted. ``gaps``: :func:`interaction_gaps` rows (``participant_id``, ``order``,
    ``gap_s`` in seconds). Attempts without any gap are absent (their count is 0)."""
    is_pause = (gaps["gap_s"] >= threshold_s).astype("int64")
    return is_pause.groupby([gaps[k] for k in KEYS], sort=True).sum().rename("pause_count")


def _line_gaps(inter: pd.DataFrame) -> pd.DataFrame:
    """Return the gaps (``participant_id``, ``order``, ``gap_s``) between consecutive
    interaction lines, formed as :func:`interaction_gaps` forms them, from the narrowed,
    de-duplicated lines (event time ``us`` in integer microseconds)."""
    inter = inter.sort_values([*KEYS, "us"], kind="stable")
    us = inter["us"].to_numpy(dtype=np.int64)
    pid = inter["participant_id"].to_numpy(dtype=object)
    order = inter["order"].to_numpy(dtype=object)
    same = (pid[1:] == pid[:-1]) & (order[1:] == order[:-1])
    out = inter.iloc[1:][same][KEYS].copy()
    out["gap_s"] = np.diff(us)[same] / 1e6
    return out


def _count(frame: pd.DataFrame) -> pd.Series:
    return frame.groupby(KEYS).size()


def attempt_features(
    tables: dict[str, pd.DataFrame],
    threshold_s: float,
    keep_initial_rating_sentinel: bool = False,
) -> pd.DataFrame:
    """Return one row per attempt with :data:`FEATURE_COLUMNS` (see the module docstring).

    ``tables`` are the ingest tables (``events``, ``attempts``, ``ratings``, ``participants``,
    ``puzzles``). ``threshold_s`` is the pause threshold in seconds. With
    ``keep_initial_rating_sentinel`` the initial rating is the logged value (the platform's -1
    for a skipped puzzle is kept, as in the published table); otherwise values outside 1-5 are
    missing.
    """
    if not threshold_s > 0:
        raise ValueError(f"pause threshold must be positive, got {threshold_s!r}")
    attempts = tables["attempts"]
    puzzles = tables["puzzles"].set_index("puzzle_hash")
    sols = {h: np.array(json.loads(s), dtype=np.int8) for h, s in puzzles["solution_json"].items()}
    ev = _narrow(tables["events"])
    lines = ev.drop_duplicates(["participant_id", "line_no"])
    inter = lines[lines["role"].isin(INTERACTION_ROLES)]
    span = inter.groupby(KEYS)["us"].agg(["min", "max", "size"])
    checks = lines[lines["type"] == "check_bank"]
    first_solve = checks[checks["solved"].fillna(False).astype(bool)].groupby(KEYS)["us"].min()
    n_checks = _count(checks)
    n_hints = _count(lines[lines["type"] == "hint"])
    fills = lines[(lines["type"] == "move") & (lines["value"] == 1)]
    wrong = np.zeros(len(fills), dtype=bool)
    for h, idx in fills.groupby("puzzle_hash").indices.items():
        sub = fills.iloc[idx]
        wrong[idx] = sols[h][sub["r"].to_numpy(int), sub["c"].to_numpy(int)] == 0
    n_errors = _count(fills[wrong])
    n_pauses = pause_counts(_line_gaps(inter), threshold_s)
    boards = _final_boards(ev[ev["type"].isin(["move", "drag", "undo", "reset"])], attempts, sols)

    out = attempts[["participant_id", "puzzle_id", "puzzle_hash", "order", "solved"]].copy()
    idx = pd.MultiIndex.from_frame(out[KEYS])
    first = span["min"].reindex(idx).to_numpy(dtype=float)
    last = span["max"].reindex(idx).to_numpy(dtype=float)
    n_inter = span["size"].reindex(idx).fillna(0).to_numpy()
    solve = first_solve.reindex(idx).to_numpy(dtype=float)
    out["pause_count"] = n_pauses.reindex(idx).fillna(0).astype("int64").to_numpy()
    out["total_time_s"] = (last - first) / 1e6
    out["time_to_solve_s"] = np.where(
        ~np.isnan(solve),
        (solve - first) / 1e6,
        np.where(n_inter >= 2, (last - first) / 1e6, np.nan),
    )
    for col, ser in (("check_count", n_checks), ("error_count", n_errors), ("hint_count", n_hints)):
        out[col] = ser.reindex(idx).fillna(0).astype("int64").to_numpy()
    pe, pi = [], []
    for key, h in zip(
        zip(out["participant_id"], out["order"], strict=True), out["puzzle_hash"], strict=True
    ):
        sol = sols[h] == 1
        filled = boards.get(key, np.zeros(sol.shape, dtype=np.int8)) == 1
        pe.append(float((filled != sol).sum()) / sol.size)
        n_sol = int(sol.sum())
        pi.append(1.0 - float((filled & sol).sum()) / n_sol if n_sol else 0.0)
    out["percent_error"] = pe
    out["percent_incomplete"] = pi
    rat = tables["ratings"].set_index(KEYS)
    ini = "initial_difficulty_raw" if keep_initial_rating_sentinel else "initial_difficulty"
    out["initial_difficulty"] = rat[ini].reindex(idx).to_numpy()
    out["final_difficulty"] = rat["final_difficulty"].reindex(idx).to_numpy()
    parts = tables["participants"].set_index("participant_id")
    for item in EXPERTISE_ITEMS:
        out[item] = out["participant_id"].map(parts[item])
    out = out[FEATURE_COLUMNS]
    out["order"] = out["order"].astype("int64")
    for c in ("initial_difficulty", "final_difficulty", *EXPERTISE_ITEMS):
        out[c] = pd.array(out[c], dtype="Int64")
    out["solved"] = pd.array(out["solved"], dtype="boolean")
    return out.sort_values(["participant_id", "order"], kind="stable").reset_index(drop=True)


def _final_boards(
    ops: pd.DataFrame, attempts: pd.DataFrame, sols: dict[str, np.ndarray]
) -> dict[tuple[str, int], np.ndarray]:
    """Return {(participant_id, order): final board} replaying each attempt's board events.

    ``ops`` are the move/drag/undo/reset rows sorted by participant, order and ``seq`` (an
    attempt's rows are contiguous, a drag's cells are consecutive rows of one line). One pass
    over the columns as Python lists, a flat board per attempt and an undo stack of
    (cell, previous value) snapshots; same semantics as :func:`_final_board`.
    """
    shapes = {
        (p, o): sols[h].shape
        for p, o, h in zip(
            attempts["participant_id"], attempts["order"], attempts["puzzle_hash"], strict=True
        )
    }
    out: dict[tuple[str, int], np.ndarray] = {}
    if not len(ops):
        return out
    pids = ops["participant_id"].tolist()
    orders = ops["order"].tolist()
    lines = ops["line_no"].tolist()
    types = ops["type"].tolist()
    rs = ops["r"].tolist()
    cs = ops["c"].tolist()
    vs = ops["value"].tolist()
    n = len(types)
    key = None
    board: list[int] = []
    stack: list[list[tuple[int, int]]] = []
    h = w = 0
    i = 0
    while i < n:
        k = (pids[i], orders[i])
        if k != key:
            if key is not None:
                out[key] = np.array(board, dtype=np.int8).reshape(h, w)
            key = k
            h, w = shapes[k]
            board = [0] * (h * w)
            stack = []
        typ, line = types[i], lines[i]
        j = i + 1
        while j < n and lines[j] == line and pids[j] == k[0] and orders[j] == k[1]:
            j += 1
        if typ == "move" or typ == "drag":
            snap = []
            for m in range(i, j):
                if types[m] == "move" or types[m] == "drag":
                    cell = int(rs[m]) * w + int(cs[m])
                    snap.append((cell, board[cell]))
                    board[cell] = int(vs[m])
            if snap:
                stack.append(snap)
        elif typ == "undo":
            if stack:
                for cell, old in stack.pop():
                    board[cell] = old
        elif typ == "reset":
            stack.append([(cell, v) for cell, v in enumerate(board) if v != 0])
            board = [0] * (h * w)
        i = j
    out[key] = np.array(board, dtype=np.int8).reshape(h, w)
    return out


PUBLISHED_COLUMNS = {
    "time_to_solve_sec": "time_to_solve_s",
    "total_time_spent_sec": "total_time_s",
    "solved_flag": "solved",
}


def compare_published(
    features: pd.DataFrame, published: pd.DataFrame, time_tol_s: float = 1e-6
) -> pd.DataFrame:
    """Return the differences between computed features and the published table.

    One row per (participant_id, puzzle_id, column) that differs: ``computed``, ``published``.
    Counts and ratings must be equal, times within ``time_tol_s`` seconds, fractions within
    1e-9. Attempts present on one side only are reported with column ``(attempt)``.
    """
    pub = published.rename(columns=PUBLISHED_COLUMNS).copy()
    pub["puzzle_id"] = pub["puzzle_id"].astype(str)
    key = ["participant_id", "puzzle_id"]
    m = features.merge(pub, on=key, how="outer", suffixes=("", "_pub"), indicator=True)
    diffs = []
    for r in m[m["_merge"] != "both"].itertuples(index=False):
        diffs.append(
            {
                "participant_id": r.participant_id,
                "puzzle_id": r.puzzle_id,
                "column": "(attempt)",
                "computed": "present" if r._merge == "left_only" else "missing",
                "published": "present" if r._merge == "right_only" else "missing",
            }
        )
    both = m[m["_merge"] == "both"]
    cols = [c for c in FEATURE_COLUMNS if c in pub.columns and c not in key]
    for c in cols:
        a = both[c]
        b = both[c + "_pub"]
        if c in ("time_to_solve_s", "total_time_s", "percent_error", "percent_incomplete"):
            tol = time_tol_s if c.endswith("_s") else 1e-9
            af, bf = a.astype(float), b.astype(float)
            bad = ~((af - bf).abs() <= tol) & ~(af.isna() & bf.isna())
        else:
            an = pd.Series(a, dtype=object).map(_norm)
            bn = pd.Series(b, dtype=object).map(_norm)
            bad = an != bn
        for i in np.flatnonzero(bad.to_numpy()):
            r = both.iloc[i]
            diffs.append(
                {
                    "participant_id": r["participant_id"],
                    "puzzle_id": r["puzzle_id"],
                    "column": c,
                    "computed": _norm(r[c]),
                    "published": _norm(r[c + "_pub"]),
                }
            )
    return pd.DataFrame(
        diffs, columns=["participant_id", "puzzle_id", "column", "computed", "published"]
    )


def _norm(v: object) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return "NA"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return str(int(v))
    return str(v)
