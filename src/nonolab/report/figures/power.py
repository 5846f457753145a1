"""Power-analysis figure: power against the number of puzzles (draws, computes nothing)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import DOUBLE_WIDTH_IN, GREY, PALETTE, new_figure, style


def power_figure(table: pd.DataFrame, alpha: float | None = None) -> Figure:
    """Return the power figure of a ``power.csv`` table (:data:`nonolab.sim.power.POWER_COLUMNS`
    plus ``design``: ``grid`` for the configured cells, ``study`` for the study's own design).

    One panel per true rho; x = number of puzzles (log scale), y = power; one colour per number
    of participants of the grid; solid = Bradley-Terry, dashed = mean rating. The study's own
    design (``design == "study"`` rows, Bradley-Terry) is ringed and named with its numbers of
    puzzles and participants; the x label names the puzzles each participant rates
    (``per_session``).
    """
    need = {"n_puzzles", "n_participants", "rho_true", "method", "power"}
    missing = need - set(table.columns)
    if missing:
        raise ValueError(f"power table lacks columns {sorted(missing)}")
    design = table["design"] if "design" in table else pd.Series("grid", index=table.index)
    study_rows = table[(design == "study") & (table["method"] == "bt")]
    table = table[design != "study"]
    per = sorted(table["per_session"].unique()) if "per_session" in table else []
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
            study = study_rows[study_rows["rho_true"] == rho]
            if not study.empty:
                n_pz, n_pt = int(study["n_puzzles"].iloc[0]), int(study["n_participants"].iloc[0])
                ax.scatter(
                    study["n_puzzles"], study["power"], s=60, facecolors="none", edgecolors="k",
                    zorder=5,
                    label=f"this study ({n_pz} puzzles, {n_pt} participants)"
                    if rho == rhos[0] else None,
                )  # fmt: skip
            if alpha is not None:
                ax.axhline(alpha, color=GREY, lw=0.6, ls=":")
            ax.axhline(0.8, color=GREY, lw=0.6)
            ax.set_xscale("log")
            xs = sorted(set(table["n_puzzles"]) | set(study_rows["n_puzzles"]))
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs])
            ax.minorticks_off()
            ax.set_ylim(0, 1.02)
            ax.set_title(f"true Spearman rho = {rho:g}")
            rates = " or ".join(str(int(k)) for k in per)
            ax.set_xlabel(f"puzzles (each participant rates {rates})" if per else "puzzles")
        axes[0].set_ylabel("power")
        axes[0].legend(loc="upper left")
        from matplotlib.lines import Line2D

        style_keys = [
            Line2D([], [], color="k", ls="-", label="Bradley-Terry ranking"),
            Line2D([], [], color="k", ls="--", label="mean final rating"),
        ]
        if len(axes) > 1:
            axes[-1].legend(handles=style_keys, loc="lower right")
        else:  # one panel: one legend with both keys (a second would replace the first)
            handles, _ = axes[0].get_legend_handles_labels()
            axes[0].legend(handles=handles + style_keys, loc="upper left")
    return fig
