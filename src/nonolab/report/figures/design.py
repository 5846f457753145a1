"""Study-design figures (``nonolab design``): power curves and schedule balance (draw only)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from nonolab.report.figures import DOUBLE_WIDTH_IN, GREY, PALETTE, new_figure, save_figure, style
from nonolab.study.schemas import read_csv

#: analysis -> legend label
LABELS = {
    "spearman_bt": "Spearman (BT) [primary]",
    "rating_lmm": "rating ~ metric",
    "behaviour_lmm": "behaviour ~ metric",
    "moderation_lmm": "metric x expertise",
}


def power_curve_figure(curve: pd.DataFrame, target: float | None = None) -> Figure:
    """Return the two-panel power curve of a ``design_power_curve.csv`` table: power over
    participants (at the planned K) and over puzzles (at the planned participants), one line
    per analysis with its Monte-Carlo 95% interval as a band; ``target``: a horizontal line."""
    need = {"curve", "analysis", "n_participants", "n_puzzles", "power", "ci_low", "ci_high"}
    missing = need - set(curve.columns)
    if missing:
        raise ValueError(f"power curve table lacks columns {sorted(missing)}")
    with style():
        fig, axes = new_figure(1, 2, width_in=DOUBLE_WIDTH_IN, height_in=3.0, sharey=True)
        for ax, (name, x, label) in zip(
            axes,
            (
                ("participants", "n_participants", "participants (one session each)"),
                ("puzzles", "n_puzzles", "puzzles K"),
            ),
            strict=True,
        ):
            sub = curve[curve["curve"] == name]
            for i, a in enumerate(LABELS):
                d = sub[sub["analysis"] == a].sort_values(x)
                if d.empty:
                    continue
                c = PALETTE[i % len(PALETTE)]
                ax.fill_between(d[x], d["ci_low"], d["ci_high"], color=c, alpha=0.2, lw=0)
                ax.plot(d[x], d["power"], marker="o", color=c, label=LABELS[a])
            if target is not None:
                ax.axhline(target, color=GREY, lw=0.6, ls="--")
            ax.axhline(0.05, color=GREY, lw=0.6, ls=":")
            ax.set_ylim(0, 1.02)
            ax.set_xlabel(label)
            fixed = (
                f"K = {int(sub['n_puzzles'].iloc[0])}"
                if name == "participants" and len(sub)
                else f"N = {int(sub['n_participants'].iloc[0])}"
                if len(sub)
                else ""
            )
            ax.set_title(f"power over {name} ({fixed})")
        axes[0].set_ylabel("power (MC 95% band)")
        # one legend under both panels: inside, it covered the curves that rise to its corner
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncol=len(handles))
    return fig


def _thin_blocks(balance: pd.DataFrame, keep: int = 6) -> pd.DataFrame:
    """Return ``balance`` with at most ``keep`` of its per-block rows (``schedule: N
    block(s)``, the first, the last and evenly spaced ones between): the table has one per
    whole block of the schedule (600 sessions and more), too many to label."""
    is_block = balance["design"].astype(str).str.startswith("schedule:")
    idx = list(balance.index[is_block])
    if len(idx) <= keep:
        return balance
    pick = {idx[round(i * (len(idx) - 1) / (keep - 1))] for i in range(keep)}
    return balance[~is_block | balance.index.isin(pick)]


def balance_figure(balance: pd.DataFrame) -> Figure:
    """Return the schedule balance (``design_balance.csv``) as ranges: for each design row the
    smallest to largest count of each puzzle in each position, and of each ordered pair served
    consecutively (carry-over); the dot is the mean count (equal counts: a dot without a bar)."""
    with style():
        fig, axes = new_figure(1, 2, width_in=DOUBLE_WIDTH_IN, height_in=2.4, sharey=True)
        rows = _thin_blocks(balance).reset_index(drop=True)
        y = list(range(len(rows)))
        k = rows["n_puzzles"]
        means = (
            rows["sessions"] / k,
            rows["sessions"] * (rows["per_session"] - 1) / (k * (k - 1)),
        )
        for ax, (lo, hi, title), mean in zip(
            axes,
            (
                ("position_min", "position_max", "times a puzzle is served in a position"),
                ("carryover_min", "carryover_max", "times an ordered pair is served in a row"),
            ),
            means,
            strict=True,
        ):
            ax.hlines(y, rows[lo], rows[hi], color=PALETTE[0], lw=3)
            ax.plot(rows[lo], y, "|", color="k")
            ax.plot(rows[hi], y, "|", color="k")
            ax.plot(mean, y, "o", color=PALETTE[1], ms=3)
            ax.set_title(title)
            ax.set_xlabel("count (min to max; dot: mean)")
        axes[0].set_yticks(y)
        axes[0].set_yticklabels(rows["design"])
        axes[0].invert_yaxis()
    return fig


def write_design_figures(out_dir: str | Path, target: float | None = None) -> list[Path]:
    """Draw the design figures from ``out_dir/tables`` into ``out_dir/figures`` (PNG and PDF);
    return the PNG paths."""
    out = Path(out_dir)
    curve = read_csv(out / "tables" / "design_power_curve.csv")
    balance = read_csv(out / "tables" / "design_balance.csv")
    paths = []
    for name, fig in (
        ("design_power_curve", power_curve_figure(curve, target)),
        ("design_balance", balance_figure(balance)),
    ):
        png = out / "figures" / f"{name}.png"
        save_figure(fig, png, png.with_suffix(".pdf"))
        paths.append(png)
    return paths
