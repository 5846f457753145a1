"""Figure: distribution of within-attempt gaps with the fitted mixture and the pause threshold."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from nonolab.report.figures import GREY, PALETTE, new_figure, style
from nonolab.stats.pauses import mixture_density


def component_names(record: dict, drags: bool) -> list[str]:
    """Return the legend name of each mixture component of ``record`` (``threshold.json``):
    for three components ``fast``, ``within-move``, ``pause``, else ``component i``; a
    component that collapsed onto a spike (``degenerate_components``) is named ``spike at X
    s``. ``drags`` is accepted for callers of earlier versions and changes nothing: a drag
    gesture is one logged event (docs/data-format.md) and one interaction, so no component is
    made of drags."""
    del drags
    k = len(record["means_log"])
    names = ["fast", "within-move", "pause"]
    out = names if k == 3 else [f"component {i + 1}" for i in range(k)]
    for d in record.get("degenerate_components") or []:
        out[d["component"] - 1] = f"spike at {d['spike_s']:.3g} s"
    return out


def plot_gap_distribution(
    gaps_s: np.ndarray, record: dict, bins: int = 80, drags: bool = False
) -> Figure:
    """Return the histogram of log gaps (density per unit ln s) with each fitted component, their
    sum, the fitted threshold and the threshold used. ``record``: ``threshold.json`` content;
    ``drags``: whether the study logged drag events (names the fastest component)."""
    g = np.asarray(gaps_s, dtype=float)
    z = np.log(g[g > 0])
    if not len(z):  # no positive gap: an empty axis around the threshold used
        z = np.log(np.array([float(record["threshold_used_s"])]))
    with style():
        fig, ax = new_figure()
        ax.hist(z, bins=bins, density=True, color="#d9d9d9", edgecolor="none", label="gaps")
        grid = np.linspace(z.min(), z.max(), 600)
        if record["means_log"]:  # a study too small for a mixture has none (threshold chain)
            comps = mixture_density(record, grid)
            names = component_names(record, drags)
            for i, (c, name) in enumerate(zip(comps, names, strict=True)):
                ax.plot(grid, c, color=PALETTE[i], lw=1.0, label=name)
            ax.plot(grid, comps.sum(axis=0), color="black", lw=0.9, ls="--", label="mixture")
        thr = float(record["threshold_s"])
        used = record["threshold_used_s"]
        if np.isfinite(thr):
            ax.axvline(np.log(thr), color=PALETTE[3], lw=0.9, label=f"crossing {thr:.2f} s")
        if not np.isfinite(thr) or abs(used - thr) > 1e-9:
            why = " (fallback)" if record.get("threshold_source", "").startswith("fallback") else ""
            ax.axvline(np.log(used), color=GREY, lw=0.9, ls=":", label=f"used {used:.2f} s{why}")
        ticks = [0.001, 0.01, 0.1, 1, 10, 100]
        ticks = [t for t in ticks if z.min() <= np.log(t) <= z.max()]
        ax.set_xticks(np.log(ticks), [f"{t:g}" for t in ticks])
        ax.set_xlabel("gap between interactions (s, log scale)")
        ax.set_ylabel("density (per ln s)")
        ax.set_title(f"{record['n_gaps']:,} within-puzzle gaps", loc="left")
        ax.legend(loc="upper left")
    return fig
