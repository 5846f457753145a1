"""Snakemake entry point of rule `behaviour_moderation`: outcome ~ metric x expertise with
crossed random intercepts, for final difficulty and each behaviour, both alignments."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats.behaviour_regressions import behaviour_moderation
from nonolab.stats.mixed_models import across_alignments, study_covariates, with_expertise
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_moderation")
inp, cov, outcomes = snakemake.input, snakemake.params.covariates, snakemake.params.outcomes

attempts = with_expertise(read_table(inp.attempts, "features"))
metrics = read_table(inp.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **cov, log=log.info)
fit = partial(behaviour_moderation, attempts, outcomes=outcomes, metrics=cov["metrics"])
table = across_alignments(covs, fit)
log.info("%s", table.drop(columns="warnings").to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={**cov, "outcomes": list(outcomes)},
    formats=("csv", "md", "tex"),
    caption="Outcome ~ metric (raw count) x expertise (composite, SD units) with crossed random "
    "intercepts for participant and puzzle (REML), one model per outcome x metric; Wald p and "
    "Satterthwaite p_satt; simple slopes of the metric at expertise -1/0/+1 SD; "
    "p_interaction_fdr: BH over the interaction tests of one alignment. Only "
    f"{attempts['puzzle_hash'].nunique()} puzzles carry the metric.",
)
