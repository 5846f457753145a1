"""Figures of the models stage draw what the tables say (no computation in the plot code)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nonolab.report.figures import save_figure
from nonolab.report.figures.models import plot_simple_slopes, plot_threshold_sensitivity


def slopes_table() -> pd.DataFrame:
    rows = []
    for a_i, a in enumerate(["corrected", "published"]):
        for m_i, m in enumerate(["decisions", "propagations", "conflicts"]):
            for w in (-1.0, 0.0, 1.0):
                s = 0.1 * m_i - 0.2 * w + 0.05 * a_i
                rows.append((a, m, w, s, s - 0.3, s + 0.3))
    cols = ["alignment", "metric", "moderator_value", "slope", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=cols)


def sensitivity_table() -> pd.DataFrame:
    rows = []
    for a in ("corrected", "published"):
        for t in (1.5, 2.36, 4.0):
            for m_i, m in enumerate(["decisions", "conflicts"]):
                c = 10 / t + m_i
                rows.append((a, t, 100 / t, m, c, c - 4, c + 4))
    cols = ["alignment", "threshold_s", "mean_pauses", "metric", "coef", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=cols)


def test_simple_slopes_figure_plots_the_table(tmp_path):
    t = slopes_table()
    fig = plot_simple_slopes(t)
    axes = fig.get_axes()
    assert [ax.get_title(loc="left") for ax in axes] == ["decisions", "propagations", "conflicts"]
    # Each panel: one line per alignment through the slopes (x jittered around -1, 0, 1).
    for ax, m in zip(axes, ["decisions", "propagations", "conflicts"], strict=True):
        lines = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
        got = sorted(tuple(np.round(np.asarray(ln.get_ydata(), dtype=float), 12)) for ln in lines)
        want = sorted(
            tuple(np.round(g.sort_values("moderator_value")["slope"].to_numpy(), 12))
            for _, g in t[t["metric"] == m].groupby("alignment")
        )
        assert got == want
    save_figure(fig, tmp_path / "s.png", tmp_path / "s.pdf")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_threshold_figure_plots_the_table(tmp_path):
    t = sensitivity_table()
    fig = plot_threshold_sensitivity(t, reference_s=2.36)
    axes = fig.get_axes()
    assert len(axes) == 3  # mean pauses + one panel per alignment
    mean_line = axes[0].get_lines()[0]
    np.testing.assert_allclose(mean_line.get_xdata(), [1.5, 2.36, 4.0])
    np.testing.assert_allclose(mean_line.get_ydata(), 100 / np.array([1.5, 2.36, 4.0]))
    for ax, a in zip(axes[1:], ["corrected", "published"], strict=True):
        assert a in ax.get_title(loc="left")
        ys = sorted(
            tuple(np.round(np.asarray(ln.get_ydata(), dtype=float), 12))
            for ln in ax.get_lines()
            if ln.get_marker() == "o"
        )
        want = sorted(
            tuple(np.round(g.sort_values("threshold_s")["coef"].to_numpy(), 12))
            for _, g in t[t["alignment"] == a].groupby("metric")
        )
        assert ys == want
    save_figure(fig, tmp_path / "t.png")


def test_figures_are_byte_identical(tmp_path):
    for k in range(2):
        save_figure(
            plot_simple_slopes(slopes_table()), tmp_path / f"{k}.png", tmp_path / f"{k}.pdf"
        )
    assert (tmp_path / "0.png").read_bytes() == (tmp_path / "1.png").read_bytes()
    assert (tmp_path / "0.pdf").read_bytes() == (tmp_path / "1.pdf").read_bytes()
