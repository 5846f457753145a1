"""Snakemake script: draw the power figure from results/tables/power.csv."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.power import power_figure
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_figure")

table = read_csv(snakemake.input[0])
alpha = float(table["alpha"].iloc[0]) if len(table) else None
fig = power_figure(table, alpha=alpha)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
log.info("wrote %s and %s (%d rows)", snakemake.output.png, snakemake.output.pdf, len(table))
