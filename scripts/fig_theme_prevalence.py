"""Snakemake script of rule `fig_theme_prevalence`: how often each coded theme and strategy
occurs."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.themes import plot_prevalence
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
themes = read_csv(snakemake.input.themes)
themes = themes[themes["scope"] == "rating_reason"]
fig = plot_prevalence(themes, read_csv(snakemake.input.strategies))
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
