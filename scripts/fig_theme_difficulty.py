"""Snakemake script of rule `fig_theme_difficulty`: rated difficulty with and without each
theme (FDR-marked tests)."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.themes import plot_theme_difficulty
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
tests = read_csv(snakemake.input.tests)
fig = plot_theme_difficulty(tests, alpha=snakemake.params.alpha)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
