"""Snakemake script of rule `fig_threshold_sensitivity`: pause results across pause thresholds,
with the threshold used marked."""

import logging

from nonolab.report.figures import save_figure
from nonolab.report.figures.models import plot_threshold_sensitivity
from nonolab.study.features import read_pause_model
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
reference_s = read_pause_model(snakemake.input.threshold).threshold_used_s
fig = plot_threshold_sensitivity(read_csv(snakemake.input.table), reference_s=reference_s)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s (threshold used %.4g s)", snakemake.output.png, reference_s)
