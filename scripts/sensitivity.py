"""Snakemake entry point of rule `threshold_sensitivity`: pause counts recomputed from the
within-puzzle gaps at each threshold; pause summaries, Spearman correlations and pauses ~ metric
LMMs (nonolab.stats.sensitivity)."""

import json
import logging

import pandas as pd

from nonolab.report.provenance import write_table
from nonolab.stats.expertise import expertise_composite, participant_items
from nonolab.stats.mixed_models import study_covariates
from nonolab.stats.sensitivity import sensitivity_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("threshold_sensitivity")
p, inp, cov = snakemake.params, snakemake.input, snakemake.params.covariates

attempts = pd.read_csv(inp.attempts, dtype={"puzzle_id": str})
with open(inp.threshold, encoding="utf-8") as fh:
    record = json.load(fh)
table, thresholds = sensitivity_table(
    attempts,
    pd.read_csv(inp.gaps, dtype={"puzzle_id": str}),
    record,
    p.thresholds,
    study_covariates(
        attempts,
        pd.read_csv(inp.metrics, dtype={"puzzle_id": str}),
        inp.get("pool_statistics"),
        **cov,
    ),
    expertise=expertise_composite(participant_items(attempts)),
    strengths=pd.read_csv(inp.strengths, dtype={"puzzle_id": str}),
    rating_col=p.rating,
    metrics=cov["metrics"],
    log=log.info,
)
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={"thresholds_s": thresholds, "rating": p.rating, **cov},
    formats=("csv", "md", "tex"),
    caption="Pause-threshold sensitivity: pause counts recomputed from the within-puzzle gaps "
    "at each threshold (s); pause summaries over attempts, Spearman rho of pause counts with the "
    "rating, expertise and BT strength, and pauses ~ metric crossed LMMs.",
)
