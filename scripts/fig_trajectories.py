"""Snakemake script of rule `fig_trajectories`: cells correct over time per puzzle."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.ratings import plot_trajectories
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
traj = read_csv(snakemake.input.table, dtype={"puzzle_id": str})
fig = plot_trajectories(traj, max_minutes=snakemake.params.max_minutes)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
