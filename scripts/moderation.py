"""Snakemake entry point of rule `moderation`: final difficulty ~ metric x expertise with crossed
random intercepts, simple slopes at expertise -1/0/+1 SD (METHODS 9), both alignments."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats.mixed_models import (
    across_alignments,
    moderation_models,
    study_covariates,
    with_expertise,
)
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("moderation")
p, cov, out = snakemake.params, snakemake.params.covariates, snakemake.output

attempts = with_expertise(read_table(snakemake.input.attempts, "features"))
metrics = read_table(snakemake.input.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, snakemake.input.get("pool_statistics"), **cov)
fit = partial(moderation_models, attempts, outcome=p.outcome, metrics=cov["metrics"], at=p.at_sd)
mod, slopes = across_alignments(covs, fit)
log.info("%s\n%s", mod.to_string(), slopes.to_string())
kw = {"inputs": list(snakemake.input), "formats": ("csv", "md", "tex")}
kw["params"] = {**cov, "outcome": p.outcome, "at_sd": list(p.at_sd)}
write_table(
    mod,
    out.table,
    **kw,
    caption=f"{p.outcome} ~ metric x expertise (composite, SD units) with crossed random "
    "intercepts (REML); variance components as rows var_*. Wald p; df_satt: Satterthwaite df.",
)
write_table(
    slopes,
    out.slopes,
    **kw,
    caption=f"Simple slopes of each metric on {p.outcome} at expertise "
    f"{', '.join(f'{v:+g}' for v in p.at_sd)} SD (Wald 95% CI).",
)
