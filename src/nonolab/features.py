"""Behavioural features per attempt (METHODS 4), computed from the ingest tables.

Definitions (all times in seconds, from the event times ``t``; an attempt's events are those with
``phase == "puzzle"`` and its ``order``, see :mod:`nonolab.ingest`):

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

from nonolab.ingest import EXPERTISE_ITEMS

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
    events, attempts = tables["events"], tables["attempts"]
    puzzles = tables["puzzles"].set_index("puzzle_hash")
    sols = {h: np.array(json.loads(s), dtype=np.int8) for h, s in puzzles["solution_json"].items()}
    ev_all = events[(events["phase"] == "puzzle") & (events["role"] != "survey")]
    ev_all = ev_all.sort_values(["participant_id", "order", "seq"], kind="stable")
    groups_all = dict(tuple(ev_all.groupby(KEYS, sort=False)))
    ev = attempt_events(events)
    inter = ev[ev["role"].isin(INTERACTION_ROLES)]
    groups = dict(tuple(inter.groupby(KEYS, sort=False)))
    gaps = interaction_gaps(events)
    pauses = gaps[gaps["gap_s"] >= threshold_s].groupby(KEYS).size()
    rows = []
    for a in attempts.itertuples(index=False):
        key = (a.participant_id, a.order)
        g = groups.get(key)
        sol = sols[a.puzzle_hash]
        h, w = sol.shape
        row = {
            "participant_id": a.participant_id,
            "puzzle_id": a.puzzle_id,
            "puzzle_hash": a.puzzle_hash,
            "order": a.order,
            "pause_count": int(pauses.get(key, 0)),
            "solved": a.solved,
        }
        if g is None or g.empty:
            row |= {
                "time_to_solve_s": np.nan,
                "total_time_s": np.nan,
                "check_count": 0,
                "error_count": 0,
                "hint_count": 0,
            }
        else:
            us = g["t"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
            first, last = us.min(), us.max()
            chk = g[(g["type"] == "check_bank") & (g["solved"].fillna(False).astype(bool))]
            if len(chk):
                cu = chk["t"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
                tts = (cu.min() - first) / 1e6
            elif len(us) >= 2:
                tts = (last - first) / 1e6
            else:
                tts = np.nan
            mv = g[(g["type"] == "move") & (g["value"] == 1)]
            errs = int(
                (sol[mv["r"].astype(int).to_numpy(), mv["c"].astype(int).to_numpy()] == 0).sum()
            )
            row |= {
                "time_to_solve_s": tts,
                "total_time_s": (last - first) / 1e6,
                "check_count": int((g["type"] == "check_bank").sum()),
                "error_count": errs,
                "hint_count": int((g["type"] == "hint").sum()),
            }
        ga = groups_all.get(key)
        board = (
            _final_board(ga[ga["type"].isin(["move", "drag", "undo", "reset"])], h, w)
            if ga is not None
            else np.zeros((h, w), dtype=np.int8)
        )
        filled = board == 1
        row["percent_error"] = float((filled != (sol == 1)).sum()) / (h * w)
        n_sol = int((sol == 1).sum())
        row["percent_incomplete"] = (
            1.0 - float((filled & (sol == 1)).sum()) / n_sol if n_sol else 0.0
        )
        rows.append(row)
    out = pd.DataFrame(rows)
    rat = tables["ratings"].set_index(KEYS)
    ini = "initial_difficulty_raw" if keep_initial_rating_sentinel else "initial_difficulty"
    out["initial_difficulty"] = [
        rat[ini].get(k) for k in zip(out.participant_id, out.order, strict=True)
    ]
    out["final_difficulty"] = [
        rat["final_difficulty"].get(k) for k in zip(out.participant_id, out.order, strict=True)
    ]
    parts = tables["participants"].set_index("participant_id")
    for item in EXPERTISE_ITEMS:
        out[item] = out["participant_id"].map(parts[item])
    out = out[FEATURE_COLUMNS]
    for c in ("pause_count", "check_count", "error_count", "hint_count", "order"):
        out[c] = out[c].astype("int64")
    for c in ("initial_difficulty", "final_difficulty", *EXPERTISE_ITEMS):
        out[c] = pd.array(out[c], dtype="Int64")
    out["solved"] = pd.array(out["solved"], dtype="boolean")
    return out.sort_values(["participant_id", "order"], kind="stable").reset_index(drop=True)


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
