"""Snakemake entry point of rule `expertise`: composite, reliability, Spearman with outcomes."""

import logging

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.stats.expertise import (
    expertise_composite,
    expertise_correlations,
    participant_items,
    reliability,
)
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("expertise")

attempts = read_table(snakemake.input.attempts, "features")
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
rel = reliability(items, comp)
log.info(
    "alpha %(alpha).3f, PC1 share %(pc1_share).3f, r(PC1, composite) %(pc1_composite_r).3f", rel
)
rel["provenance"] = provenance(list(snakemake.input))
write_json(rel, snakemake.output.reliability)
