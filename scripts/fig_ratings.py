"""Snakemake entry point of rules `fig_ratings` (initial vs final ratings) and
`fig_trajectories` (cells correct over time, replayed from the ingest events)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.report.figures import save_figure
from nonolab.report.figures.ratings import plot_ratings, plot_trajectories
from nonolab.study.summaries import rating_counts, rating_means, solve_trajectories

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
p = snakemake.params
if snakemake.rule == "fig_ratings":
    attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
    fig = plot_ratings(rating_counts(attempts), rating_means(attempts))
else:
    events = pd.read_parquet(snakemake.input.events)
    puzzles = pd.read_parquet(snakemake.input.puzzles)
    traj = solve_trajectories(events, puzzles, step_s=p.step_s)
    write_table(
        traj, snakemake.output.table, inputs=list(snakemake.input), params={"step_s": p.step_s}
    )
    fig = plot_trajectories(traj, max_minutes=p.max_minutes)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
