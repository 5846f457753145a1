"""Snakemake script of rule `fig_simple_slopes`: metric slopes at low, mean and high expertise."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.models import plot_simple_slopes
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
fig = plot_simple_slopes(read_csv(snakemake.input.slopes))
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
