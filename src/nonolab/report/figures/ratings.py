"""Figures: initial vs final rating distributions, and solve trajectories per puzzle.

:func:`solve_trajectories` prepares the trajectory table from the ingest events (a replay of each
attempt's board); the ``plot_*`` functions only draw tables.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import COLUMN_WIDTH_IN, GREY, PALETTE, new_figure, panel_label, style


def rating_counts(attempts: pd.DataFrame) -> pd.DataFrame:
    """Return ``rating`` (1-5), ``initial`` and ``final`` counts of attempts with that rating."""
    out = pd.DataFrame({"rating": [1, 2, 3, 4, 5]})
    for col, name in (("initial_difficulty", "initial"), ("final_difficulty", "final")):
        vc = attempts[col].dropna().round().astype(int).value_counts()
        out[name] = out["rating"].map(vc).fillna(0).astype(int)
    return out


def plot_ratings(attempts: pd.DataFrame) -> Figure:
    """Return (a) the distribution of initial and final ratings and (b) per-puzzle mean +/- SE
    of both. ``attempts``: ``puzzle_id``, ``initial_difficulty``, ``final_difficulty``."""
    counts = rating_counts(attempts)
    with style():
        fig, axes = new_figure(1, 2, width_in=COLUMN_WIDTH_IN * 1.6, height_in=1.9)
        ax = axes[0]
        x = counts["rating"].to_numpy()
        ax.bar(x - 0.2, counts["initial"], width=0.4, color=PALETTE[5], label="initial")
        ax.bar(x + 0.2, counts["final"], width=0.4, color=PALETTE[0], label="final")
        ax.set_xticks(x)
        ax.set_xlabel("difficulty rating (1-5)")
        ax.set_ylabel("attempts")
        ax.legend(loc="upper left")
        panel_label(ax, "a")
        ax = axes[1]
        ids = sorted(attempts["puzzle_id"].astype(str).unique(), key=lambda s: (len(s), s))
        pos = np.arange(len(ids))
        for k, (col, name, colour) in enumerate(
            (
                ("initial_difficulty", "initial", PALETTE[5]),
                ("final_difficulty", "final", PALETTE[0]),
            )
        ):
            g = attempts.groupby(attempts["puzzle_id"].astype(str))[col]
            m = g.mean().reindex(ids)
            se = (g.std(ddof=1) / np.sqrt(g.count())).reindex(ids)
            ax.errorbar(
                pos + (k - 0.5) * 0.25, m, yerr=se, fmt="o", color=colour, capsize=2, label=name
            )
        ax.set_xticks(pos, ids)
        ax.set_xlabel("puzzle id")
        ax.set_ylabel("mean rating (+/- SE)")
        panel_label(ax, "b")
    return fig


def _replay(ev: pd.DataFrame, solution: np.ndarray) -> list[tuple[float, int]]:
    """Replay one attempt; return (t_s, correctly filled cells) after each board change."""
    state: dict[tuple[int, int], int] = {}
    stack: list[list[tuple[tuple[int, int], int]]] = []
    out: list[tuple[float, int]] = []

    def correct() -> int:
        return sum(1 for (r, c), v in state.items() if v == 1 and solution[r, c] == 1)

    for (_, typ), g in ev.groupby(["line_no", "type"], sort=False):
        t = float(g["t_s"].iloc[0])
        if typ in ("move", "drag"):
            cells = [
                ((int(r), int(c)), int(v))
                for r, c, v in zip(g["r"], g["c"], g["value"], strict=True)
            ]
            stack.append([(cell, state.get(cell, 0)) for cell, _ in cells])
            for cell, v in cells:
                state[cell] = v
        elif typ == "hint":
            cell = (int(g["r"].iloc[0]), int(g["c"].iloc[0]))
            stack.append([(cell, state.get(cell, 0))])
            state[cell] = 1 if solution[cell] == 1 else -1
        elif typ == "undo":
            if stack:
                for cell, prev in reversed(stack.pop()):
                    state[cell] = prev
        elif typ == "reset":
            stack.append(list(state.items()))
            state = {}
        else:
            continue
        out.append((t, correct()))
    return out


def solve_trajectories(
    events: pd.DataFrame, puzzles: pd.DataFrame, step_s: float = 15.0
) -> pd.DataFrame:
    """Return per-puzzle solve trajectories on a time grid.

    Each attempt's board is replayed from its puzzle-phase events (moves and drag cells set the
    logged value; a hint sets the cell to its solution state; undo reverts the last move, drag,
    hint or reset; reset clears the board). Time is seconds since the attempt's first event;
    after its last change an attempt keeps its final board. Columns: ``puzzle_id``, ``t_s``,
    ``n_attempts``, ``median``, ``q25``, ``q75`` (fraction of the solution's filled cells that
    are filled, 0-1).
    """
    sols = {
        str(p): np.array(json.loads(s), dtype=int)
        for p, s in zip(puzzles["puzzle_id"], puzzles["solution_json"], strict=True)
    }
    ev = events[(events["phase"] == "puzzle")].sort_values(
        ["participant_id", "order", "t_s", "seq"], kind="stable"
    )
    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for (_, _), g in ev.groupby(["participant_id", "order"], sort=True):
        pid = str(g["puzzle_id"].iloc[0])
        sol = sols[pid]
        rec = _replay(g, sol)
        if not rec:
            continue
        t0 = float(g["t_s"].iloc[0])
        ts = np.array([t - t0 for t, _ in rec])
        fr = np.array([v for _, v in rec]) / max(int(sol.sum()), 1)
        curves.setdefault(pid, []).append((ts, fr))
    rows = []
    tmax = max((c[0][-1] for cs in curves.values() for c in cs), default=0.0)
    grid = np.arange(0.0, tmax + step_s, step_s)
    for pid in sorted(curves, key=lambda s: (len(s), s)):
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
    cols = ["puzzle_id", "t_s", "n_attempts", "median", "q25", "q75"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def plot_trajectories(traj: pd.DataFrame, max_minutes: float = 30.0) -> Figure:
    """Return median (line) and interquartile band of the fraction of solution cells filled
    against minutes since the attempt's first event, one colour per puzzle."""
    with style():
        fig, ax = new_figure()
        ids = sorted(traj["puzzle_id"].astype(str).unique(), key=lambda s: (len(s), s))
        for i, pid in enumerate(ids):
            d = traj[(traj["puzzle_id"].astype(str) == pid) & (traj["t_s"] <= max_minutes * 60)]
            col = PALETTE[i % len(PALETTE)]
            m = d["t_s"] / 60
            ax.plot(m, d["median"], color=col, label=f"id {pid} (n={int(d['n_attempts'].iloc[0])})")
            ax.fill_between(m, d["q25"], d["q75"], color=col, alpha=0.12, lw=0)
        ax.axhline(1.0, color=GREY, lw=0.5, ls=":")
        ax.set_xlabel("minutes since first interaction")
        ax.set_ylabel("solution cells filled")
        ax.set_ylim(0, 1.05)
        ax.legend(loc="lower right", ncol=2)
    return fig
