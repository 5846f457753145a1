"""Figures: prevalence of coded themes and strategies; themes vs reported difficulty."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import COLUMN_WIDTH_IN, GREY, PALETTE, new_figure, panel_label, style


def plot_prevalence(themes: pd.DataFrame, strategies: pd.DataFrame) -> Figure:
    """Return horizontal bars of code prevalence (% of coded responses in scope), themes (a)
    and strategies (b). Inputs: prevalence tables (``code``, ``share``, ``n_responses``)."""
    with style():
        fig, axes = new_figure(
            2, 1, height_in=COLUMN_WIDTH_IN * 1.25, gridspec_kw={"height_ratios": [13, 8]}
        )
        for ax, d, col, lab, title in (
            (axes[0], themes, PALETTE[0], "a", "Difficulty themes"),
            (axes[1], strategies, PALETTE[2], "b", "Strategies"),
        ):
            d = d.sort_values("share")
            ax.barh(d["code"], 100 * d["share"], color=col)
            n = int(d["n_responses"].iloc[0]) if len(d) else 0
            ax.set_title(f"{title} (n = {n} coded responses)", loc="left")
            ax.set_xlabel("% of responses")
            panel_label(ax, lab)
    return fig


def plot_theme_difficulty(tests: pd.DataFrame, alpha: float = 0.05) -> Figure:
    """Return a dot plot of rank-biserial r per theme (positive: rated easier when present);
    filled dots have BH-FDR p below ``alpha``. Input: ``themes_vs_difficulty.csv``."""
    d = tests.dropna(subset=["rank_biserial"]).sort_values("rank_biserial").reset_index(drop=True)
    with style():
        fig, ax = new_figure()
        y = np.arange(len(d))
        sig = d["p_fdr"] < alpha
        ax.axvline(0, color=GREY, lw=0.6)
        ax.scatter(
            d.loc[~sig, "rank_biserial"],
            y[~sig],
            facecolors="white",
            edgecolors=PALETTE[0],
            s=16,
            label="n.s.",
            zorder=3,
        )
        ax.scatter(
            d.loc[sig, "rank_biserial"],
            y[sig],
            color=PALETTE[3],
            s=16,
            label=f"FDR < {alpha:g}",
            zorder=3,
        )
        ax.set_yticks(y, [f"{c} (n={n})" for c, n in zip(d["code"], d["n_present"], strict=True)])
        ax.set_xlim(-1, 1)
        ax.set_xlabel("rank-biserial r (+ = rated easier when present)")
        ax.set_title("Themes vs final difficulty (Mann-Whitney)", loc="left")
        ax.legend(loc="lower right")
    return fig
