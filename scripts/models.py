"""Snakemake entry point of rule `behaviour_models`: behaviour ~ SAT metric crossed-random-effects
LMMs (METHODS 9) under the corrected and, when available, the published alignment."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats.mixed_models import (
    across_alignments,
    behaviour_models,
    study_covariates,
)
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_models")
inp, cov, kw = snakemake.input, snakemake.params.covariates, snakemake.params.models

attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **cov, log=log.info)
fit = partial(behaviour_models, attempts, **kw, metrics=cov["metrics"], log=log.info)
table = across_alignments(covs, fit)
n_tests = len(kw["behaviours"]) * len(cov["metrics"])
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={**cov, **kw},
    seeds={"bootstrap": kw["seed"]},
    formats=("csv", "md", "tex"),
    caption=f"Behaviour ~ SAT metric ({cov['solver']}, {cov['encoding']}; "
    f"{cov['metric_transform']}) with crossed random intercepts for participant and puzzle "
    f"(REML). p: Wald; p_fdr: BH over the {n_tests} tests of an alignment; p_satt: Satterthwaite "
    f"t; p_boot: parametric bootstrap ({kw['n_boot']} draws). Only "
    f"{attempts['puzzle_hash'].nunique()} puzzles.",
)
log.info("wrote %s (%d rows)", snakemake.output.table, len(table))
