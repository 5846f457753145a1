"""Figures: Bradley-Terry strengths with intervals; BT rank against each SAT metric."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.core.undefined import NOT_CONNECTED, as_float, is_undefined, undefined_text
from nonolab.report.figures import COLUMN_WIDTH_IN, GREY, PALETTE, new_figure, style


def rho_title(row: pd.Series | dict) -> str:
    """Return the rho label of a Table 1 row for a panel title: ``rho=0.600, p=0.350``, or
    ``rho not defined`` with the row's reason (``bt_undefined``) on a second line; never
    "nan"."""
    reason = str(row.get("bt_undefined") or "").strip()
    if reason or is_undefined(row.get("bt_rho")):
        return "rho " + undefined_text(reason).replace(" (", "\n(", 1)
    p = row.get("bt_p")
    p_part = f"p={as_float(p):.3f}" if not is_undefined(p) else "p not defined"
    return f"rho={as_float(row['bt_rho']):.3f}, {p_part}"


def plot_strengths(strengths: pd.DataFrame) -> Figure:
    """Return a dot plot of BT strengths (geometric mean 1, log axis) with bootstrap intervals,
    puzzles ordered from rated easiest to hardest. ``strengths``: ``bt_strengths.csv``."""
    d = strengths.sort_values("strength").reset_index(drop=True)
    if d.empty or d["strength"].isna().all():
        status = " ".join(str(x) for x in d.get("status", pd.Series(dtype=str)).unique())
        reason = NOT_CONNECTED if ("connected" in status or "undefined" in status) else ""
        with style():
            fig, ax = new_figure()
            ax.text(
                0.5,
                0.5,
                "Bradley-Terry strengths " + undefined_text(reason).replace(" (", "\n(", 1),
                ha="center",
                va="center",
                wrap=True,
                transform=ax.transAxes,
            )
            ax.set_axis_off()
        return fig
    with style():
        fig, ax = new_figure()
        y = np.arange(len(d))
        err = np.vstack([d["strength"] - d["ci_low"], d["ci_high"] - d["strength"]])
        ax.errorbar(d["strength"], y, xerr=err, fmt="o", color=PALETTE[0], ecolor=GREY, capsize=2)
        ax.axvline(1.0, color=GREY, lw=0.6, ls=":")
        ax.set_xscale("log")
        labels = [
            f"id {p} ({h[:6]})" if h else f"id {p}"
            for p, h in zip(
                d["puzzle_id"].astype(str), d["puzzle_hash"].fillna("").astype(str), strict=True
            )
        ]
        ax.set_yticks(y, labels)
        ax.set_xlabel("Bradley-Terry strength (harder to the right)")
        ax.set_title("Reported difficulty, 95% bootstrap intervals", loc="left")
    return fig


def plot_rank_vs_metrics(points: pd.DataFrame, table1: pd.DataFrame) -> Figure:
    """Return a grid (rows: alignments, columns: metrics) of BT rank against metric rank.

    ``points``: ``puzzle_id``, ``alignment``, ``strength`` and one column per metric (the
    main solver x encoding); ``table1``: the matching Table 1 rows, for the rho labels.
    """
    aligns = [a for a in ("published", "corrected") if a in set(points["alignment"])]
    metrics = [m for m in ("decisions", "propagations", "conflicts") if m in points.columns]
    with style():
        fig, axes = new_figure(
            len(aligns),
            len(metrics),
            width_in=COLUMN_WIDTH_IN * 1.6,
            height_in=1.35 * len(aligns) + 0.3,
            squeeze=False,
            sharex=True,
            sharey=True,
        )
        for i, a in enumerate(aligns):
            d = points[points["alignment"] == a]
            bt_rank = d["strength"].rank(ascending=False, method="average")
            for j, m in enumerate(metrics):
                ax = axes[i][j]
                mr = d[m].rank(ascending=False, method="average")
                ax.scatter(mr, bt_rank, color=PALETTE[0 if a == "corrected" else 1], s=14, zorder=3)
                for x, yv, lab in zip(mr, bt_rank, d["puzzle_id"].astype(str), strict=True):
                    ax.annotate(lab, (x, yv), xytext=(2, 2), textcoords="offset points", fontsize=6)
                row = table1[(table1["alignment"] == a) & (table1["metric"] == m)]
                if len(row):
                    r = row.iloc[0]
                    ax.set_title(f"{m}\n{rho_title(r)}", fontsize=7)
                if j == 0:
                    ax.set_ylabel(f"{a}\nBT rank (1=rated hardest)")
                if i == len(aligns) - 1:
                    ax.set_xlabel("metric rank (1=largest)")
                n = len(d)
                ax.set_xlim(0.5, n + 0.5)
                ax.set_ylim(0.5, n + 0.5)
                ax.set_xticks(range(1, n + 1))
                ax.set_yticks(range(1, n + 1))
    return fig
