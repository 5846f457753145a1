"""Snakemake entry point of rules `fig_strengths` and `fig_rank_metrics`."""

import logging

import pandas as pd

from nonolab.report.figures import save_figure
from nonolab.report.figures.ranking import plot_rank_vs_metrics, plot_strengths

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
p = snakemake.params
if snakemake.rule == "fig_strengths":
    strengths = pd.read_csv(snakemake.input.strengths, dtype={"puzzle_id": str})
    fig = plot_strengths(strengths)
else:
    points = pd.read_csv(snakemake.input.points, dtype={"puzzle_id": str})
    t1 = pd.read_csv(snakemake.input.table)
    sel = lambda d: d[(d["solver"] == p.main_solver) & (d["encoding"] == p.main_encoding)]  # noqa: E731
    fig = plot_rank_vs_metrics(sel(points), sel(t1))
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
