"""Snakemake entry point of rule `moderation_ordinal`: final difficulty ~ metric x expertise as
a logit cumulative-link mixed model (crossed random intercepts, Laplace), both alignments."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats.clmm import moderation_ordinal
from nonolab.stats.mixed_models import across_alignments, study_covariates, with_expertise
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("moderation_ordinal")
inp, p, cov = snakemake.input, snakemake.params, snakemake.params.covariates

attempts = with_expertise(read_table(inp.attempts, "features"))
metrics = read_table(inp.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **cov, log=log.info)
fit = partial(moderation_ordinal, attempts, outcome=p.outcome, metrics=cov["metrics"])
table = across_alignments(covs, fit)
log.info("%s", table.to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={**cov, "outcome": p.outcome},
    formats=("csv", "md", "tex"),
    caption=f"Ordinal sensitivity analysis: {p.outcome} ~ metric x expertise as a logit "
    "cumulative-link mixed model (flexible thresholds, crossed random intercepts for "
    f"participant and puzzle, Laplace; metric {cov['metric_transform']}). Interaction in "
    "log-odds; Wald p, p_fdr (BH over the metrics of an alignment), likelihood-ratio test "
    "against the model without the interaction; thresholds; random-intercept SDs (logit).",
)
