"""Snakemake entry point of rule `threshold_sensitivity`: pause counts recomputed from the
within-puzzle gaps at each threshold; pause summaries, Spearman correlations and pauses ~ metric
LMMs (nonolab.stats.sensitivity)."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.expertise import expertise_composite, participant_items
from nonolab.stats.mixed_models import study_covariates
from nonolab.stats.sensitivity import sensitivity_table
from nonolab.study.features import read_pause_model
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("threshold_sensitivity")
p, inp, cov = snakemake.params, snakemake.input, snakemake.params.covariates

attempts = read_table(inp.attempts, "features")
record = read_pause_model(inp.threshold).record
table, thresholds = sensitivity_table(
    attempts,
    read_table(inp.gaps, "gaps"),
    record,
    p.thresholds,
    study_covariates(
        attempts,
        read_table(inp.metrics, "sat_metrics"),
        inp.get("pool_statistics"),
        **cov,
    ),
    expertise=expertise_composite(participant_items(attempts)),
    strengths=read_table(inp.strengths, "bt_strengths"),
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
