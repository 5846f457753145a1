"""The report section "Which measures track difficulty" and its figure.

Reads the evaluation tables of a results folder (``tables/measure_leaderboard.csv``,
``tables/measure_tests.csv``, ``measures/served.csv``, ``figures/measure_leaderboard.png``;
written by ``workflow/rules/measures.smk`` with :mod:`nonolab.stats.measure_evaluation`) and
returns the section's HTML: what was evaluated, the multiplicity family, what the number of
puzzles can and cannot show (computed from the study: the smallest attainable p, the distinct
rankings the measures give the puzzles, the measures that cannot be assessed), the leaderboard
table and the figure. :func:`leaderboard_figure` draws the figure.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path

import pandas as pd

ANCHOR = "measures"
TITLE = "Which measures track difficulty"
LEADERBOARD = "tables/measure_leaderboard.csv"
TESTS = "tables/measure_tests.csv"
SERVED = "measures/served.csv"
FIGURE = "figures/measure_leaderboard.png"
#: leaderboard columns shown, with their headings
SHOWN = {
    "label": "measure",
    "kind": "kind",
    "bt_rho": "BT Spearman rho",
    "bt_p": "p (exact)",
    "bt_q": "q",
    "difficulty_slope": "LMM slope, difficulty",
    "difficulty_q": "q ",
    "moderation_coef": "x expertise",
    "moderation_q": "q  ",
    "oos_r2": "out-of-sample R2",
    "oos_gain": "gain over size/density",
    "oos_q": "q   ",
    "notes": "notes",
}


def leaderboard_figure(board: pd.DataFrame, path: str | Path) -> None:
    """Draw the leaderboard figure to ``path`` (PNG): per evaluated measure, its Spearman rho
    with the BT ranking and its leave-one-puzzle-out R2 on the final difficulty, coloured by
    kind, filled when the family q < 0.05. A study with no evaluated measure gets a figure that
    says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nonolab.core.tables import atomic_path

    ok = board[board["status"] == "ok"].iloc[::-1]
    colours = {"structure": "#7f7f7f", "strategy": "#1f77b4", "sat": "#d62728"}
    fig, axes = plt.subplots(
        1, 2, figsize=(10, max(2.5, 0.28 * len(ok) + 1.2)), sharey=True, layout="constrained"
    )
    if ok.empty:
        for ax in axes:
            ax.text(0.5, 0.5, "no measure varies over the puzzles", ha="center", va="center")
            ax.set_axis_off()
    else:
        y = range(len(ok))
        for ax, col, qcol, xlabel in (
            (axes[0], "bt_rho", "bt_q", "Spearman rho with the BT ranking"),
            (axes[1], "oos_r2", "oos_q", "leave-one-puzzle-out R\u00b2 (final difficulty)"),
        ):
            for yi, (_, r) in zip(y, ok.iterrows(), strict=True):
                c = colours.get(r["kind"], "black")
                sig = pd.notna(r[qcol]) and r[qcol] < 0.05
                ax.plot(r[col], yi, "o", color=c, mfc=c if sig else "white", ms=6)
            ax.axvline(0, color="black", lw=0.6)
            ax.set_xlabel(xlabel)
            ax.grid(axis="x", alpha=0.3)
        axes[0].set_yticks(list(y), list(ok["label"]), fontsize=8)
        axes[0].set_xlim(-1.05, 1.05)
        handles = [
            plt.Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in colours.items()
        ]
        fig.legend(
            handles=handles,
            loc="outside upper center",
            ncols=3,
            fontsize=8,
            title="kind of measure (filled: family q < 0.05)",
            title_fontsize=8,
        )
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def _limits_html(n: int, served: pd.DataFrame | None, board: pd.DataFrame, n_tests: int) -> str:
    """What ``n`` puzzles can and cannot show, computed from the study."""
    from nonolab.report.html import text

    out = []
    if n >= 2:
        if n <= 9:
            p_min = 2 / math.factorial(n)
            out.append(
                f"With {n} puzzles the exact permutation p of a puzzle-level Spearman correlation "
                f"cannot fall below {p_min:.3g} (only the two orderings with |rho| = 1 reach it, "
                f"among {math.factorial(n):,}); across a family of {n_tests} tests the "
                "Benjamini-Hochberg q of even a perfect correlation is at least that times "
                f"{n_tests} over its rank."
            )
        out.append(
            f"Out-of-sample prediction leaves out one puzzle at a time: {n} folds, each model "
            f"fitted on {n - 1} puzzle means, so a measure can win only by ordering those puzzles "
            "well; it says nothing about puzzles unlike the ones served."
        )
    ok = board[board["status"] == "ok"]["measure"].tolist()
    if served is not None and ok and n >= 2:
        ranks = served.set_index("puzzle_hash")[ok].rank(method="average")
        groups = len(
            {min(tuple(ranks[c].round(6)), tuple((n + 1 - ranks[c]).round(6))) for c in ok}
        )
        out.append(
            f"The {len(ok)} measures that vary give only {groups} distinct rankings of the "
            f"puzzles (up to reversal); measures with the same ranking get the same Spearman test "
            "and cannot be told apart by it, whatever they measure."
        )
    not_ok = board[board["status"] != "ok"]
    if len(not_ok):
        items = "; ".join(f"{r.label}: {r.status}" for r in not_ok.itertuples())
        out.append(
            f"{len(not_ok)} measures cannot be assessed on these puzzles ({items}). A study that "
            "wants to test them needs puzzles on which they vary."
        )
    return "".join(f"<li>{text(s)}</li>" for s in out)


