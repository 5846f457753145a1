"""Figures: initial vs final rating distributions, and solve trajectories per puzzle.

The tables come from :mod:`nonolab.study.summaries` (:func:`~nonolab.study.summaries.rating_counts`,
:func:`~nonolab.study.summaries.rating_means`, :func:`~nonolab.study.summaries.solve_trajectories`);
the ``plot_*`` functions only draw them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import COLUMN_WIDTH_IN, GREY, PALETTE, new_figure, panel_label, style


def plot_ratings(counts: pd.DataFrame, means: pd.DataFrame) -> Figure:
    """Return (a) the distribution of initial and final ratings and (b) per-puzzle mean +/- SE
    of both. ``counts``: ``rating``, ``initial``, ``final`` (attempts); ``means``:
    ``puzzle_id``, ``initial_mean``, ``initial_se``, ``final_mean``, ``final_se`` (rating
    points), in plotting order."""
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
        ids = means["puzzle_id"].astype(str).tolist()
        pos = np.arange(len(ids))
        for k, (name, colour) in enumerate((("initial", PALETTE[5]), ("final", PALETTE[0]))):
            ax.errorbar(
                pos + (k - 0.5) * 0.25,
                means[f"{name}_mean"],
                yerr=means[f"{name}_se"],
                fmt="o",
                color=colour,
                capsize=2,
                label=name,
            )
        ax.set_xticks(pos, ids)
        ax.set_xlabel("puzzle id")
        ax.set_ylabel("mean rating (+/- SE)")
        panel_label(ax, "b")
    return fig


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
