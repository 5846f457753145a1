"""Snakemake entry point of rule `pauses`: within-puzzle gaps -> Gaussian mixtures ->
threshold.json (nonolab.stats.pauses.pause_threshold) and the gaps table. The data-order check
of the fits is the rule `pause_order` (scripts/pause_order.py), off the critical path."""

import logging

import pandas as pd

from nonolab.core.tables import provenance, write_json
from nonolab.stats.pauses import pause_threshold
from nonolab.study.features import interaction_gaps
from nonolab.study.schemas import write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("pauses")
p = snakemake.params

gaps = interaction_gaps(pd.read_parquet(snakemake.input.events))
log.info("%d within-puzzle gaps (%d zero-length)", len(gaps), int((gaps["gap_s"] == 0).sum()))
rec = pause_threshold(gaps["gap_s"].to_numpy(), **p.fit, log=log.info)
rec["provenance"] = provenance(
    list(snakemake.input),
    params={k: p.fit[k] for k in ("threshold", "components", "n_init", "converged", "max_fit_gaps")}
    | {"em_tol": rec["em_tol"]},
    seeds={"random_state": p.fit["random_state"]},
)
write_json(rec, snakemake.output.threshold)
write_checked_table(
    gaps[["participant_id", "puzzle_id", "order", "gap_s"]],
    snakemake.output.gaps,
    "gaps",
    inputs=list(snakemake.input),
    formats=("csv",),
)
