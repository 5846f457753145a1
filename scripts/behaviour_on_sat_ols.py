"""Snakemake entry point of rule `behaviour_on_sat_ols`: SAT metric (raw count) ~ behaviour, OLS
at attempt level, under the corrected and, when available, the published alignment."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats.behaviour_regressions import behaviour_on_sat
from nonolab.stats.mixed_models import across_alignments, study_covariates
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_on_sat_ols")
inp, cov = snakemake.input, snakemake.params.covariates

attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **cov, log=log.info)
table = across_alignments(covs, partial(behaviour_on_sat, attempts, metrics=cov["metrics"]))
log.info("%s", table.to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params=cov,
    formats=("csv", "md", "tex"),
    caption=f"SAT metric ({cov['solver']}, {cov['encoding']}; raw count) ~ pauses + pause rate "
    "per minute + time to solve (s) + errors + hints, OLS over the attempts. Every attempt of a "
    f"puzzle carries its metric: only {attempts['puzzle_hash'].nunique()} distinct values, so "
    "these p-values (as published) treat repeated puzzle values as independent. p_fdr: BH over "
    "one model's behaviours. alignment: corrected = joined by puzzle hash; published = the "
    "original row-position join.",
)
