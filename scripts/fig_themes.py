"""Snakemake entry point of rules `fig_theme_prevalence` and `fig_theme_difficulty`."""

import logging

import pandas as pd

from nonolab.report.figures import save_figure
from nonolab.report.figures.themes import plot_prevalence, plot_theme_difficulty

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
if snakemake.rule == "fig_theme_prevalence":
    themes = pd.read_csv(snakemake.input.themes)
    themes = themes[themes["scope"] == "rating_reason"]
    fig = plot_prevalence(themes, pd.read_csv(snakemake.input.strategies))
else:
    fig = plot_theme_difficulty(pd.read_csv(snakemake.input.tests), alpha=snakemake.params.alpha)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
