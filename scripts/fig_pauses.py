"""Snakemake entry point of rule `fig_pauses`: gap distribution with mixture and threshold."""

import logging
from pathlib import Path

from nonolab.report.captions import study_facts
from nonolab.report.figures import save_figure
from nonolab.report.figures.pauses import plot_gap_distribution
from nonolab.study.features import read_pause_model
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
gaps = read_table(snakemake.input.gaps, "gaps")
record = read_pause_model(snakemake.input.threshold).record
drags = study_facts(Path(snakemake.input.study).parents[1])["drags"]
save_figure(
    plot_gap_distribution(gaps["gap_s"].to_numpy(), record, drags=drags),
    snakemake.output.png,
    snakemake.output.pdf,
)
logging.info("drew %d gaps", len(gaps))
