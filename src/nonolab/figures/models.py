"""Figures: simple slopes of the moderation models; pause-threshold sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.figures import DOUBLE_WIDTH_IN, GREY, PALETTE, new_figure, panel_label, style

_LINESTYLE = {"corrected": "-", "published": "--"}


def plot_simple_slopes(slopes: pd.DataFrame) -> Figure:
    """Return one panel per metric: the slope of final difficulty on the metric (rating points per
    SD of the metric covariate) at expertise -1/0/+1 SD, with 95% CI, one series per alignment.

    ``slopes``: ``results/tables/simple_slopes.csv`` (``alignment``, ``metric``,
    ``moderator_value``, ``slope``, ``ci_low``, ``ci_high``).
    """
    metrics = list(dict.fromkeys(slopes["metric"]))
    aligns = list(dict.fromkeys(slopes["alignment"]))
    with style():
        fig, axes = new_figure(
            1, len(metrics), width_in=DOUBLE_WIDTH_IN, height_in=2.2, sharey=True, squeeze=False
        )
        for j, (ax, m) in enumerate(zip(axes[0], metrics, strict=True)):
            for k, a in enumerate(aligns):
                d = slopes[(slopes["metric"] == m) & (slopes["alignment"] == a)]
                d = d.sort_values("moderator_value")
                x = d["moderator_value"].to_numpy() + (k - (len(aligns) - 1) / 2) * 0.08
                err = np.vstack([d["slope"] - d["ci_low"], d["ci_high"] - d["slope"]])
                ax.errorbar(
                    x,
                    d["slope"],
                    yerr=err,
                    fmt="o",
                    ls=_LINESTYLE.get(a, "-"),
                    color=PALETTE[k % len(PALETTE)],
                    capsize=2,
                    label=f"{a} alignment",
                )
            ax.axhline(0.0, color=GREY, lw=0.6, ls=":")
            ax.set_xticks(sorted(slopes["moderator_value"].unique()))
            ax.set_xlabel("expertise (SD)")
            ax.set_title(m, loc="left")
            panel_label(ax, "abcdefgh"[j])
        axes[0][0].set_ylabel("slope of final difficulty\n(points per metric SD)")
        axes[0][-1].legend(loc="best")
    return fig


def plot_threshold_sensitivity(table: pd.DataFrame, reference_s: float | None = None) -> Figure:
    """Return two panels against the pause threshold (s): (a) mean pauses per attempt; (b) the
    pauses ~ metric coefficient (pauses per metric SD) with 95% CI, per metric and alignment.

    ``table``: ``results/tables/threshold_sensitivity.csv``. ``reference_s`` marks the
    threshold used by the main analysis.
    """
    with style():
        fig, (a1, a2) = new_figure(1, 2, width_in=DOUBLE_WIDTH_IN, height_in=2.4)
        summ = table.drop_duplicates("threshold_s").sort_values("threshold_s")
        a1.plot(summ["threshold_s"], summ["mean_pauses"], "o-", color=PALETTE[0])
        a1.set_xlabel("pause threshold (s)")
        a1.set_ylabel("mean pauses per attempt")
        metrics = list(dict.fromkeys(table["metric"]))
        aligns = list(dict.fromkeys(table["alignment"]))
        for i, m in enumerate(metrics):
            for k, a in enumerate(aligns):
                d = table[(table["metric"] == m) & (table["alignment"] == a)]
                d = d.sort_values("threshold_s")
                x = d["threshold_s"].to_numpy() * (1 + 0.015 * (i - 1))
                err = np.vstack([d["coef"] - d["ci_low"], d["ci_high"] - d["coef"]])
                a2.errorbar(
                    x,
                    d["coef"],
                    yerr=err,
                    fmt="o",
                    ls=_LINESTYLE.get(a, "-"),
                    color=PALETTE[i % len(PALETTE)],
                    alpha=1.0 if k == 0 else 0.5,
                    capsize=1.5,
                    label=f"{m} ({a})",
                )
        a2.axhline(0.0, color=GREY, lw=0.6, ls=":")
        a2.set_xlabel("pause threshold (s)")
        a2.set_ylabel("pauses per metric SD")
        a2.legend(loc="best", fontsize=6)
        for ax, lab in ((a1, "a"), (a2, "b")):
            if reference_s is not None:
                ax.axvline(reference_s, color=GREY, lw=0.6, ls="--")
            ax.set_xscale("log")
            ticks = sorted(table["threshold_s"].unique())
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
            panel_label(ax, lab)
    return fig
