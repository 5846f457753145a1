"""Snakemake entry point of rule `fig_pauses`: gap distribution with mixture and threshold."""

import json
import logging

import pandas as pd

from nonolab.report.figures import save_figure
from nonolab.report.figures.pauses import plot_gap_distribution

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
gaps = pd.read_csv(snakemake.input.gaps)
with open(snakemake.input.threshold, encoding="utf-8") as fh:
    record = json.load(fh)
save_figure(
    plot_gap_distribution(gaps["gap_s"].to_numpy(), record),
    snakemake.output.png,
    snakemake.output.pdf,
)
logging.info("drew %d gaps", len(gaps))
