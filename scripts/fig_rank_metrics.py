"""Snakemake script of rule `fig_rank_metrics`: Bradley-Terry rank against each solver metric."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.ranking import plot_rank_vs_metrics
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
p = snakemake.params
points = read_csv(snakemake.input.points, dtype={"puzzle_id": str, "source_hash": str})
table = read_csv(snakemake.input.table)
main = {"solver": p.main_solver, "encoding": p.main_encoding}
pick = lambda d: d[(d["solver"] == main["solver"]) & (d["encoding"] == main["encoding"])]  # noqa: E731
save_figure(
    plot_rank_vs_metrics(pick(points), pick(table)), snakemake.output.png, snakemake.output.pdf
)
logging.info("wrote %s (%s)", snakemake.output.png, main)
