"""Power-analysis figure: power against the number of puzzles (draws, computes nothing)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import DOUBLE_WIDTH_IN, GREY, PALETTE, new_figure, style

STUDY_DESIGN = (6, 67)  # puzzles, participants of the public study


def power_figure(table: pd.DataFrame, alpha: float | None = None) -> Figure:
    """Return the power figure of a ``power.csv`` table (:data:`nonolab.sim.power.POWER_COLUMNS`).

    One panel per true rho; x = number of puzzles (log scale), y = power; one colour per number
    of participants; solid = Bradley-Terry, dashed = mean rating. The study's design is ringed.
    """
    need = {"n_puzzles", "n_participants", "rho_true", "method", "power"}
    missing = need - set(table.columns)
    if missing:
        raise ValueError(f"power table lacks columns {sorted(missing)}")
    rhos = sorted(table["rho_true"].unique())
    sizes = sorted(table["n_participants"].unique())
    with style():
        fig, axes = new_figure(1, len(rhos), width_in=DOUBLE_WIDTH_IN, height_in=2.4, sharey=True)
        axes = list(axes) if len(rhos) > 1 else [axes]
        for ax, rho in zip(axes, rhos, strict=True):
            sub = table[table["rho_true"] == rho]
            for k, n in enumerate(sizes):
                for method, ls in (("bt", "-"), ("mean", "--")):
                    d = sub[(sub["n_participants"] == n) & (sub["method"] == method)]
                    d = d.sort_values("n_puzzles")
                    if d.empty:
                        continue
                    ax.plot(
                        d["n_puzzles"],
                        d["power"],
                        ls,
                        marker="o",
                        color=PALETTE[k % len(PALETTE)],
                        label=f"{n} participants" if method == "bt" else None,
                    )
            study = sub[
                (sub["n_puzzles"] == STUDY_DESIGN[0]) & (sub["n_participants"] == STUDY_DESIGN[1])
            ]
            if not study.empty:
                ax.scatter(
                    study["n_puzzles"], study["power"], s=60, facecolors="none", edgecolors="k",
                    zorder=5, label="study design" if rho == rhos[0] else None,
                )  # fmt: skip
            if alpha is not None:
                ax.axhline(alpha, color=GREY, lw=0.6, ls=":")
            ax.axhline(0.8, color=GREY, lw=0.6)
            ax.set_xscale("log")
            xs = sorted(table["n_puzzles"].unique())
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs])
            ax.minorticks_off()
            ax.set_ylim(0, 1.02)
            ax.set_title(f"true Spearman rho = {rho:g}")
            ax.set_xlabel("puzzles (each participant rates 3)")
        axes[0].set_ylabel("power")
        axes[0].legend(loc="upper left")
        from matplotlib.lines import Line2D

        style_keys = [
            Line2D([], [], color="k", ls="-", label="Bradley-Terry ranking"),
            Line2D([], [], color="k", ls="--", label="mean final rating"),
        ]
        axes[-1].legend(handles=style_keys, loc="lower right")
    return fig
