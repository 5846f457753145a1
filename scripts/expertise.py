"""Snakemake entry point of rule `expertise`: composite, reliability, Spearman with outcomes."""

import logging

import pandas as pd

from nonolab.report.provenance import provenance, write_json, write_table
from nonolab.stats.expertise import (
    cronbach_alpha,
    expertise_composite,
    expertise_correlations,
    first_component,
    participant_items,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("expertise")

attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
items = participant_items(attempts)
comp = expertise_composite(items)
table = expertise_correlations(attempts, comp)
log.info("%d participants\n%s", len(items), table.to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    formats=("csv", "md", "tex"),
    caption="Spearman correlation of the expertise composite with participant-level means.",
)
pc1 = first_component(items, comp)
rel = {
    "alpha": cronbach_alpha(items),
    "alpha_definition": "Cronbach's alpha of the z-scored items (complete participants)",
    "pc1_share": pc1["pc1_share"],
    "pc1_composite_r": pc1["pc1_composite_r"],
    "n_participants": int(len(items)),
    "n_complete": pc1["n"],
    "items": list(items.columns),
    "provenance": provenance(list(snakemake.input)),
}
log.info(
    "alpha %.3f, PC1 share %.3f, r(PC1, composite) %.3f",
    rel["alpha"],
    rel["pc1_share"],
    rel["pc1_composite_r"],
)
write_json(rel, snakemake.output.reliability)
