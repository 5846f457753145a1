"""Snakemake entry point of rule `behaviour_models`: behaviour ~ SAT metric crossed-random-effects
LMMs (METHODS 9) under the corrected and, when available, the published alignment."""

from functools import partial

from nonolab.core.threads import limit_blas_threads

limit_blas_threads(snakemake.threads)

import logging  # noqa: E402

import pandas as pd  # noqa: E402

from nonolab.report.provenance import write_table  # noqa: E402
from nonolab.stats.mixed_models import (  # noqa: E402
    BEHAVIOURS,
    across_alignments,
    behaviour_models,
    study_covariates,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_models")
p, cov = snakemake.params, snakemake.params.covariates

attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
metrics = pd.read_csv(snakemake.input.metrics, dtype={"puzzle_id": str})
covs = study_covariates(
    attempts, metrics, snakemake.input.get("pool_statistics"), **cov, log=log.info
)
behaviours = {c: BEHAVIOURS.get(c, c) for c in p.behaviours}
fit = partial(
    behaviour_models, attempts, behaviours=behaviours, metrics=cov["metrics"], n_boot=p.n_boot,
    seed=p.seed, satterthwaite=p.satterthwaite, log=log.info,
)  # fmt: skip
table = across_alignments(covs, fit)
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={
        **cov,
        "behaviours": list(p.behaviours),
        "n_boot": p.n_boot,
        "satterthwaite": p.satterthwaite,
    },
    seeds={"bootstrap": p.seed},
    formats=("csv", "md", "tex"),
    caption=f"Behaviour ~ SAT metric ({cov['solver']}, {cov['encoding']}; {cov['metric_transform']}) "
    "with crossed random intercepts for participant and puzzle (REML). p: Wald; p_fdr: BH over the "
    f"{len(behaviours) * len(cov['metrics'])} tests of an alignment; p_satt: Satterthwaite t; p_boot: "
    f"parametric bootstrap ({p.n_boot} draws). Only {attempts['puzzle_hash'].nunique()} puzzles.",
)
log.info("wrote %s (%d rows)", snakemake.output.table, len(table))
