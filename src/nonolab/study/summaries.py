"""Tables behind the ratings figures: rating distributions and solve trajectories.

:func:`solve_trajectories` replays each attempt's board with :mod:`nonolab.study.board` (the same
replay as the ingest and the features); the figures in :mod:`nonolab.report.figures.ratings`
only draw these tables.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from nonolab.study.board import replay_attempts

TRAJECTORY_COLUMNS = ["puzzle_id", "t_s", "n_attempts", "median", "q25", "q75"]


def _id_order(s: str) -> tuple[int, str]:
    return (len(s), s)


def rating_counts(attempts: pd.DataFrame) -> pd.DataFrame:
    """Return ``rating`` (1-5), ``initial`` and ``final`` counts of attempts with that rating."""
    out = pd.DataFrame({"rating": [1, 2, 3, 4, 5]})
    for col, name in (("initial_difficulty", "initial"), ("final_difficulty", "final")):
        vc = attempts[col].dropna().round().astype(int).value_counts()
        out[name] = out["rating"].map(vc).fillna(0).astype(int)
    return out


def rating_means(attempts: pd.DataFrame) -> pd.DataFrame:
    """Return per-puzzle mean ratings and standard errors (rating points, 1-5).

    One row per ``puzzle_id`` (string, ordered by label length then label): ``initial_mean``,
    ``initial_se``, ``final_mean``, ``final_se`` (SE = sample SD / sqrt(n); missing ratings are
    left out, NaN when a puzzle has none or one).
    """
    ids = sorted(attempts["puzzle_id"].astype(str).unique(), key=_id_order)
    out = pd.DataFrame({"puzzle_id": ids})
    for col, name in (("initial_difficulty", "initial"), ("final_difficulty", "final")):
        g = attempts.groupby(attempts["puzzle_id"].astype(str))[col]
        out[f"{name}_mean"] = g.mean().reindex(ids).to_numpy()
        out[f"{name}_se"] = (g.std(ddof=1) / np.sqrt(g.count())).reindex(ids).to_numpy()
    return out


def _attempt_curves(
    events: pd.DataFrame, sols: dict[str, np.ndarray]
) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Return ``{puzzle_id: [(t_s, fraction filled correctly) per attempt]}``: one point after
    each board event (seconds since the attempt's first puzzle-phase event)."""
    ev = events[events["phase"] == "puzzle"].sort_values(
        ["participant_id", "order", "t_s", "seq"], kind="stable"
    )
    firsts = ev.groupby(["participant_id", "order"], sort=False).head(1)
    info = {
        (p, o): (str(q), float(t))
        for p, o, q, t in zip(
            firsts["participant_id"],
            firsts["order"],
            firsts["puzzle_id"],
            firsts["t_s"],
            strict=True,
        )
    }
    shapes = {k: sols[q].shape for k, (q, _) in info.items()}
    t_s = ev["t_s"].to_numpy(dtype=float)
    points: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for key, i, board in replay_attempts(ev, shapes):
        points.setdefault(key, []).append((t_s[i], board.filled_correct(sols[info[key][0]])))
    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for key in sorted(points):
        pid, t0 = info[key]
        rec = points[key]
        ts = np.array([t - t0 for t, _ in rec])
        fr = np.array([v for _, v in rec]) / max(int(sols[pid].sum()), 1)
        curves.setdefault(pid, []).append((ts, fr))
    return curves


def solve_trajectories(
    events: pd.DataFrame, puzzles: pd.DataFrame, step_s: float = 15.0
) -> pd.DataFrame:
    """Return per-puzzle solve trajectories on a time grid of ``step_s`` seconds.

    Each attempt's board is replayed from its puzzle-phase events by
    :func:`nonolab.study.board.replay_attempts` (moves and drag cells set the logged value;
    undo reverts the last move, drag or reset; reset clears the board; hints do not change
    it), with one point after each move, drag, undo or reset. Time is seconds since the
    attempt's first puzzle-phase event; after its last board event an attempt keeps its final
    board; attempts without board events are left out. Columns: ``puzzle_id``, ``t_s``,
    ``n_attempts``, ``median``, ``q25``, ``q75`` (fraction of the solution's filled cells that
    are filled, 0-1).
    """
    sols = {
        str(p): np.array(json.loads(s), dtype=int)
        for p, s in zip(puzzles["puzzle_id"], puzzles["solution_json"], strict=True)
    }
    curves = _attempt_curves(events, sols)
    rows = []
    tmax = max((c[0][-1] for cs in curves.values() for c in cs), default=0.0)
    grid = np.arange(0.0, tmax + step_s, step_s)
    for pid in sorted(curves, key=_id_order):
        mat = []
        for ts, fr in curves[pid]:
            idx = np.searchsorted(ts, grid, side="right") - 1
            mat.append(np.where(idx >= 0, fr[np.clip(idx, 0, None)], 0.0))
        mat = np.array(mat)
        q25, med, q75 = np.quantile(mat, [0.25, 0.5, 0.75], axis=0)
        rows.append(
            pd.DataFrame(
                {
                    "puzzle_id": pid,
                    "t_s": grid,
                    "n_attempts": len(mat),
                    "median": med,
                    "q25": q25,
                    "q75": q75,
                }
            )
        )
    if not rows:
        return pd.DataFrame(columns=TRAJECTORY_COLUMNS)
    return pd.concat(rows, ignore_index=True)[TRAJECTORY_COLUMNS]


__all__ = ["rating_counts", "rating_means", "solve_trajectories"]
