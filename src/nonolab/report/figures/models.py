"""Figures: simple slopes of the moderation models; pause-threshold sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import DOUBLE_WIDTH_IN, GREY, PALETTE, new_figure, panel_label, style

_LINESTYLE = {"corrected": "-", "published": "--"}  # simple slopes: line style per alignment


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
    """Return panels against the pause threshold (s): (a) mean pauses per attempt; then one
    panel per alignment with the pauses ~ metric coefficient (pauses per metric SD) and its 95%
    CI, one series per metric.

    ``table``: ``results/tables/threshold_sensitivity.csv``. ``reference_s`` marks the
    threshold used by the main analysis.
    """
    aligns = list(dict.fromkeys(table["alignment"]))
    metrics = list(dict.fromkeys(table["metric"]))
    ticks = sorted(table["threshold_s"].unique())
    # Label a threshold only when it is >= 12% above the last labelled one (the used and fitted
    # thresholds can be close to a configured one); every threshold keeps its tick.
    labels, last = [], None
    for t in ticks:
        keep = last is None or t >= 1.12 * last
        labels.append(f"{t:.3g}" if keep else "")
        last = t if keep else last
    with style():
        fig, axes = new_figure(
            1, 1 + len(aligns), width_in=DOUBLE_WIDTH_IN, height_in=2.4, squeeze=False
        )
        axes = list(axes[0])
        summ = table.drop_duplicates("threshold_s").sort_values("threshold_s")
        axes[0].plot(summ["threshold_s"], summ["mean_pauses"], "o-", color=PALETTE[0])
        axes[0].set_ylabel("mean pauses per attempt")
        for ax, a in zip(axes[1:], aligns, strict=True):
            for i, m in enumerate(metrics):
                d = table[(table["metric"] == m) & (table["alignment"] == a)]
                d = d.sort_values("threshold_s")
                x = d["threshold_s"].to_numpy() * (1 + 0.02 * (i - (len(metrics) - 1) / 2))
                err = np.vstack([d["coef"] - d["ci_low"], d["ci_high"] - d["coef"]])
                ax.errorbar(
                    x,
                    d["coef"],
                    yerr=err,
                    fmt="o-",
                    color=PALETTE[i % len(PALETTE)],
                    capsize=1.5,
                    label=m,
                )
            ax.axhline(0.0, color=GREY, lw=0.6, ls=":")
            ax.set_ylabel("pauses per metric SD")
            ax.set_title(f"pauses ~ metric, {a} alignment", loc="left")
        axes[1].legend(loc="lower left", fontsize=6)
        if len(axes) > 2:
            lo = min(ax.get_ylim()[0] for ax in axes[1:])
            hi = max(ax.get_ylim()[1] for ax in axes[1:])
            for ax in axes[1:]:
                ax.set_ylim(lo, hi)
        for k, ax in enumerate(axes):
            if reference_s is not None:
                ax.axvline(reference_s, color=GREY, lw=0.6, ls="--")
            ax.set_xscale("log")
            ax.set_xticks(ticks, labels)
            ax.minorticks_off()
            ax.set_xlabel("pause threshold (s)")
            panel_label(ax, "abcdefgh"[k])
    return fig