def measures_section(root: Path) -> tuple[str, str, str] | None:
    """Return ``(anchor, title, html)`` of the section for the results folder ``root``, or
    None when the folder has no measure evaluation."""
    from nonolab.report.html import html_table, text

    path = root / LEADERBOARD
    if not path.is_file():
        return None
    board = pd.read_csv(path, keep_default_na=True)
    tests = pd.read_csv(root / TESTS) if (root / TESTS).is_file() else pd.DataFrame()
    served_path = root / SERVED
    served = pd.read_csv(served_path) if served_path.is_file() else None
    n = int(board["n_puzzles"].max()) if len(board) else 0
    n_tests = int(tests["p"].notna().sum()) if "p" in tests else 0
    n_ok = int((board["status"] == "ok").sum())
    from nonolab.stats.measure_evaluation import FAMILY

    intro = (
        f"<p>Every registered measure (docs/measures.md) of the {n} served puzzles, through the "
        f"same tests: {n_ok} of {len(board)} measures vary over the puzzles and are evaluated. "
        "Spearman rho with the Bradley-Terry ranking (exact permutation p); the crossed "
        "mixed-model slope of the final difficulty rating per SD of the measure (Satterthwaite "
        "t); its interaction with expertise; and leave-one-puzzle-out prediction of the ratings "
        "of an unseen puzzle (out-of-sample R\u00b2 against the intercept-only model, gain in "
        "squared rating units over a size/density baseline, permutation p). Slopes, "
        "out-of-sample results and notes per behaviour are in the tests table.</p>"
        f'<p class="family"><strong>Multiplicity family</strong>: {text(FAMILY)} '
        f"({n_tests} tests with a p); q is the adjusted p.</p>"
    )
    limits = f'<h3>What {n} puzzles can and cannot show</h3><ul class="limits">'
    limits += _limits_html(n, served, board, n_tests) + "</ul>"
    rows = [[_cell(r.get(c)) for c in SHOWN] for r in board.to_dict("records")]
    table = html_table(list(SHOWN.values()), rows, "measure-leaderboard")
    fig = ""
    if (root / FIGURE).is_file():
        data = base64.b64encode((root / FIGURE).read_bytes()).decode("ascii")
        fig = (
            '<figure><img src="data:image/png;base64,'
            f'{data}" alt="{text(TITLE)}: Spearman rho and out-of-sample R2 per measure">'
            '<figcaption class="caption">Per evaluated measure: Spearman rho with the BT ranking '
            "and leave-one-puzzle-out R\u00b2 on the final difficulty; filled markers: family "
            "q &lt; 0.05.</figcaption></figure>"
        )
    body = (
        f'<section id="{ANCHOR}"><h2>{text(TITLE)}</h2>{intro}{limits}'
        f"<h3>Leaderboard</h3>{table}{fig}"
        f'<p class="source">Files: <code>{text(LEADERBOARD)}</code>, <code>{text(TESTS)}</code>'
        "</p></section>"
    )
    return ANCHOR, TITLE, body


def _cell(v: object) -> str:
    """Text of a leaderboard cell: empty for a missing value (undefined, never 0)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)
