"""Snakemake script of rule `fig_ratings`: initial against final difficulty ratings."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.ratings import plot_ratings
from nonolab.study.schemas import read_table
from nonolab.study.summaries import rating_counts, rating_means

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
attempts = read_table(snakemake.input.attempts, "features")
fig = plot_ratings(rating_counts(attempts), rating_means(attempts))
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
