"""Snakemake entry point of rule `fig_pauses`: gap distribution with mixture and threshold."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.pauses import plot_gap_distribution
from nonolab.study.features import read_pause_model
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
gaps = read_table(snakemake.input.gaps, "gaps")
record = read_pause_model(snakemake.input.threshold).record
save_figure(
    plot_gap_distribution(gaps["gap_s"].to_numpy(), record),
    snakemake.output.png,
    snakemake.output.pdf,
)
logging.info("drew %d gaps", len(gaps))
