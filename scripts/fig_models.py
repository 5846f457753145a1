"""Snakemake entry point of rules `fig_simple_slopes` and `fig_threshold_sensitivity`."""

import json
import logging

import pandas as pd

from nonolab.report.figures import save_figure
from nonolab.report.figures.models import plot_simple_slopes, plot_threshold_sensitivity

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
if snakemake.rule == "fig_simple_slopes":
    fig = plot_simple_slopes(pd.read_csv(snakemake.input.slopes))
else:
    with open(snakemake.input.threshold, encoding="utf-8") as fh:
        reference = json.load(fh).get("threshold_used_s")
    fig = plot_threshold_sensitivity(pd.read_csv(snakemake.input.table), reference_s=reference)
save_figure(fig, snakemake.output.png, snakemake.output.pdf)
logging.info("wrote %s", snakemake.output.png)
