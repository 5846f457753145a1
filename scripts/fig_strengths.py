"""Snakemake script of rule `fig_strengths`: Bradley-Terry strengths with their intervals."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.ranking import plot_strengths
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
strengths = read_table(snakemake.input.strengths, "bt_strengths")
save_figure(plot_strengths(strengths), snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
