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
* ``percent_error``: fraction of all cells where the final board (replayed by
  :mod:`nonolab.study.board`: moves, drags, undos, resets; hints do not change it; crossed
  counts as empty) differs from the solution; ``percent_incomplete``: fraction of
  the solution's filled cells not filled on the final board (both fractions in 0-1, despite the
  published names);
* ``solved``: the platform's completion flag; ratings and the six expertise items are joined.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nonolab.study.board import BOARD_EVENTS, final_boards
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


@dataclass(frozen=True)
class PauseThreshold:
    """The pause model output (``results/pauses/threshold.json``) as the later stages use it.

    ``threshold_used_s``: the threshold pause counts use (seconds, > 0); ``threshold_s``: the
    fitted mixture crossing (seconds, None if absent); ``source``: where the used threshold comes
    from (``threshold_source``, None if absent); ``record``: the whole JSON record (mixture
    parameters for plots).
    """

    threshold_used_s: float
    threshold_s: float | None
    source: str | None
    record: dict[str, Any]


def read_pause_model(path: str | os.PathLike) -> PauseThreshold:
    """Return the pause model record written by the pauses stage at ``path``.

    Raises ``ValueError`` naming the file if ``threshold_used_s`` is missing or not a positive
    number of seconds.
    """
    with open(path, encoding="utf-8") as fh:
        rec = json.load(fh)
    used = rec.get("threshold_used_s") if isinstance(rec, dict) else None
    try:
        used_s = float(used)
    except (TypeError, ValueError):
        raise ValueError(f"{path}: no numeric threshold_used_s in the pause model") from None
    if not used_s > 0:
        raise ValueError(f"{path}: threshold_used_s must be positive seconds, got {used!r}")
    fitted = rec.get("threshold_s")
    return PauseThreshold(
        threshold_used_s=used_s,
        threshold_s=float(fitted) if fitted is not None else None,
        source=rec.get("threshold_source"),
        record=rec,
    )


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
    shapes = {
        (p, o): sols[h].shape
        for p, o, h in zip(
            attempts["participant_id"], attempts["order"], attempts["puzzle_hash"], strict=True
        )
    }
    boards = final_boards(ev[ev["type"].isin(BOARD_EVENTS)], shapes)

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
