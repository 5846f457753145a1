"""Tests of the figure layer: deterministic PNG/PDF output, column width, every plot function
on small tables, and the board replay behind the solve trajectories."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nonolab.report.figures import COLUMN_WIDTH_IN, new_figure, save_figure, style
from nonolab.report.figures.pauses import plot_gap_distribution
from nonolab.report.figures.ranking import plot_rank_vs_metrics, plot_strengths
from nonolab.report.figures.ratings import plot_ratings, plot_trajectories
from nonolab.report.figures.themes import plot_prevalence, plot_theme_difficulty
from nonolab.study.summaries import rating_counts, rating_means, solve_trajectories


def test_save_is_byte_identical(tmp_path):
    def draw():
        with style():
            fig, ax = new_figure()
            ax.plot([0, 1, 2], [1, 3, 2], label="x")
            ax.legend()
        return fig

    fig = draw()
    assert fig.get_size_inches()[0] == pytest.approx(COLUMN_WIDTH_IN)
    save_figure(fig, tmp_path / "a.png", tmp_path / "a.pdf")
    save_figure(draw(), tmp_path / "b.png", tmp_path / "b.pdf")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert b"CreationDate" not in (tmp_path / "a.pdf").read_bytes()


def _record():
    return {
        "n_gaps": 3,
        "means_log": [-4.4, -0.23, 1.79],
        "sds_log": [1.08, 0.64, 0.94],
        "weights": [0.024, 0.621, 0.355],
        "threshold_s": 2.356,
        "threshold_used_s": 2.36,
    }


def test_every_plot_function_draws(tmp_path):
    rng = np.random.default_rng(0)
    ratings = pd.DataFrame(
        {
            "puzzle_id": ["0", "0", "1", "1"],
            "initial_difficulty": [1, 2, 5, 4],
            "final_difficulty": [2, np.nan, 5, 5],
        }
    )
    figs = {
        "gaps": plot_gap_distribution(rng.lognormal(0, 1.5, 500), _record()),
        "strengths": plot_strengths(
            pd.DataFrame(
                {
                    "puzzle_id": ["0", "1", "2"],
                    "puzzle_hash": ["abcdef12", "", "99"],
                    "strength": [0.5, 1.0, 2.0],
                    "ci_low": [0.3, 0.7, 1.5],
                    "ci_high": [0.8, 1.4, 3.0],
                }
            )
        ),
        "rank": plot_rank_vs_metrics(
            pd.DataFrame(
                {
                    "puzzle_id": ["0", "1", "2"] * 2,
                    "alignment": ["published"] * 3 + ["corrected"] * 3,
                    "strength": [0.5, 1.0, 2.0] * 2,
                    "decisions": [1, 3, 2, 1, 2, 3],
                    "propagations": [5, 6, 7, 7, 6, 5],
                    "conflicts": [0, 0, 1, 1, 0, 0],
                }
            ),
            pd.DataFrame(
                {
                    "alignment": ["published", "corrected"],
                    "metric": ["decisions", "decisions"],
                    "bt_rho": [0.5, 1.0],
                    "bt_p": [1.0, 0.33],
                }
            ),
        ),
        "prev": plot_prevalence(
            pd.DataFrame({"code": ["A", "B"], "share": [0.5, 0.1], "n_responses": [10, 10]}),
            pd.DataFrame({"code": ["S_A"], "share": [0.3], "n_responses": [7]}),
        ),
        "themes": plot_theme_difficulty(
            pd.DataFrame(
                {
                    "code": ["A", "B", "C"],
                    "n_present": [3, 4, 0],
                    "rank_biserial": [0.4, -0.2, np.nan],
                    "p_fdr": [0.01, 0.5, np.nan],
                }
            )
        ),
        "ratings": plot_ratings(rating_counts(ratings), rating_means(ratings)),
    }
    for name, fig in figs.items():
        save_figure(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.pdf").read_bytes()[:4] == b"%PDF"


def test_trajectories_draw(tmp_path):
    puzzles = pd.DataFrame({"puzzle_id": ["7"], "solution_json": [json.dumps([[1, 0], [0, 1]])]})
    ev = pd.DataFrame(
        [(1, 0.0, "move", 0, 0, 1), (2, 30.0, "move", 1, 1, 1)],
        columns=["line_no", "t_s", "type", "r", "c", "value"],
    ).assign(participant_id="p", order=1, phase="puzzle", puzzle_id="7", seq=[0, 1])
    save_figure(plot_trajectories(solve_trajectories(ev, puzzles)), tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 1000
